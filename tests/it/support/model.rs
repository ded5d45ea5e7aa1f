//! A relay whose conversation agent talks to the scripted model server, and
//! the model scripts more than one test plays.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Relay;
use relay::scripted_model::{Reply, Responder, ScriptedModel, queue};

/// A sandbox relay whose model is the scripted server.
pub fn with_model(responder: Responder) -> (Relay, ScriptedModel) {
    with_agent_settings(responder, json!({}))
}

/// The same, with these `agent` settings on top of the tests' fast retries.
pub fn with_agent_settings(responder: Responder, settings: Value) -> (Relay, ScriptedModel) {
    started_with(responder, settings, |_| {})
}

/// The same, with `edit` made to the configuration last, before the start.
pub fn started_with(responder: Responder, settings: Value, edit: impl FnOnce(&mut Value)) -> (Relay, ScriptedModel) {
    let model = ScriptedModel::start_on_thread(responder);
    let relay = Relay::sandbox();
    use_model(&relay, &model, merged(json!({"retry_backoff_ms": 10, "max_retries": 2}), settings));
    relay.edit_config(edit);
    relay.ok(&["start"]);
    (relay, model)
}

/// A sandbox relay whose model is the scripted server, making its tool calls
/// as `mode` says (`model.tool_calls`: native, json_schema or text).
pub fn with_tool_calls(responder: Responder, mode: &str) -> (Relay, ScriptedModel) {
    let mode = mode.to_string();
    started_with(responder, json!({}), move |config| config["model"]["tool_calls"] = json!(mode))
}

/// Points an initialised relay (not started) at `model`, with exactly these `agent` settings.
pub fn use_model(relay: &Relay, model: &ScriptedModel, agent: Value) {
    relay.ok(&["init", "--provider", "openai-compatible", "--model", "scripted", "--base-url", model.base_url()]);
    relay.edit_config(|config| config["agent"] = agent);
}

/// `base` with every key of `over` set over it.
pub fn merged(mut base: Value, over: Value) -> Value {
    for (key, value) in over.as_object().unwrap() {
        base[key] = value.clone();
    }
    base
}

pub fn system_prompt(request: &Value) -> String {
    let system = &request["messages"][0];
    assert_eq!(system["role"], "system");
    match &system["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => panic!("unexpected system content {other}"),
    }
}

/// relay's note on the conversation now (time, todos' status, follow-ups,
/// why the model is called), at the end of the turn's last user message.
pub fn relay_note(request: &Value) -> String {
    let marker = ", not the contact:\nCurrent time";
    let messages = request["messages"].as_array().unwrap();
    let text = messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .find_map(|m| m["content"].as_str().filter(|t| t.contains(marker)).map(str::to_string))
        .unwrap_or_else(|| panic!("no relay note in {request:#}"));
    // The note opens with `(relay TAG, not the contact:`.
    let start = text[..text.rfind(marker).unwrap()].rfind("(relay ").unwrap();
    text[start..].to_string()
}

/// All relay tells the model in a request: the system prompt and the note.
pub fn instructions(request: &Value) -> String {
    format!("{}\n{}", system_prompt(request), relay_note(request))
}

pub fn last_message(request: &Value) -> Value {
    request["messages"].as_array().unwrap().last().unwrap().clone()
}

/// A model that opens each turn with `first(n)` (`n`: the request's number)
/// and, once a tool has answered, ends the turn with empty text.
pub fn each_turn(first: impl Fn(usize) -> Reply + Send + Sync + 'static) -> Responder {
    Arc::new(
        move |n, request| if last_message(request)["role"] == "tool" { Reply::Text(String::new()) } else { first(n) },
    )
}

/// A model whose every turn sends one message, `text(n)`, and waits for the
/// contact: the opening, then each follow-up.
pub fn sends_each_turn(text: impl Fn(usize) -> String + Send + Sync + 'static) -> Responder {
    each_turn(move |n| Reply::tool("send_message", json!({ "text": text(n) })))
}

/// A model that opens the conversation, records what the contact says
/// ("Friday 3pm") and ends it `achieved`, for this reason and summary.
pub fn completing_model(reason: &str, summary: &str) -> Responder {
    queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Which day suits you for the delivery?"})),
        Reply::Text(String::new()),
        Reply::Tools(vec![
            ("mark_todo_item".into(), json!({"todo_id": "1", "status": "completed", "note": "Friday 3pm"})),
            ("send_message".into(), json!({"text": "Perfect, Friday 3pm. Thank you!"})),
        ]),
        Reply::tool("end_conversation", json!({"reason": reason, "outcome": "achieved", "summary": summary})),
    ])
}

pub fn outbox(relay: &Relay) -> Vec<String> {
    relay
        .json(&["sandbox", "outbox"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}
