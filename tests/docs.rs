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
    // The capture was taken in UTC; times show their zone.
    let run = relay.command(&["demo"]).env("TZ", "UTC").output().unwrap();
    assert!(run.status.success(), "relay demo failed: {}", String::from_utf8_lossy(&run.stderr));
    let printed = String::from_utf8(run.stdout).unwrap();
    assert_eq!(
        masked(captured),
        masked(&printed),
        "README.md's demo capture is not what `relay demo` prints now: paste a fresh run of \
         `cargo run -- demo` into README.md (under \"Captured from this build:\")"
    );
}

/// Every setting of config.json's `agent` and `webhooks` sections has a row
/// in README's configuration table, with the default this build uses.
#[test]
fn the_readme_config_table_has_every_setting_and_its_default() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let config = serde_json::to_value(relay::config::Config::new(relay::config::ChannelKind::Sandbox)).unwrap();
    let mut missing = Vec::new();
    for section in ["agent", "webhooks"] {
        for (key, default) in config[section].as_object().unwrap() {
            let row = format!("| `{section}.{key}` | {default} |");
            if !readme.contains(&row) {
                missing.push(row);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "README.md's configuration table lacks these rows (or their defaults changed):\n{}",
        missing.join("\n")
    );
}

/// The limits README states are the ones the daemon enforces.
#[test]
fn the_readme_limits_are_the_daemons() {
    use relay::engine::limits::*;
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let thousands = |n: usize| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let stated = format!(
        "Limits: objective up to {} characters; 1 to {MAX_TODOS} todos of up to {}\ncharacters; messages up to {} characters; heartbeat interval from {} to\n{}; `--max-followups` from 0 to {MAX_FOLLOWUPS}.",
        thousands(MAX_OBJECTIVE_CHARS),
        thousands(MAX_TODO_CHARS),
        thousands(MAX_MESSAGE_CHARS),
        relay::duration::format(MIN_HEARTBEAT),
        relay::duration::format(MAX_HEARTBEAT),
    );
    assert!(readme.contains(&stated), "README.md should say:\n{stated}");
}
