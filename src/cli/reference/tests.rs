//! Every command has an example, and every example is a command line
//! relay's own parser takes, for the command it is listed under.

use super::pages;
use super::{command, commands};

/// `line` split as a POSIX shell splits words: spaces, and '...' or "..."
/// quoting (with `\` escapes inside double quotes).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' => words.extend(word.take()),
            '\'' => {
                let quoted: String = chars.by_ref().take_while(|&c| c != '\'').collect();
                word.get_or_insert_default().push_str(&quoted);
            }
            '"' => {
                let current = word.get_or_insert_default();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => current.extend(chars.next()),
                        c => current.push(c),
                    }
                }
            }
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    words
}

#[test]
fn words_are_split_as_a_shell_splits_them() {
    assert_eq!(words(r#"relay a "b c" 'd "e"' "f\"g""#), ["relay", "a", "b c", "d \"e\"", "f\"g"]);
    assert_eq!(words(r#"--x="a b""#), ["--x=a b"]);
}

#[test]
fn every_command_has_an_example_and_a_page_names_a_real_command() {
    let root = command(); // panics if a page names no command
    let documented: Vec<&str> = pages::all().filter(|page| !page.examples.is_empty()).map(|page| page.path).collect();
    let missing: Vec<String> = commands(&root, "relay")
        .into_iter()
        .filter(|(_, sub)| sub.get_subcommands().all(|s| s.get_name() == "help"))
        .map(|(name, _)| name["relay ".len()..].to_string())
        .filter(|name| !documented.contains(&name.as_str()))
        .collect();
    assert!(missing.is_empty(), "src/cli/reference/pages.rs has no example for: {missing:?}");
    let mut paths: Vec<&str> = pages::all().map(|page| page.path).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths.len(), pages::all().count(), "a command has two pages");
}

#[test]
fn every_example_is_a_command_line_relay_takes() {
    for page in pages::all() {
        for (what, line) in page.examples {
            let words = words(line);
            assert_eq!(words[0], "relay", "{line}");
            if let Err(error) = crate::cli::parse_from(&words) {
                panic!("the example {what:?} of `relay {}` does not parse: {line}\n{error}", page.path);
            }
            let matches = command().try_get_matches_from(&words).unwrap();
            let mut path = Vec::new();
            let mut at = &matches;
            while let Some((name, sub)) = at.subcommand() {
                path.push(name);
                at = sub;
            }
            assert_eq!(
                path.join(" "),
                page.path,
                "an example under `relay {}` runs another command: {line}",
                page.path
            );
        }
    }
}

#[test]
fn help_shows_the_details_and_the_examples() {
    let mut root = command();
    let help = root.find_subcommand_mut("create").unwrap().render_long_help().to_string();
    assert!(help.contains("--idempotency-key") && help.contains("Keys are kept 24 hours"), "{help}");
    assert!(help.contains("Examples:\n  # Delegate a conversation"), "{help}");
    let short = root.find_subcommand_mut("create").unwrap().render_help().to_string();
    assert!(!short.contains("Examples:"), "{short}");
}

#[test]
fn headings_get_githubs_anchors() {
    assert_eq!(super::slug("relay sandbox say"), "relay-sandbox-say");
    assert_eq!(
        super::slug("How the model makes its calls (`model.tool_calls`)"),
        "how-the-model-makes-its-calls-modeltool_calls"
    );
}
