//! A provider that refuses, fails or cannot be reached hands the
//! conversation to a person with the reason, retries a bounded number of
//! times, and never shows or writes the key or the prompt it echoes.

use std::sync::Arc;

use crate::support::model::*;
use crate::support::*;
use relay::scripted_model::{Reply, Responder, queue};
use serde_json::json;

#[test]
fn a_model_that_rejects_the_key_hands_over_to_a_human_with_the_reason() {
    let (relay, model) = with_model(queue(vec![Reply::Error(401, "Incorrect API key provided".into())]));
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let reason = needs["intervention_reason"].as_str().unwrap();
    assert!(reason.contains("401") || reason.contains("Incorrect API key"), "{reason}");
    assert_eq!(model.requests().len(), 1, "a rejected key is not retried");
    let status = relay.json(&["status"]);
    assert_eq!(status["model"], "openai-compatible/scripted");
    assert!(
        status["model_error"].as_str().is_some_and(|e| e.contains("401") || e.contains("Incorrect API key")),
        "{status:#}"
    );
}

#[test]
fn server_errors_are_retried_a_bounded_number_of_times() {
    let (relay, model) = with_model(queue(vec![
        Reply::Error(500, "overloaded".into()),
        Reply::Error(503, "overloaded".into()),
        Reply::Error(500, "overloaded".into()),
    ]));
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert!(needs["intervention_reason"].as_str().unwrap().contains("overloaded"));
    assert_eq!(model.requests().len(), 3, "the first call and max_retries (2) retries");
}

#[test]
fn an_unreachable_provider_is_a_clear_reason() {
    let relay = Relay::sandbox();
    let port = free_port();
    relay.ok(&[
        "init",
        "--provider",
        "openai-compatible",
        "--model",
        "m",
        "--base-url",
        &format!("http://127.0.0.1:{port}/v1"),
    ]);
    relay.edit_config(|config| config["agent"] = json!({"retry_backoff_ms": 1, "max_retries": 1}));
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert!(
        needs["intervention_reason"].as_str().unwrap().starts_with("the model failed: openai-compatible/m:"),
        "{needs:#}"
    );
}

#[test]
fn keys_stay_out_of_status_get_and_the_log() {
    let (relay, _model) = with_model(queue(vec![Reply::tool("send_message", json!({"text": "Hi!"}))]));
    relay.ok(&["stop"]);
    relay.ok(&["init", "--api-key", "sk-very-secret-key"]);
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    for out in [relay.ok(&["status", "--json"]), relay.ok(&["get", &id, "--json"]), relay.ok(&["init", "--json"])] {
        assert!(!out.contains("sk-very-secret"), "{out}");
    }
    assert_eq!(file_mode(&relay.path().join("config.json")), 0o600);
    assert!(!std::fs::read_to_string(relay.path().join("relay.log")).unwrap().contains("sk-very-secret"));
}

/// A server that echoes the key in its error (as some answer a 401) does not
/// get it shown or written anywhere: not in get, status, doctor, the events,
/// the conversation's file or relay.log.
#[test]
fn a_key_the_server_echoes_is_nowhere() {
    const KEY: &str = "sk-SECRET-abcdef123456";
    let echo = format!("{{\"error\":{{\"message\":\"Incorrect API key provided: Bearer {KEY}\"}}}}");
    let (relay, _model) = with_model(Arc::new(move |_, _| Reply::Error(401, echo.clone())));
    relay.ok(&["stop"]);
    relay.ok(&["init", "--api-key", KEY]);
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert!(needs["intervention_reason"].as_str().unwrap().contains("[key removed]"), "{needs:#}");
    let doctor = relay.run(&["doctor", "--json"]);
    for out in [
        relay.ok(&["get", &id]),
        relay.ok(&["status", "--json"]),
        relay.ok(&["events", "--json"]),
        doctor.stdout.clone(),
        doctor.stderr.clone(),
    ] {
        assert!(!out.contains(KEY), "{out}");
    }
    for file in walk_files(relay.path()) {
        if file.ends_with("config.json") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(KEY), "{} holds the key", file.display());
    }
}

fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(walk_files(&path)) } else { out.push(path) }
    }
    out
}

/// A server that echoes the whole prompt in its error body (llama-cpp's 500
/// did, 9,776 characters): the operator gets a short excerpt with none of
/// the prompt, in the conversation, `relay status` and relay.log.
#[test]
fn an_error_body_that_echoes_the_prompt_is_cut_and_keeps_it_out() {
    let responder: Responder = Arc::new(|_, request| Reply::Error(500, system_prompt(request).repeat(4)));
    let (relay, model) = with_model(responder);
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let prompt = system_prompt(&model.requests()[0]);
    let reason = needs["intervention_reason"].as_str().unwrap().to_string();
    let status = relay.json(&["status"]);
    let model_error = status["model_error"].as_str().unwrap().to_string();
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    for (what, text) in [("intervention_reason", &reason), ("model_error", &model_error)] {
        assert!(text.contains("500"), "{what}: {text}");
        assert!(text.chars().count() < 500, "{what} is {} characters: {text}", text.chars().count());
    }
    for line in prompt.lines().filter(|l| l.chars().count() >= 20) {
        for (what, text) in [("intervention_reason", &reason), ("model_error", &model_error), ("relay.log", &log)] {
            assert!(!text.contains(line), "{what} holds the prompt's {line:?}");
        }
    }
}
