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

/// Every folder relay makes in a home is in the example, or its README
/// says why not (git keeps no empty folder), with the modes it has.
#[test]
fn the_example_home_documents_every_folder_relay_makes() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join(".relay-agent.example");
    let readme = std::fs::read_to_string(example.join("README.md")).unwrap();
    let mut missing = Vec::new();
    for folder in Home::at(&example).folders() {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let explained = readme.contains(&format!("## Not in this example: `{name}/`"));
        if !(folder.is_dir() || explained) || !readme.contains(&format!("`{name}/`")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), ".relay-agent.example/README.md does not show or explain: {missing:?}");
    let modes = block_between(&readme, "Permissions (git does not keep them)", "0700");
    for folder in Home::at(&example).folders() {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        assert!(modes.contains(&format!("`{name}/`")), "the README's permissions line lacks {name}/: {modes}");
    }
}

fn block_between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let at = text.find(start).expect("the start marker");
    let to = text[at..].find(end).expect("the end marker") + at;
    &text[at..to]
}
