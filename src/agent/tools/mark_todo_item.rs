//! `mark_todo_item`: a todo's status and answer. The engine records an
//! answer only on what someone said (its actor's `marks`).

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde_json::Value;

use super::Tool;
use crate::agent::ToolCall;
use crate::api::{TodoStatus, limits};

// No example answer in this description: small models copy an example into
// todos the contact never answered (docs/conduct.md).
/// Update a todo of this conversation. Put what the contact told you in
/// `answer`, in their words.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The todo's id, e.g. "1".
    #[serde(deserialize_with = "todo_id")]
    #[schemars(schema_with = "todo_id_schema")]
    pub todo_id: String,
    /// The todo's new status.
    pub status: StatusArg,
    /// What was learned, if anything (the old answer stays when this is left out).
    #[serde(default, alias = "note")]
    #[schemars(length(min = 1, max = limits::MAX_NOTE_CHARS))]
    pub answer: Option<String>,
    /// For a todo whose expected answer the todo list gives: the answer as
    /// that kind of value (a date "2026-11-27", true or false, a number, one
    /// of its choices). Needed to complete such a todo.
    #[serde(default)]
    #[schemars(schema_with = "typed_value_schema")]
    pub value: Option<Value>,
    /// The contact's own words the answer rests on, copied exactly from
    /// their message (a few words are enough). Needed to complete a todo
    /// with an answer or value that is not in their words already.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_NOTE_CHARS))]
    pub quote: Option<String>,
    /// When the answer is a file the contact sent (a photo, a document): its
    /// reference as the conversation shows it, e.g. "m2".
    #[serde(default)]
    #[schemars(length(min = 2, max = 12))]
    pub media: Option<String>,
}

/// The statuses the model may set, as it writes them.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusArg {
    Pending,
    InProgress,
    Completed,
    Skipped,
}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        let Args { todo_id, status, answer, value, quote, media } = self;
        let status = match status {
            StatusArg::Pending => TodoStatus::Pending,
            StatusArg::InProgress => TodoStatus::InProgress,
            StatusArg::Completed => TodoStatus::Completed,
            StatusArg::Skipped => TodoStatus::Skipped,
        };
        Ok(ToolCall::MarkTodoItem { todo_id, status, answer, value, quote, media })
    }
}

/// A string; a whole number is understood too (`2` for `"2"`).
fn todo_id_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["string", "integer"]})
}

/// What an `answer_schema` can ask for: a text (dates and times are
/// texts), a number or true/false.
fn typed_value_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["string", "number", "boolean"]})
}

/// A todo id as a string; a model that writes `2` for `"2"` is understood.
fn todo_id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!("expected a string such as \"1\", got {other}"))),
    }
}
