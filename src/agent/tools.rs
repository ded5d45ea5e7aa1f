//! What the model sees of its six tools, and the strict parsing of its calls
//! into [`ToolCall`]s. Each tool's arguments are one struct below: its doc
//! comments are the descriptions, and the JSON schema the model is sent is
//! generated from it, so what the model is told and what relay accepts are
//! the same thing. A call is checked against that schema first, so that a
//! refusal names the argument and says why; an unknown tool, a missing or
//! extra argument, or a value of the wrong type is a tool error the model
//! reads, and nothing is done. No tool takes a recipient.

use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{ToolCall, ToolError};
use crate::api::limits;
use crate::api::{Outcome, TodoStatus};

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

/// Update a todo of this conversation. Put what you learned in `answer`
/// (e.g. "Friday 3pm confirmed").
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

/// A string; a whole number is understood too (`2` for `"2"`).
fn todo_id_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["string", "integer"]})
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

/// The six tools, in the order the model is offered them.
pub fn definitions() -> Vec<Definition> {
    vec![
        definition::<SendMessageArgs>("send_message"),
        definition::<MarkTodoItemArgs>("mark_todo_item"),
        definition::<EndConversationArgs>("end_conversation"),
        definition::<ScheduleNextHeartbeatArgs>("schedule_next_heartbeat"),
        definition::<PlaceCallArgs>("place_call"),
        definition::<RequestHumanInterventionArgs>("request_human_intervention"),
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
        let names: Vec<&str> = definitions().iter().map(|d| d.name).collect();
        return Err(ToolError(format!("there is no tool '{name}'; the tools are {}", names.join(", "))));
    };
    let refuse = |why: String| ToolError(format!("{name}: {why}; nothing was done"));
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
        "mark_todo_item" => {
            let MarkTodoItemArgs { todo_id, status, answer } = args(arguments).map_err(refuse)?;
            let status = match status {
                TodoStatusArg::Pending => TodoStatus::Pending,
                TodoStatusArg::InProgress => TodoStatus::InProgress,
                TodoStatusArg::Completed => TodoStatus::Completed,
                TodoStatusArg::Skipped => TodoStatus::Skipped,
            };
            ToolCall::MarkTodoItem { todo_id, status, answer }
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
        _ => unreachable!("every definition is parsed above"),
    })
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

/// Checks `arguments` against a tool's generated schema, and says what is
/// wrong in the model's terms: which argument, and why. Covers what the
/// generated schemas use: an object of properties with `required`, no
/// additional properties, and per property `type`, `enum`, `minLength`,
/// `maxLength` and `minimum`.
fn check(schema: &Value, arguments: &Value) -> Result<(), String> {
    let Some(given) = arguments.as_object() else {
        return Err(format!("the arguments must be a JSON object, not {}", kind(arguments)));
    };
    let properties = schema["properties"].as_object().cloned().unwrap_or_default();
    let list = |names: Vec<&String>| {
        if names.is_empty() {
            "it takes none".to_string()
        } else {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("its arguments are {}", names.join(", "))
        }
    };
    for key in given.keys() {
        if !properties.contains_key(key) {
            return Err(format!("`{key}` is not an argument of this tool ({})", list(properties.keys().collect())));
        }
    }
    for required in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if !given.contains_key(required) {
            return Err(format!("missing `{required}`"));
        }
    }
    for (key, value) in given {
        check_value(&properties[key], value).map_err(|why| format!("`{key}` {why}"))?;
    }
    Ok(())
}

fn check_value(schema: &Value, value: &Value) -> Result<(), String> {
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if value.is_null() {
        return if types.contains(&"null") { Ok(()) } else { Err("must not be null".into()) };
    }
    let fits = |t: &&str| match *t {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => false,
    };
    if !types.is_empty() && !types.iter().any(fits) {
        let wanted: Vec<&str> = types.iter().filter(|t| **t != "null").map(|t| article(t)).collect();
        return Err(format!("must be {}, not {}", wanted.join(" or "), kind(value)));
    }
    if let Some(choices) = schema["enum"].as_array()
        && !choices.contains(value)
    {
        let names: Vec<&str> = choices.iter().filter_map(Value::as_str).collect();
        return Err(format!("must be one of {} (not {value})", names.join(", ")));
    }
    if let Some(text) = value.as_str() {
        let chars = text.chars().count();
        if schema["minLength"].as_u64().is_some_and(|min| min > 0) && text.trim().is_empty() {
            return Err("is empty".into());
        }
        if let Some(max) = schema["maxLength"].as_u64().filter(|max| chars as u64 > *max) {
            return Err(format!("is too long ({chars} characters; at most {max})"));
        }
    }
    if let Some(min) = schema["minimum"].as_i64()
        && value.as_i64().is_some_and(|v| v < min)
    {
        return Err(format!("must be at least {min}"));
    }
    Ok(())
}

fn article(json_type: &str) -> &'static str {
    match json_type {
        "string" => "a string",
        "integer" => "a whole number",
        "number" => "a number",
        "boolean" => "true or false",
        "object" => "an object",
        "array" => "a list",
        _ => "something else",
    }
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// The tools as docs/agent.md lists them, between its `tools:begin` and
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
mod tests {
    use super::*;

    #[test]
    fn valid_calls_parse() {
        assert_eq!(parse("send_message", json!({"text": "hi"})), Ok(ToolCall::SendMessage { text: "hi".into() }));
        assert_eq!(
            parse("mark_todo_item", json!({"todo_id": 2, "status": "completed", "answer": "Friday"})),
            Ok(ToolCall::MarkTodoItem {
                todo_id: "2".into(),
                status: TodoStatus::Completed,
                answer: Some("Friday".into())
            })
        );
        assert_eq!(
            parse("schedule_next_heartbeat", json!({"delay": "2h"})),
            Ok(ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(7200) })
        );
        assert_eq!(
            parse("schedule_next_heartbeat", json!({"delay": 90})),
            Ok(ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(90) })
        );
        assert_eq!(parse("place_call", Value::Null), Ok(ToolCall::PlaceCall));
        assert_eq!(parse("place_call", json!("{}")), Ok(ToolCall::PlaceCall));
    }

    /// The seeds' signatures: `end_conversation(reason)` and
    /// `mark_todo_item(todo_id, status)`; the rest is optional.
    #[test]
    fn the_seeds_signatures_are_accepted() {
        assert_eq!(
            parse("end_conversation", json!({"reason": "all done"})),
            Ok(ToolCall::EndConversation { reason: "all done".into(), outcome: None, summary: None })
        );
        assert_eq!(
            parse("end_conversation", json!({"reason": "r", "outcome": "declined", "summary": "said no"})),
            Ok(ToolCall::EndConversation {
                reason: "r".into(),
                outcome: Some(Outcome::Declined),
                summary: Some("said no".into())
            })
        );
        assert_eq!(
            parse("mark_todo_item", json!({"todo_id": "1", "status": "skipped"})),
            Ok(ToolCall::MarkTodoItem { todo_id: "1".into(), status: TodoStatus::Skipped, answer: None })
        );
        // Older prompts call the answer a note.
        assert_eq!(
            parse("mark_todo_item", json!({"todo_id": "1", "status": "completed", "note": "3pm"})),
            Ok(ToolCall::MarkTodoItem {
                todo_id: "1".into(),
                status: TodoStatus::Completed,
                answer: Some("3pm".into())
            })
        );
    }

    #[test]
    fn a_recipient_or_any_extra_argument_is_refused() {
        for (name, args) in [
            ("send_message", json!({"text": "hi", "to": "+15550001111"})),
            ("send_message", json!({"text": "hi", "recipient": "+15550001111"})),
            ("place_call", json!({"number": "+15550001111"})),
            ("end_conversation", json!({"reason": "done", "notify": "+1"})),
        ] {
            let error = parse(name, args).unwrap_err();
            assert!(
                error.0.contains("is not an argument of this tool") && error.0.contains("nothing was done"),
                "{error}"
            );
        }
    }

    /// A refusal names the tool, the argument and why, in words a model can act on.
    #[test]
    fn a_refusal_names_the_argument_and_why() {
        let said = |name: &str, args: Value| parse(name, args).unwrap_err().0;
        assert_eq!(said("send_message", json!({})), "send_message: missing `text`; nothing was done");
        assert_eq!(
            said("send_message", json!({"text": 5})),
            "send_message: `text` must be a string, not the number 5; nothing was done"
        );
        assert_eq!(said("send_message", json!({"text": "  "})), "send_message: `text` is empty; nothing was done");
        assert_eq!(
            said("end_conversation", json!({"reason": "r", "outcome": "great"})),
            "end_conversation: `outcome` must be one of achieved, partially_achieved, declined, failed \
             (not \"great\"); nothing was done"
        );
        assert_eq!(
            said("end_conversation", json!({"outcome": "achieved", "summary": "done"})),
            "end_conversation: missing `reason`; nothing was done"
        );
        assert_eq!(
            said("mark_todo_item", json!({"todo_id": "1", "status": "done"})),
            "mark_todo_item: `status` must be one of pending, in_progress, completed, skipped (not \"done\"); \
             nothing was done"
        );
        assert_eq!(
            said("send_message", json!({"text": "hi", "to": "+1"})),
            "send_message: `to` is not an argument of this tool (its arguments are `text`); nothing was done"
        );
        assert_eq!(
            said("place_call", json!({"number": "+1"})),
            "place_call: `number` is not an argument of this tool (it takes none); nothing was done"
        );
        let long = "x".repeat(limits::MAX_MESSAGE_CHARS + 1);
        assert!(
            said("send_message", json!({"text": long})).contains("`text` is too long (4097 characters; at most 4096)")
        );
        assert!(said("send_message", json!("{not json")).starts_with("send_message: the arguments are not valid JSON"));
        assert!(said("send_message", json!([1])).contains("the arguments must be a JSON object, not a list"));
        assert!(said("schedule_next_heartbeat", json!({"delay": -5})).contains("`delay` must be at least 0"));
        assert!(said("schedule_next_heartbeat", json!({"delay": "soon"})).contains("`delay` must be seconds"));
        assert!(
            said("mark_todo_item", json!({"todo_id": [1], "status": "completed"}))
                .contains("`todo_id` must be a string")
        );
    }

    #[test]
    fn unknown_tools_are_tool_errors() {
        assert!(
            parse("read_file", json!({"path": "/etc/passwd"})).unwrap_err().0.contains("there is no tool 'read_file'")
        );
    }

    #[test]
    fn the_model_is_offered_exactly_six_tools_none_with_a_recipient() {
        let defs = definitions();
        let names: Vec<&str> = defs.iter().map(|d| d.name).collect();
        assert_eq!(
            names,
            [
                "send_message",
                "mark_todo_item",
                "end_conversation",
                "schedule_next_heartbeat",
                "place_call",
                "request_human_intervention"
            ]
        );
        for def in &defs {
            let schema = &def.parameters;
            assert_eq!(schema["type"], "object", "{}", def.name);
            assert_eq!(schema["additionalProperties"], false, "{}", def.name);
            assert!(schema.get("$defs").is_none() && !schema.to_string().contains("$ref"), "inlined: {schema}");
            assert!(!def.description.is_empty());
            for field in schema["properties"].as_object().unwrap().keys() {
                assert!(!["to", "recipient", "contact", "number", "phone"].contains(&field.as_str()), "{field}");
            }
        }
        // The limits are in the schemas the model is sent.
        assert_eq!(defs[0].parameters["properties"]["text"]["maxLength"], limits::MAX_MESSAGE_CHARS);
        assert_eq!(defs[1].parameters["properties"]["answer"]["maxLength"], limits::MAX_NOTE_CHARS);
        assert_eq!(defs[2].parameters["required"], json!(["reason"]));
        let offered: Vec<&str> = defs[2].parameters["properties"]["outcome"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(offered, Outcome::AGENT_CHOICES.map(Outcome::as_str));
    }

    /// docs/agent.md lists the tools between markers; this regenerates the
    /// list and compares. To refresh the page after changing a tool:
    /// `RELAY_REFRESH_DOCS=1 cargo test --lib agent::tools`.
    #[test]
    fn docs_agent_md_lists_the_tools_the_model_is_sent() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/agent.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let (begin, end) = ("<!-- tools:begin (generated from src/agent/tools.rs) -->\n", "<!-- tools:end -->");
        let start = page.find(begin).expect("docs/agent.md has the tools:begin marker") + begin.len();
        let stop = page[start..].find(end).expect("docs/agent.md has the tools:end marker") + start;
        let generated = markdown();
        if page[start..stop] != generated {
            if std::env::var_os("RELAY_REFRESH_DOCS").is_some() {
                std::fs::write(&path, format!("{}{generated}{}", &page[..start], &page[stop..])).unwrap();
                return;
            }
            panic!(
                "docs/agent.md's tool list differs from the schemas the model is sent; refresh it with \
                 `RELAY_REFRESH_DOCS=1 cargo test --lib agent::tools`. Generated:\n{generated}"
            );
        }
    }
}
