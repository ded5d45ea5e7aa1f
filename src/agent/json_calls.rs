//! Tool calls through a JSON schema (`model.tool_calls: json_schema`).
//!
//! Asking a small local model for a tool call does not make it write one:
//! llama.cpp finds no tool-call format in many templates, so
//! `tool_choice: "required"` has nothing to enforce, and the model answers in
//! prose or writes its call as text. Every server people run
//! locally can hold a reply to a JSON schema instead (llama.cpp and vLLM
//! through `response_format`, Ollama's native API through `format`). So in
//! this mode relay asks for its calls as one JSON document,
//! `{"calls": [{"name": ..., "arguments": {...}}, ...]}`, whose schema is
//! generated here from the same typed tool definitions as the tools'
//! own schemas ([`tools::definitions`]). The tools stay in the request (the
//! chat template shows the model their descriptions) with
//! `tool_choice: "none"`, so the server applies the schema rather than a
//! tool-call grammar of its own.
//!
//! The reply's calls then go through the same [`tools::parse`] as native
//! ones, and back into the history as tool calls with their results.

use serde_json::{Map, Value, json};

use super::tools::{self, Definition};
use crate::config::Provider;

/// The schema's name in a Chat Completions request.
pub const SCHEMA_NAME: &str = "relay_tool_calls";

/// The schema of a reply: an object whose `calls` is a list of at least
/// `min_calls` calls, each one of the tools with its arguments. One before
/// the turn has acted, so the model cannot answer with nothing; none after,
/// so it can stop.
pub fn schema(min_calls: u64) -> Value {
    schema_of(&offered(), min_calls)
}

/// The most calls one reply may hold. A turn needs a few (record two
/// answers, send, schedule); a model that repeats a call would otherwise
/// fill its whole output limit and the reply be cut unreadable. More calls
/// can follow in the turn's next round.
pub const MAX_CALLS_PER_REPLY: u64 = 4;

/// The tools this mode offers: all but those that do nothing yet
/// (`place_call`, which only answers that calls are not available): a model
/// that can only pick from a schema's list picks a tool with no arguments
/// readily.
pub fn offered() -> Vec<Definition> {
    tools::ToolName::ALL.into_iter().filter(|tool| !tool.is_stub()).map(tools::ToolName::definition).collect()
}

/// [`schema`] for these tools.
///
/// Written for what every server that takes it accepts:
/// - the top is an object, not a list (OpenAI wants an object there);
/// - a choice between tools, or between the types of an argument, is
///   `anyOf` (vLLM's and OpenAI's rules refuse or ignore `oneOf`, and
///   llama.cpp's grammar treats both alike), and a list of types (`"type":
///   ["string", "integer"]`) becomes an `anyOf` of single types;
/// - every object says `additionalProperties: false`;
/// - a tool's name is an `enum` of one value;
/// - lengths and bounds (`minLength`, `maxLength`, `minimum`) are left out:
///   relay's own check of each call enforces them and tells the model what
///   is wrong, and a `maxLength` of 4,096 becomes thousands of grammar rules
///   in llama.cpp (and Ollama, which uses its converter).
///
/// Not OpenAI's strict mode: strict requires every property of an object
/// to be `required` (an optional one as `"type": [..., "null"]`), which
/// would make the model write every optional argument of a call
/// (`answer`, `value`, `quote`, `outcome`, `summary`, `question`) each
/// time. A small model made to write `"answer":` tends to fill it, and an
/// answer nobody gave is the harm relay most guards against. So optional
/// arguments stay optional and the request says `"strict": false`; the
/// local servers this mode is for hold the reply to the schema whatever
/// `strict` says (they compile it into a grammar), and hosted APIs default
/// to `native`.
pub fn schema_of(definitions: &[Definition], min_calls: u64) -> Value {
    let calls: Vec<Value> = definitions
        .iter()
        .map(|tool| {
            json!({
                "type": "object",
                "description": tool.description,
                "properties": {
                    "name": {"type": "string", "enum": [tool.name]},
                    "arguments": portable(&tool.parameters),
                },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    json!({
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "description": "Your tool calls, in order.",
                "items": {"anyOf": calls},
                "minItems": min_calls,
                "maxItems": MAX_CALLS_PER_REPLY,
            },
        },
        "required": ["calls"],
        "additionalProperties": false,
    })
}

/// A tool's argument schema in the form [`schema_of`] describes.
fn portable(schema: &Value) -> Value {
    let mut out = Map::new();
    if let Some(description) = schema.get("description") {
        out.insert("description".into(), description.clone());
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let properties: Map<String, Value> =
            properties.iter().map(|(name, property)| (name.clone(), portable(property))).collect();
        out.insert("type".into(), json!("object"));
        out.insert("properties".into(), Value::Object(properties));
        out.insert("required".into(), schema.get("required").cloned().unwrap_or_else(|| json!([])));
        out.insert("additionalProperties".into(), json!(false));
        return Value::Object(out);
    }
    if let Some(choices) = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array) {
        out.insert("anyOf".into(), Value::Array(choices.iter().map(portable).collect()));
        return Value::Object(out);
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let choices = schema.get("enum").and_then(Value::as_array);
    let mut branches: Vec<Value> = types
        .iter()
        .map(|&t| {
            let mut branch = json!({"type": t});
            // An enum's values, each under the branch of its own type.
            if let Some(choices) = choices.filter(|_| t != "null") {
                let fitting: Vec<Value> = choices.iter().filter(|c| json_type(c) == t).cloned().collect();
                branch["enum"] = Value::Array(fitting);
            }
            branch
        })
        .collect();
    match branches.len() {
        0 => {}
        1 => {
            if let Value::Object(single) = branches.remove(0) {
                out.extend(single);
            }
        }
        _ => {
            out.insert("anyOf".into(), Value::Array(branches));
        }
    }
    Value::Object(out)
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// What a request adds to ask for `schema`, as rig-core's
/// `additional_params` (merged over the fields it writes itself): Chat
/// Completions' `response_format`, or `format` for Ollama's native API
/// (rig-core puts it at the top of the body). None for Anthropic, whose
/// API has no such field beside tools (the config refuses the mode there).
///
/// rig-core's own `output_schema` is not used: it holds the schema back
/// until a tool has answered, as a constrained reply cannot make a native
/// call, which is the point here.
pub fn request_params(provider: Provider, schema: Value) -> Option<Value> {
    match provider {
        Provider::Ollama => Some(json!({"format": schema})),
        Provider::Openai | Provider::OpenaiCompatible => Some(json!({
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "strict": false, "schema": schema},
            },
        })),
        Provider::Anthropic => None,
    }
}

/// The calls in a reply's text, the JSON document [`schema`] describes:
/// each call's tool name and arguments, in order. A reply that is not that
/// document is an error, said in a few words that quote none of it (it may
/// hold the contact's words).
pub fn read(text: &str) -> Result<Vec<(String, Value)>, String> {
    if text.trim().is_empty() {
        return Err("it is empty".into());
    }
    // serde_json's syntax errors say where, never what.
    let document: Value = serde_json::from_str(text.trim()).map_err(|e| format!("it is not JSON: {e}"))?;
    let Some(calls) = document.get("calls").and_then(Value::as_array) else {
        return Err("it has no `calls` list".into());
    };
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let name = call.get("name").and_then(Value::as_str).filter(|name| !name.trim().is_empty());
            let name = name.ok_or_else(|| format!("call {} names no tool", i + 1))?;
            Ok((name.to_string(), call.get("arguments").cloned().unwrap_or(Value::Null)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
        out.push(value);
        match value {
            Value::Object(object) => object.values().for_each(|v| walk(v, out)),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }

    /// Every tool but the stub is in the schema, with its name as the only
    /// value its `name` may take and its arguments' names and required ones as the
    /// tool's own schema has them; nothing any server refuses is in it.
    #[test]
    fn the_schema_holds_every_tool_in_a_form_every_server_takes() {
        let schema = schema(1);
        let calls = &schema["properties"]["calls"];
        assert_eq!(
            (calls["type"].as_str(), calls["minItems"].as_u64(), calls["maxItems"].as_u64()),
            (Some("array"), Some(1), Some(MAX_CALLS_PER_REPLY))
        );
        let branches = calls["items"]["anyOf"].as_array().unwrap();
        let definitions: Vec<_> =
            tools::definitions().into_iter().filter(|t| t.name != tools::ToolName::PlaceCall.as_str()).collect();
        assert_eq!(definitions.len(), tools::NAMES.len() - 1);
        assert_eq!(branches.len(), definitions.len());
        for (branch, tool) in branches.iter().zip(&definitions) {
            assert_eq!(branch["properties"]["name"], json!({"type": "string", "enum": [tool.name]}));
            assert_eq!(branch["required"], json!(["name", "arguments"]));
            let arguments = &branch["properties"]["arguments"];
            let names = |s: &Value| s["properties"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(names(arguments), names(&tool.parameters), "{}", tool.name);
            assert_eq!(arguments["required"], tool.parameters["required"], "{}", tool.name);
        }
        let mut all = Vec::new();
        walk(&schema, &mut all);
        for node in all.iter().filter_map(|v| v.as_object()) {
            for refused in ["oneOf", "$ref", "$defs", "minLength", "maxLength", "minimum", "default", "title"] {
                assert!(!node.contains_key(refused), "{refused} in {node:?}");
            }
            assert!(!node.get("type").is_some_and(Value::is_array), "a list of types: {node:?}");
            if node.get("type") == Some(&json!("object")) {
                assert_eq!(node.get("additionalProperties"), Some(&json!(false)), "{node:?}");
                assert!(node.contains_key("properties") && node.contains_key("required"), "{node:?}");
            }
        }
        assert_eq!(super::schema(0)["properties"]["calls"]["minItems"], 0);
    }

    /// Types and choices survive the rewriting: an argument that is a string
    /// or a whole number, an optional choice, a plain string.
    #[test]
    fn argument_types_become_single_types_under_any_of() {
        let schema = schema(1);
        let arguments = |tool: &str| {
            let branches = schema["properties"]["calls"]["items"]["anyOf"].as_array().unwrap();
            let branch = branches.iter().find(|b| b["properties"]["name"]["enum"][0] == tool).unwrap();
            branch["properties"]["arguments"]["properties"].clone()
        };
        let mark = arguments("mark_todo_item");
        assert_eq!(mark["todo_id"]["anyOf"], json!([{"type": "string"}, {"type": "integer"}]));
        assert_eq!(mark["status"]["enum"], json!(["pending", "in_progress", "completed", "skipped"]));
        let end = arguments("end_conversation");
        assert_eq!(
            end["outcome"]["anyOf"],
            json!([
                {"type": "string", "enum": ["achieved", "partially_achieved", "declined", "failed"]},
                {"type": "null"}
            ])
        );
        assert_eq!(arguments("send_message")["text"]["type"], "string");
        assert_eq!(
            arguments("schedule_next_heartbeat")["delay"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
    }

    /// Chat Completions gets `response_format`, Ollama's native API `format`,
    /// Anthropic nothing (the config refuses the mode there).
    #[test]
    fn each_provider_gets_the_schema_where_it_reads_it() {
        let schema = schema(1);
        for provider in [Provider::Openai, Provider::OpenaiCompatible] {
            let params = request_params(provider, schema.clone()).unwrap();
            let format = &params["response_format"];
            assert_eq!(format["type"], "json_schema");
            assert_eq!(format["json_schema"]["name"], SCHEMA_NAME);
            assert_eq!(format["json_schema"]["strict"], false);
            assert_eq!(format["json_schema"]["schema"], schema);
            assert_eq!(params.as_object().unwrap().len(), 1, "nothing else: {params}");
        }
        assert_eq!(request_params(Provider::Ollama, schema.clone()), Some(json!({"format": schema})));
        assert_eq!(request_params(Provider::Anthropic, schema), None);
    }

    #[test]
    fn a_reply_is_read_into_calls_or_refused_in_a_few_words() {
        let reply = r#" {"calls": [{"name": "send_message", "arguments": {"text": "Hi"}}, {"name": "place_call"}]} "#;
        assert_eq!(
            read(reply),
            Ok(vec![("send_message".into(), json!({"text": "Hi"})), ("place_call".into(), Value::Null)])
        );
        assert_eq!(read(r#"{"calls": []}"#), Ok(vec![]));
        let secret = "Friday at my flat, 12 Baker Street";
        for (reply, why) in [
            ("", "it is empty"),
            (secret, "it is not JSON"),
            (r#"{"calls": [{"name": "send_message", "arguments": {"text": "Friday at my"#, "it is not JSON"),
            (r#"{"name": "send_message", "arguments": {"text": "Friday"}}"#, "it has no `calls` list"),
            (r#"{"calls": [{"arguments": {"text": "Friday"}}]}"#, "call 1 names no tool"),
        ] {
            let error = read(reply).unwrap_err();
            assert!(error.starts_with(why), "{reply}: {error}");
            assert!(!error.contains("Friday") && !error.contains("Baker"), "the reply is quoted: {error}");
        }
    }
}
