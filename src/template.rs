//! Templates: a conversation written once with `{{placeholders}}` and
//! started many times (`relay create --template NAME --var key=value`).
//!
//! Each is a readable JSON file, `templates/<name>.json` in the home. They
//! are filled in by the CLI before the create request is sent, so the
//! daemon only ever sees complete conversations.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::api::{AnswerSchema, NewTodo};
use crate::home::Home;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    pub name: String,
    pub objective: String,
    pub todos: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_followups: Option<u32>,
    /// Each conversation's budget (`--max-turns`, `--max-tokens`) and how
    /// long it may run (`--expires-in`, relative: a template is used later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_ms: Option<u64>,
    /// What some todos' answers are (`--answer`), by todo id ("1", "2", ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answers: BTreeMap<String, AnswerSchema>,
    /// Facts the agent may use but never write to the contact (`--private`);
    /// they may hold {{placeholders}} too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub private_context: Vec<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("'{0}' is not a template name: use 1 to 64 lowercase letters, digits, '-' or '_' (e.g. delivery-check)")]
    BadName(String),
    #[error("there is no template '{0}' (see `relay template list`)")]
    NotFound(String),
    #[error("a template '{0}' already exists: remove it first, or add with --force to replace it")]
    Exists(String),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot {what} {path}: {source}")]
    Io { what: &'static str, path: String, source: io::Error },
    #[error("{path} is damaged ({source}); fix or remove it")]
    Corrupt { path: String, source: serde_json::Error },
}

/// What a filled-in template asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Filled {
    pub objective: String,
    pub todos: Vec<NewTodo>,
    pub heartbeat_interval_ms: Option<u64>,
    pub max_followups: Option<u32>,
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u64>,
    pub expires_in_ms: Option<u64>,
    pub private_context: Vec<String>,
}

impl Template {
    /// A new template, checked: a valid name, text in every field, and
    /// placeholders that are all closed.
    pub fn new(name: &str, objective: String, todos: Vec<String>) -> Result<Template, TemplateError> {
        check_name(name)?;
        if objective.trim().is_empty() {
            return Err(TemplateError::Invalid("the objective is empty".into()));
        }
        if todos.is_empty() || todos.iter().any(|t| t.trim().is_empty()) {
            return Err(TemplateError::Invalid("give at least one todo, none empty".into()));
        }
        let template = Template {
            name: name.to_string(),
            objective,
            todos,
            heartbeat_interval_ms: None,
            max_followups: None,
            max_turns: None,
            max_tokens: None,
            expires_in_ms: None,
            answers: BTreeMap::new(),
            private_context: Vec::new(),
            created_at: crate::clock::now(),
        };
        for text in template.texts() {
            placeholders(text)?;
        }
        Ok(template)
    }

    fn texts(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.objective).chain(&self.todos).chain(&self.private_context)
    }

    /// Adds private facts, checked as the other texts are (not empty,
    /// placeholders closed).
    pub fn with_private_context(mut self, facts: Vec<String>) -> Result<Template, TemplateError> {
        for fact in &facts {
            if fact.trim().is_empty() {
                return Err(TemplateError::Invalid("a private fact is empty".into()));
            }
            placeholders(fact)?;
        }
        self.private_context = facts;
        Ok(self)
    }

    /// Every `{{name}}` the template uses, sorted.
    pub fn variables(&self) -> BTreeSet<String> {
        self.texts().flat_map(|t| placeholders(t).unwrap_or_default()).collect()
    }

    /// Fills every placeholder with `vars`. A variable the template needs
    /// and was not given, or one given that it does not use (a typo), is an
    /// error naming them all.
    pub fn fill(&self, vars: &[(String, String)]) -> Result<Filled, TemplateError> {
        let needed = self.variables();
        let given: BTreeSet<String> = vars.iter().map(|(k, _)| k.clone()).collect();
        let missing: Vec<&str> = needed.difference(&given).map(String::as_str).collect();
        if !missing.is_empty() {
            let flags: Vec<String> = missing.iter().map(|m| format!("--var {m}=...")).collect();
            return Err(TemplateError::Invalid(format!(
                "template '{}' needs a value for {}: add {}",
                self.name,
                missing.join(", "),
                flags.join(" ")
            )));
        }
        let unused: Vec<&str> = given.difference(&needed).map(String::as_str).collect();
        if !unused.is_empty() {
            let known: Vec<&str> = needed.iter().map(String::as_str).collect();
            return Err(TemplateError::Invalid(format!(
                "template '{}' has no {} (its variables: {})",
                self.name,
                unused.iter().map(|u| format!("{{{{{u}}}}}")).collect::<Vec<_>>().join(", "),
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            )));
        }
        let fill = |text: &String| substitute(text, vars);
        Ok(Filled {
            objective: fill(&self.objective),
            todos: self
                .todos
                .iter()
                .enumerate()
                .map(|(n, text)| NewTodo {
                    text: fill(text),
                    answer_schema: self.answers.get(&(n + 1).to_string()).cloned(),
                })
                .collect(),
            heartbeat_interval_ms: self.heartbeat_interval_ms,
            max_followups: self.max_followups,
            max_turns: self.max_turns,
            max_tokens: self.max_tokens,
            expires_in_ms: self.expires_in_ms,
            private_context: self.private_context.iter().map(fill).collect(),
        })
    }
}

/// The names in `text`'s `{{name}}` placeholders (spaces inside allowed).
fn placeholders(text: &str) -> Result<Vec<String>, TemplateError> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close =
            after.find("}}").ok_or_else(|| TemplateError::Invalid(format!("a '{{{{' is never closed in {text:?}")))?;
        let name = after[..close].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(TemplateError::Invalid(format!(
                "'{{{{{name}}}}}' is not a placeholder: use letters, digits, '_' or '-' between {{{{ and }}}}"
            )));
        }
        names.push(name.to_string());
        rest = &after[close + 2..];
    }
    Ok(names)
}

fn substitute(text: &str, vars: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").expect("checked when the template was made");
        let name = after[..close].trim();
        let value = vars.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default();
        // Values go in as they are: a value that holds "{{x}}" is not filled again.
        out.push_str(value);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

fn check_name(name: &str) -> Result<(), TemplateError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok { Ok(()) } else { Err(TemplateError::BadName(name.to_string())) }
}

/// The templates of a home.
pub struct Templates {
    home: Home,
    dir: PathBuf,
}

impl Templates {
    pub fn of(home: &Home) -> Templates {
        Templates { home: home.clone(), dir: home.templates_dir() }
    }

    fn path(&self, name: &str) -> Result<PathBuf, TemplateError> {
        check_name(name)?;
        Ok(self.dir.join(format!("{name}.json")))
    }

    /// Saves `template`; an existing one of that name only with `replace`.
    pub fn save(&self, template: &Template, replace: bool) -> Result<(), TemplateError> {
        let path = self.path(&template.name)?;
        if path.exists() && !replace {
            return Err(TemplateError::Exists(template.name.clone()));
        }
        let io = |what, source| TemplateError::Io { what, path: path.display().to_string(), source };
        self.home.create().map_err(|e| io("create", e))?;
        crate::store::atomic::replace(&path, &crate::store::to_pretty_json(template)).map_err(|e| io("write", e))
    }

    pub fn load(&self, name: &str) -> Result<Template, TemplateError> {
        let path = self.path(name)?;
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(TemplateError::NotFound(name.to_string())),
            Err(source) => return Err(TemplateError::Io { what: "read", path: path.display().to_string(), source }),
        };
        serde_json::from_slice(&bytes)
            .map_err(|source| TemplateError::Corrupt { path: path.display().to_string(), source })
    }

    /// Every template, by name.
    pub fn list(&self) -> Result<Vec<Template>, TemplateError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(TemplateError::Io { what: "read", path: self.dir.display().to_string(), source });
            }
        };
        let mut all = Vec::new();
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if let Some(name) = file.strip_suffix(".json").filter(|n| check_name(n).is_ok()) {
                all.push(self.load(name)?);
            }
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }

    pub fn remove(&self, name: &str) -> Result<(), TemplateError> {
        let path = self.path(name)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(TemplateError::NotFound(name.to_string())),
            Err(source) => Err(TemplateError::Io { what: "remove", path: path.display().to_string(), source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn placeholders_are_filled_and_values_are_not_filled_again() {
        let t = Template::new(
            "delivery",
            "Confirm delivery of {{item}} to {{ address }}".into(),
            vec!["Ask if {{item}} can arrive on {{day}}".into()],
        )
        .unwrap();
        assert_eq!(t.variables().into_iter().collect::<Vec<_>>(), ["address", "day", "item"]);
        let filled = t.fill(&vars(&[("item", "a sofa"), ("address", "{{day}} St"), ("day", "Friday")])).unwrap();
        assert_eq!(filled.objective, "Confirm delivery of a sofa to {{day}} St");
        assert_eq!(filled.todos, [NewTodo::new("Ask if a sofa can arrive on Friday")]);
    }

    #[test]
    fn missing_and_unknown_variables_are_named() {
        let t = Template::new("d", "Deliver {{item}} on {{day}}".into(), vec!["ok".into()]).unwrap();
        let missing = t.fill(&vars(&[("item", "x")])).unwrap_err().to_string();
        assert!(missing.contains("needs a value for day") && missing.contains("--var day=..."), "{missing}");
        let typo = t.fill(&vars(&[("item", "x"), ("day", "y"), ("dya", "z")])).unwrap_err().to_string();
        assert!(typo.contains("has no {{dya}}") && typo.contains("its variables: day, item"), "{typo}");
    }

    #[test]
    fn bad_templates_are_refused() {
        assert!(matches!(Template::new("Bad Name", "x".into(), vec!["y".into()]), Err(TemplateError::BadName(_))));
        assert!(Template::new("a", "x {{open".into(), vec!["y".into()]).is_err());
        assert!(Template::new("a", "x {{}}".into(), vec!["y".into()]).is_err());
        assert!(Template::new("a", "x".into(), vec![]).is_err());
        assert!(Template::new("../etc", "x".into(), vec!["y".into()]).is_err());
    }
}
