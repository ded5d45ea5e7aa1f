//! `.relay-agent.example/` documents every file relay keeps: it must stay
//! readable by relay itself, so the documentation cannot drift from the code.

use std::path::Path;

use relay::config::Config;
use relay::home::Home;
use relay::store::Store;

#[test]
fn the_example_home_is_read_by_relay_as_it_is() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join(".relay-agent.example");
    let home = Home::at(&example);
    let config = Config::load(&home).expect("example config.json");
    assert_eq!(config.channel.as_str(), "sandbox");
    assert!(config.model.is_some_and(|m| m.api_key.is_none()), "the example must not hold a key");

    // Load through a copy: opening a store creates folders.
    let copy = tempfile::tempdir().unwrap();
    for dir in ["instances", "transcripts"] {
        std::fs::create_dir_all(copy.path().join(dir)).unwrap();
        for entry in std::fs::read_dir(example.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, copy.path().join(dir).join(path.file_name().unwrap())).unwrap();
        }
    }
    let store = Store::open(&Home::at(copy.path())).unwrap();
    let instances = store.load_instances().expect("example instances parse");
    assert!(!instances.is_empty());
    for instance in &instances {
        store.read_transcript(instance.id).expect("example transcripts parse");
    }
    let outbox: Vec<relay::api::OutboxEntry> =
        relay::store::read_jsonl(&example.join("sandbox-outbox.jsonl")).expect("example outbox parses");
    assert!(!outbox.is_empty());
}
