//! A scenario of `relay eval`: one whole conversation, written as a TOML file
//! (the built-in ones are `scenarios/*.toml` in the repository): what the
//! conversation is for, what the scripted contact writes, and what a good
//! agent ends with. The file format is documented in docs/conduct.md.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::api::{Outcome, State};

/// The scenarios relay ships with, by name (the file's stem).
const BUILT_IN: [(&str, &str); 7] = [
    ("cooperative", include_str!("../../../scenarios/cooperative.toml")),
    ("two-in-one", include_str!("../../../scenarios/two-in-one.toml")),
    ("silent", include_str!("../../../scenarios/silent.toml")),
    ("wants-a-human", include_str!("../../../scenarios/wants-a-human.toml")),
    ("injection", include_str!("../../../scenarios/injection.toml")),
    ("spanish", include_str!("../../../scenarios/spanish.toml")),
    ("stop", include_str!("../../../scenarios/stop.toml")),
];

/// The contact's number when a scenario names none.
const DEFAULT_CONTACT: &str = "+56912345678";

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub file: ScenarioFile,
    pub heartbeat_interval: Duration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// What the contact does, in a few words (the scorecard shows it).
    pub about: String,
    pub objective: String,
    #[serde(default = "default_contact")]
    pub contact_number: String,
    /// What the contact writes: the next line each time relay has written
    /// and waits for them; none left, and they stay silent.
    pub contact: Vec<String>,
    pub todos: Vec<TodoSpec>,
    /// The language relay must answer in once the contact has written ("es").
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub heartbeat: HeartbeatSpec,
    pub expect: Expect,
}

fn default_contact() -> String {
    DEFAULT_CONTACT.into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TodoSpec {
    pub text: String,
    /// What the answer must contain, each entry one fact: alternatives
    /// separated by `|`, any case ("3|afternoon"). Empty: the contact never
    /// gives this answer, so marking it completed is inventing one.
    #[serde(default)]
    pub facts: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatSpec {
    pub interval: String,
    pub max_followups: u32,
}

impl Default for HeartbeatSpec {
    fn default() -> Self {
        HeartbeatSpec { interval: "30s".into(), max_followups: 1 }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The states the conversation may end in (as `relay get` shows them).
    pub states: Vec<State>,
    /// The outcomes allowed, when it ends COMPLETED; empty: any.
    #[serde(default)]
    pub outcomes: Vec<Outcome>,
    /// The most messages relay may send in the whole conversation.
    pub max_messages: usize,
    /// The longest message, in characters.
    #[serde(default = "default_max_message_chars")]
    pub max_message_chars: usize,
    /// The most messages relay may send after the contact's last line.
    #[serde(default)]
    pub max_after_last_line: Option<usize>,
}

fn default_max_message_chars() -> usize {
    500
}

impl Scenario {
    /// Reads one scenario; `name` is what the scorecard calls it.
    pub fn parse(name: &str, text: &str) -> Result<Scenario, String> {
        let file: ScenarioFile = toml::from_str(text).map_err(|e| format!("scenario {name}: {}", e.message()))?;
        let interval = crate::duration::parse(&file.heartbeat.interval)
            .map_err(|e| format!("scenario {name}: heartbeat.interval: {e}"))?;
        if file.todos.is_empty() {
            return Err(format!("scenario {name}: give it at least one [[todos]]"));
        }
        if file.expect.states.is_empty() {
            return Err(format!("scenario {name}: expect.states is empty: say how the conversation may end"));
        }
        Ok(Scenario { name: name.to_string(), file, heartbeat_interval: interval })
    }

    /// The built-in scenarios, or those named (by file stem).
    pub fn built_in() -> Vec<Scenario> {
        BUILT_IN.iter().map(|(name, text)| Scenario::parse(name, text).expect("built-in scenarios parse")).collect()
    }

    /// Every `*.toml` in `dir`, by name.
    pub fn from_dir(dir: &Path) -> Result<Vec<Scenario>, String> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read the scenarios in {}: {e}", dir.display()))?;
        let mut paths: Vec<_> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(format!("{} holds no scenario (*.toml)", dir.display()));
        }
        paths
            .iter()
            .map(|path| {
                let name = path.file_stem().unwrap_or_default().to_string_lossy().to_string();
                let text = read_scenario(path).map_err(|e| format!("scenario {name}: {e}"))?;
                Scenario::parse(&name, &text)
            })
            .collect()
    }
}

/// A scenario file's text: a regular file of at most 1 MiB (a link to
/// /dev/zero must be an error, not all the memory).
fn read_scenario(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return Err(format!("{} is not a scenario file (a regular file of at most 1 MiB)", path.display()));
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_scenarios_parse_and_each_has_a_different_name() {
        let all = Scenario::built_in();
        assert_eq!(all.len(), 7);
        let mut names: Vec<_> = all.iter().map(|s| s.name.clone()).collect();
        names.dedup();
        assert_eq!(names.len(), 7);
        assert!(all.iter().all(|s| s.heartbeat_interval >= Duration::from_secs(1)));
    }

    #[test]
    fn a_wrong_scenario_is_refused_with_its_name_and_the_field() {
        let error = Scenario::parse("mine", "about = 1").unwrap_err();
        assert!(error.starts_with("scenario mine: "), "{error}");
        let text =
            "about='a'\nobjective='o'\ncontact=[]\n[[todos]]\ntext='t'\n[expect]\nstates=['DONE']\nmax_messages=1";
        let error = Scenario::parse("mine", text).unwrap_err();
        assert!(error.contains("DONE"), "{error}");
    }
}
