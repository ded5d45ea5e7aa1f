//! Dependencies point one way. relay's modules stand in layers, and a module
//! may use only those in lower layers (and its own): the state machine knows
//! nothing of the engine, the store nothing of conversations' logic, the
//! agent nothing of the engine that runs it. This test reads `src/` and
//! fails on any `crate::` path that points up or sideways.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first. Modules in one layer may not use each other.
const LAYERS: &[&[&str]] = &[
    &["sys"],
    &["util", "duration", "contact", "clock", "fsm", "home"],
    &["service"],
    &["courtesy"],
    &["api"],
    &["store", "grounding"],
    &["config", "template"],
    &["media"],
    &["channel", "agent"],
    &["engine"],
    &["webhooks", "scripted_model"],
    &["daemon"],
    &["client"],
    &["trial"],
    &["eval", "doctor"],
    &["mcp"],
    &["cli"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `.rs` file under `dir`, at any depth.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules `source` names through `crate::`, including those
/// in a group (`use crate::{api::X, store::Y}`).
fn crate_paths(source: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut found = BTreeSet::new();
    for (at, _) in source.match_indices("crate::") {
        let rest = &source[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            for item in split_top_level(group) {
                let name = ident(item.trim());
                if !name.is_empty() && name != "self" {
                    found.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// The items of a `{a::b, c::{d, e}}` group (without its braces), split at
/// its own commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

#[test]
fn no_module_uses_one_above_it_or_beside_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let module =
            relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if ["lib", "main"].contains(&module.as_str()) {
            continue;
        }
        let Some(own) = layer(&module) else {
            wrong.push(format!("src/{module} is in no layer: add it to LAYERS in tests/it/repo/layers.rs"));
            continue;
        };
        let source = std::fs::read_to_string(&file).unwrap();
        for used in crate_paths(&source) {
            if used == module {
                continue;
            }
            match layer(&used) {
                Some(theirs) if theirs < own => {}
                _ => wrong.push(format!("{} uses crate::{used}", relative.display())),
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies that point up or sideways:\n{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_grouped_and_plain_paths() {
    let found = crate_paths("use crate::api::X;\nuse crate::{engine::Y, store::{a, b}};\nlet x = crate::fsm::next();");
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["api", "engine", "fsm", "store"]);
}
