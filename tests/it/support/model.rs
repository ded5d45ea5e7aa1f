//! A relay whose conversation agent talks to the scripted model server.

use serde_json::{Value, json};

use super::Relay;
use relay::scripted_model::{Responder, ScriptedModel};

/// A sandbox relay whose model is the scripted server.
pub fn with_model(responder: Responder) -> (Relay, ScriptedModel) {
    with_agent_settings(responder, json!({}))
}

/// The same, with these `agent` settings on top of the tests' fast retries.
pub fn with_agent_settings(responder: Responder, settings: Value) -> (Relay, ScriptedModel) {
    let model = ScriptedModel::start_on_thread(responder);
    let relay = Relay::sandbox();
    relay.ok(&["init", "--provider", "openai-compatible", "--model", "scripted", "--base-url", model.base_url()]);
    let path = relay.path().join("config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config["agent"] = json!({"retry_backoff_ms": 10, "max_retries": 2});
    for (key, value) in settings.as_object().unwrap() {
        config["agent"][key] = value.clone();
    }
    std::fs::write(&path, config.to_string()).unwrap();
    relay.ok(&["start"]);
    (relay, model)
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

pub fn outbox(relay: &Relay) -> Vec<String> {
    relay
        .json(&["sandbox", "outbox"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}
