//! What the model sees of its eight tools, and the strict parsing of its calls
//! into [`ToolCall`]s. Each tool's arguments are one struct below: its doc
//! comments are the descriptions, and the JSON schema the model is sent is
//! generated from it, so what the model is told and what relay accepts are
//! the same thing. A call is checked against that schema first, so that a
//! refusal names the argument and says why; an unknown tool, a missing or
//! extra argument, or a value of the wrong type is a tool error the model
//! reads, and nothing is done. No tool takes a recipient.

mod check;

use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{ToolCall, ToolError};
use crate::api::limits;
use crate::api::{Outcome, TodoStatus};
use check::{article, check};

/// Send a WhatsApp message to the contact of this conversation (the only
/// person you can write to). Keep it brief and natural, in the contact's
/// language.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageArgs {
    /// The message.
    #[schemars(length(min = 1, max = limits::MAX_MESSAGE_CHARS))]
    pub text: String,
}

/// Send the contact one of this conversation's attachments (the files
/// listed under "Attachments you can send"), by its id. Photos arrive as
/// images, other files as documents.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendAttachmentArgs {
    /// The attachment's id as listed, e.g. "a1".
    #[schemars(length(min = 2, max = 12))]
    pub attachment_id: String,
    /// A few words under the file, if any, in the contact's language.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_CAPTION_CHARS))]
    pub caption: Option<String>,
}

// No example answer in this description: small models copy it (Qwen2.5-Coder
// 1.5B put the old example, "Friday 3pm confirmed", into todos the contact
// never answered; docs/conduct.md).
/// Update a todo of this conversation. Put what the contact told you in
/// `answer`, in their words.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkTodoItemArgs {
    /// The todo's id, e.g. "1".
    #[serde(deserialize_with = "todo_id")]
    #[schemars(schema_with = "todo_id_schema")]
    pub todo_id: String,
    /// The todo's new status.
    pub status: TodoStatusArg,
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

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatusArg {
    Pending,
    InProgress,
    Completed,
    Skipped,
}

/// End this conversation, when the objective is achieved or cannot be. Stop
/// after calling it. What you write is what the person who started this
/// conversation reads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndConversationArgs {
    /// Why the conversation ends, in a sentence.
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
    /// achieved: the objective is met; partially_achieved: some of it;
    /// declined: the contact said no; failed: it cannot be done. Left out,
    /// relay judges it from the todos.
    #[serde(default)]
    pub outcome: Option<OutcomeArg>,
    /// What was achieved or learned, in a sentence or two, for the person who
    /// asked. Left out, the reason is the summary.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub summary: Option<String>,
}

/// The outcomes the agent may choose ([`Outcome::AGENT_CHOICES`]).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeArg {
    Achieved,
    PartiallyAchieved,
    Declined,
    Failed,
}

/// Choose when to follow up if the contact stays silent after this turn
/// (e.g. they said "ask me tomorrow").
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleNextHeartbeatArgs {
    /// Seconds (a whole number), or a duration such as "90s", "30m", "2h".
    #[schemars(schema_with = "delay_schema")]
    pub delay: Value,
}

/// Calls are not available yet: this tool places no call and only tells
/// you so.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaceCallArgs {}

/// Ask the human operator for help: the contact needs something you cannot
/// give or decide. Put what you need to know in `question`; the operator's
/// answer comes to you (not to the contact) in a later turn. Stop after
/// calling it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestHumanInterventionArgs {
    /// What the operator must handle.
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
    /// The question to the operator, if you have one.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub question: Option<String>,
}

/// The contact asked not to be written to any more (to stop, unsubscribe,
/// be left alone). relay ends the conversation and never writes to them
/// again; send nothing more. Stop after calling it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactOptedOutArgs {
    /// What the contact asked, in a sentence (your words).
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
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

fn delay_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["integer", "string"], "minimum": 0})
}

/// A todo id as a string; a model that writes `2` for `"2"` is understood.
fn todo_id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!("expected a string such as \"1\", got {other}"))),
    }
}

/// One tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: &'static str,
    pub description: String,
    /// The JSON schema of the arguments (an object).
    pub parameters: Value,
}

/// The tools' names, as [`definitions`] gives them (a test keeps the two
/// in step): what a message to the contact must never hold.
pub const NAMES: [&str; 8] = [
    "send_message",
    "send_attachment",
    "mark_todo_item",
    "end_conversation",
    "schedule_next_heartbeat",
    "place_call",
    "request_human_intervention",
    "contact_opted_out",
];

/// The tool that does nothing yet: it tells the model that calls are not
/// available.
pub const STUB: &str = "place_call";

/// The tools, in the order the model is offered them.
pub fn definitions() -> Vec<Definition> {
    vec![
        definition::<SendMessageArgs>("send_message"),
        definition::<SendAttachmentArgs>("send_attachment"),
        definition::<MarkTodoItemArgs>("mark_todo_item"),
        definition::<EndConversationArgs>("end_conversation"),
        definition::<ScheduleNextHeartbeatArgs>("schedule_next_heartbeat"),
        definition::<PlaceCallArgs>("place_call"),
        definition::<RequestHumanInterventionArgs>("request_human_intervention"),
        definition::<ContactOptedOutArgs>("contact_opted_out"),
    ]
}

/// The tool `name`'s definition, generated from its argument struct: the
/// struct's doc comment becomes the tool's description, and the rest the
/// schema of its arguments (subschemas inlined, as providers want).
fn definition<T: JsonSchema>(name: &'static str) -> Definition {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    tidy(&mut schema);
    let object = schema.as_object_mut().expect("an argument struct's schema is an object");
    object.remove("title");
    let description = match object.remove("description") {
        Some(Value::String(s)) => s,
        _ => panic!("the arguments of {name} need a doc comment: it is the tool's description"),
    };
    // An empty struct has no "properties" or "required"; providers want both.
    object.entry("properties").or_insert_with(|| json!({}));
    object.entry("required").or_insert_with(|| json!([]));
    Definition { name, description, parameters: schema }
}

/// Doc comments keep their line breaks; a description reads as one line.
/// `"default": null` says nothing a missing `required` entry does not.
fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(description)) = object.get_mut("description") {
                *description = description.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            if object.get("default") == Some(&Value::Null) {
                object.remove("default");
            }
            object.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Turns the model's `name(arguments)` into a [`ToolCall`], or says why not.
pub fn parse(name: &str, arguments: Value) -> Result<ToolCall, ToolError> {
    let Some(definition) = definitions().into_iter().find(|d| d.name == name) else {
        let signatures: Vec<String> = definitions().iter().map(signature).collect();
        return Err(ToolError(format!("there is no tool '{name}'; the tools are {}", signatures.join(", "))));
    };
    // The right way to call it, from the schema the model was sent.
    let refuse =
        |why: String| ToolError(format!("{name}: {why}; nothing was done. Call it as {}", signature(&definition)));
    // Some models send `null` or "" for "no arguments", or the JSON as a string.
    let arguments = match arguments {
        Value::Null => json!({}),
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => {
            serde_json::from_str(&s).map_err(|e| refuse(format!("the arguments are not valid JSON ({e})")))?
        }
        other => other,
    };
    let arguments = with_current_names(name, arguments);
    check(&definition.parameters, &arguments).map_err(refuse)?;
    fn args<T: DeserializeOwned>(arguments: Value) -> Result<T, String> {
        // The schema check above catches what a model gets wrong; this is
        // the backstop for what the schema cannot say.
        serde_json::from_value(arguments).map_err(|e| format!("invalid arguments ({e})"))
    }
    Ok(match name {
        "send_message" => ToolCall::SendMessage { text: args::<SendMessageArgs>(arguments).map_err(refuse)?.text },
        "send_attachment" => {
            let SendAttachmentArgs { attachment_id, caption } = args(arguments).map_err(refuse)?;
            ToolCall::SendAttachment { attachment_id, caption }
        }
        "mark_todo_item" => {
            let MarkTodoItemArgs { todo_id, status, answer, value, quote, media } = args(arguments).map_err(refuse)?;
            let status = match status {
                TodoStatusArg::Pending => TodoStatus::Pending,
                TodoStatusArg::InProgress => TodoStatus::InProgress,
                TodoStatusArg::Completed => TodoStatus::Completed,
                TodoStatusArg::Skipped => TodoStatus::Skipped,
            };
            ToolCall::MarkTodoItem { todo_id, status, answer, value, quote, media }
        }
        "end_conversation" => {
            let EndConversationArgs { reason, outcome, summary } = args(arguments).map_err(refuse)?;
            let outcome = outcome.map(|o| match o {
                OutcomeArg::Achieved => Outcome::Achieved,
                OutcomeArg::PartiallyAchieved => Outcome::PartiallyAchieved,
                OutcomeArg::Declined => Outcome::Declined,
                OutcomeArg::Failed => Outcome::Failed,
            });
            ToolCall::EndConversation { reason, outcome, summary }
        }
        "schedule_next_heartbeat" => {
            let delay = match args::<ScheduleNextHeartbeatArgs>(arguments).map_err(refuse)?.delay {
                Value::Number(n) => n.as_u64().map(Duration::from_secs),
                Value::String(s) => crate::duration::parse(&s).ok(),
                _ => None,
            }
            .ok_or_else(|| {
                refuse("`delay` must be seconds (a whole number) or a duration such as \"2h\"".to_string())
            })?;
            ToolCall::ScheduleNextHeartbeat { delay }
        }
        "place_call" => {
            args::<PlaceCallArgs>(arguments).map_err(refuse)?;
            ToolCall::PlaceCall
        }
        "request_human_intervention" => {
            let RequestHumanInterventionArgs { reason, question } = args(arguments).map_err(refuse)?;
            ToolCall::RequestHumanIntervention { reason, question }
        }
        "contact_opted_out" => {
            let ContactOptedOutArgs { reason } = args(arguments).map_err(refuse)?;
            ToolCall::ContactOptedOut { reason }
        }
        _ => unreachable!("every definition is parsed above"),
    })
}

/// How a tool is called, as a refusal tells the model: its name and
/// arguments in order, an optional one marked `?` (`mark_todo_item(todo_id,
/// status, answer?)`). Generated from the definition, as the schema is.
pub fn signature(definition: &Definition) -> String {
    let required: Vec<&str> =
        definition.parameters["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let arguments: Vec<String> = definition.parameters["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, _)| if required.contains(&name.as_str()) { name.clone() } else { format!("{name}?") })
        .collect();
    format!("{}({})", definition.name, arguments.join(", "))
}

/// Older names of arguments, still understood: (tool, old name, name).
/// Each is also a `serde(alias)` on its field.
const ALIASES: &[(&str, &str, &str)] = &[("mark_todo_item", "note", "answer")];

fn with_current_names(tool: &str, mut arguments: Value) -> Value {
    if let Some(given) = arguments.as_object_mut() {
        for (_, old, new) in ALIASES.iter().filter(|(t, _, _)| *t == tool) {
            if !given.contains_key(*new)
                && let Some(value) = given.remove(*old)
            {
                given.insert(new.to_string(), value);
            }
        }
    }
    arguments
}

/// The tools as docs/conversation-agent.md lists them, between its `tools:begin` and
/// `tools:end` markers: generated from [`definitions`], so the page says
/// what the model is sent.
pub fn markdown() -> String {
    let mut out = String::new();
    for tool in definitions() {
        let properties: Map<String, Value> = tool.parameters["properties"].as_object().cloned().unwrap_or_default();
        let required: Vec<&str> =
            tool.parameters["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let signature: Vec<&str> = properties.keys().map(String::as_str).collect();
        out.push_str(&format!("#### `{}({})`\n\n", tool.name, signature.join(", ")));
        out.push_str(&format!("{}\n\n", tool.description));
        if properties.is_empty() {
            out.push_str("No arguments.\n\n");
            continue;
        }
        for (name, schema) in &properties {
            let mut facts = vec![if required.contains(&name.as_str()) { "required" } else { "optional" }.to_string()];
            facts.push(type_words(schema));
            let description = schema["description"].as_str().unwrap_or("");
            out.push_str(&format!("- `{name}` ({}): {description}\n", facts.join(", ")));
        }
        out.push('\n');
    }
    out.trim_end().to_string() + "\n"
}

fn type_words(schema: &Value) -> String {
    if let Some(choices) = schema["enum"].as_array() {
        let names: Vec<String> = choices.iter().filter_map(Value::as_str).map(|c| format!("`{c}`")).collect();
        return format!("one of {}", names.join(", "));
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
        _ => vec![],
    };
    let mut words = types.iter().map(|t| article(t)).collect::<Vec<_>>().join(" or ");
    match (schema["minLength"].as_u64(), schema["maxLength"].as_u64()) {
        (Some(min), Some(max)) => words.push_str(&format!(", {min} to {max} characters")),
        (None, Some(max)) => words.push_str(&format!(", at most {max} characters")),
        _ => {}
    }
    words
}

#[cfg(test)]
mod tests;
