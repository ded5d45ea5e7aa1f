//! The docs show what this build prints. Captured output in README.md is
//! compared with a fresh run of the real binary, with what changes from run
//! to run (times, ids, ports, paths) masked, so a change to a view that
//! leaves the README behind fails here.

#[path = "common/mod.rs"]
mod common;

use common::*;

/// `text` with what differs between two runs masked: UUIDs become `<id>`,
/// every run of digits `#`, the demo's home `<home>`; trailing spaces go.
fn masked(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut line = line.to_string();
        if let Some(at) = line.find("/tmp/relay-demo-") {
            let end = line[at..].find(' ').map_or(line.len(), |n| at + n);
            line.replace_range(at..end, "<home>");
        }
        let chars: Vec<char> = line.chars().collect();
        let mut masked = String::new();
        let mut i = 0;
        while i < chars.len() {
            let candidate: String = chars[i..chars.len().min(i + 36)].iter().collect();
            if uuid::Uuid::try_parse(&candidate).is_ok() && candidate.len() == 36 {
                masked.push_str("<id>");
                i += 36;
            } else if chars[i].is_ascii_digit() {
                masked.push('#');
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            } else {
                masked.push(chars[i]);
                i += 1;
            }
        }
        out.push_str(masked.trim_end());
        out.push('\n');
    }
    out
}

/// The fenced block that follows `marker` in `doc`.
fn block_after<'a>(doc: &'a str, marker: &str) -> &'a str {
    let at = doc.find(marker).unwrap_or_else(|| panic!("the doc has no {marker:?}"));
    let start = doc[at..].find("```text\n").map(|n| at + n + "```text\n".len()).expect("a ```text block");
    let end = doc[start..].find("```").map(|n| start + n).expect("the block ends");
    &doc[start..end]
}

#[test]
fn the_readme_demo_is_what_relay_demo_prints() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let captured = block_after(&readme, "Captured from this build:");
    let relay = Relay::uninitialised();
    let printed = relay.ok(&["demo"]);
    assert_eq!(
        masked(captured),
        masked(&printed),
        "README.md's demo capture is not what `relay demo` prints now: paste a fresh run of \
         `cargo run -- demo` into README.md (under \"Captured from this build:\")"
    );
}
