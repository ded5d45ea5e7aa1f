//! The agent's tools as the model sees them, and the strict parsing of its
//! calls into [`ToolCall`]s. [`ToolName`] is the one list of them; each tool
//! has a file here with its argument struct, whose doc comments are the
//! descriptions and from which the JSON schema the model is sent is
//! generated, so what the model is told and what relay accepts are the same
//! thing. What a call does is the engine's (its actor's `tools`).
//!
//! A call is checked against its schema first, so that a refusal names the
//! argument and says why; an unknown tool, a missing or extra argument, or a
//! value of the wrong type is a tool error the model reads, and nothing is
//! done. No tool takes a recipient.

mod check;
mod contact_opted_out;
mod end_conversation;
mod mark_todo_item;
mod place_call;
mod request_human_intervention;
mod schedule_next_heartbeat;
mod send_attachment;
mod send_message;

use schemars::{JsonSchema, generate::SchemaSettings};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{ToolCall, ToolError};
use check::{article, check};

/// The tools, in the order the model is offered them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    SendMessage,
    SendAttachment,
    MarkTodoItem,
    EndConversation,
    ScheduleNextHeartbeat,
    PlaceCall,
    RequestHumanIntervention,
    ContactOptedOut,
}

impl ToolName {
    pub const ALL: [ToolName; 8] = [
        ToolName::SendMessage,
        ToolName::SendAttachment,
        ToolName::MarkTodoItem,
        ToolName::EndConversation,
        ToolName::ScheduleNextHeartbeat,
        ToolName::PlaceCall,
        ToolName::RequestHumanIntervention,
        ToolName::ContactOptedOut,
    ];

    /// The name the model calls it by.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolName::SendMessage => "send_message",
            ToolName::SendAttachment => "send_attachment",
            ToolName::MarkTodoItem => "mark_todo_item",
            ToolName::EndConversation => "end_conversation",
            ToolName::ScheduleNextHeartbeat => "schedule_next_heartbeat",
            ToolName::PlaceCall => "place_call",
            ToolName::RequestHumanIntervention => "request_human_intervention",
            ToolName::ContactOptedOut => "contact_opted_out",
        }
    }

    /// The tool the model means by `name`, written exactly.
    pub fn from_name(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|tool| tool.as_str() == name)
    }

    /// The tool that does nothing yet: it tells the model that calls are
    /// not available.
    pub fn is_stub(self) -> bool {
        self == ToolName::PlaceCall
    }

    /// Whether a call writes to the contact (a message or a file): what a
    /// turn must do unless it ends otherwise.
    pub fn sends(self) -> bool {
        matches!(self, ToolName::SendMessage | ToolName::SendAttachment)
    }

    /// Whether the turn stops after a call that succeeds.
    pub fn ends_turn(self) -> bool {
        matches!(self, ToolName::EndConversation | ToolName::RequestHumanIntervention | ToolName::ContactOptedOut)
    }

    /// The tool as the model is offered it, from its argument struct.
    pub fn definition(self) -> Definition {
        match self {
            ToolName::SendMessage => definition::<send_message::Args>(self),
            ToolName::SendAttachment => definition::<send_attachment::Args>(self),
            ToolName::MarkTodoItem => definition::<mark_todo_item::Args>(self),
            ToolName::EndConversation => definition::<end_conversation::Args>(self),
            ToolName::ScheduleNextHeartbeat => definition::<schedule_next_heartbeat::Args>(self),
            ToolName::PlaceCall => definition::<place_call::Args>(self),
            ToolName::RequestHumanIntervention => definition::<request_human_intervention::Args>(self),
            ToolName::ContactOptedOut => definition::<contact_opted_out::Args>(self),
        }
    }

    /// Checked arguments as this tool's call; `Err` says why not.
    fn call(self, arguments: Value) -> Result<ToolCall, String> {
        match self {
            ToolName::SendMessage => into_call::<send_message::Args>(arguments),
            ToolName::SendAttachment => into_call::<send_attachment::Args>(arguments),
            ToolName::MarkTodoItem => into_call::<mark_todo_item::Args>(arguments),
            ToolName::EndConversation => into_call::<end_conversation::Args>(arguments),
            ToolName::ScheduleNextHeartbeat => into_call::<schedule_next_heartbeat::Args>(arguments),
            ToolName::PlaceCall => into_call::<place_call::Args>(arguments),
            ToolName::RequestHumanIntervention => into_call::<request_human_intervention::Args>(arguments),
            ToolName::ContactOptedOut => into_call::<contact_opted_out::Args>(arguments),
        }
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool's arguments: what the model may send, and the call they make.
trait Tool: DeserializeOwned + JsonSchema {
    /// The call these arguments make, or why they make none (what the
    /// schema cannot say).
    fn into_call(self) -> Result<ToolCall, String>;
}

fn into_call<T: Tool>(arguments: Value) -> Result<ToolCall, String> {
    // The schema check catches what a model gets wrong; this is the
    // backstop for what the schema cannot say.
    let args: T = serde_json::from_value(arguments).map_err(|e| format!("invalid arguments ({e})"))?;
    args.into_call()
}

/// The tools' names, as the model calls them: what a message to the contact
/// must never hold.
pub const NAMES: [&str; 8] = {
    let mut names = [""; 8];
    let mut at = 0;
    while at < names.len() {
        names[at] = ToolName::ALL[at].as_str();
        at += 1;
    }
    names
};

/// One tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: &'static str,
    pub description: String,
    /// The JSON schema of the arguments (an object).
    pub parameters: Value,
}

/// The tools, in the order the model is offered them.
pub fn definitions() -> Vec<Definition> {
    ToolName::ALL.into_iter().map(ToolName::definition).collect()
}

/// The tool `name`'s definition, generated from its argument struct: the
/// struct's doc comment becomes the tool's description, and the rest the
/// schema of its arguments (subschemas inlined, as providers want).
fn definition<T: JsonSchema>(tool: ToolName) -> Definition {
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
        _ => panic!("the arguments of {tool} need a doc comment: it is the tool's description"),
    };
    // An empty struct has no "properties" or "required"; providers want both.
    object.entry("properties").or_insert_with(|| json!({}));
    object.entry("required").or_insert_with(|| json!([]));
    Definition { name: tool.as_str(), description, parameters: schema }
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
    let Some(tool) = ToolName::from_name(name) else {
        let signatures: Vec<String> = definitions().iter().map(signature).collect();
        return Err(ToolError(format!("there is no tool '{name}'; the tools are {}", signatures.join(", "))));
    };
    let definition = tool.definition();
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
    let arguments = with_current_names(tool, arguments);
    check(&definition.parameters, &arguments).map_err(refuse)?;
    tool.call(arguments).map_err(refuse)
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
const ALIASES: &[(ToolName, &str, &str)] = &[(ToolName::MarkTodoItem, "note", "answer")];

fn with_current_names(tool: ToolName, mut arguments: Value) -> Value {
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
