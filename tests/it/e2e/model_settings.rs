//! Per-model call settings (`model.temperature`, `model.max_output_tokens`,
//! `model.request_timeout_secs`) as the scripted model server receives them,
//! a config written when two of them lived under `agent`, and the cached
//! input tokens a server reports, summed in the conversation's usage; the
//! media settings and the voice notes' transcriber, as `relay init` writes
//! them and the daemon refuses them.

use std::sync::Arc;
use std::time::Duration;

use crate::support::model::*;
use crate::support::*;
use relay::scripted_model::{Reply, ScriptedModel, queue};
use serde_json::{Value, json};

fn config(relay: &Relay) -> Value {
    serde_json::from_str(&std::fs::read_to_string(relay.path().join("config.json")).unwrap()).unwrap()
}

/// A local server gets temperature 0.2 and the 1024-token limit when the
/// model section sets neither; the defaults are not written into config.json.
#[test]
fn a_local_model_gets_a_low_temperature_and_the_output_limit_by_default() {
    let (relay, model) = with_model(sends_each_turn(|_| "Hello!".into()));
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let requests = model.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(request["temperature"], 0.2, "{request:#}");
        assert_eq!(request["max_tokens"], 1024, "{request:#}");
    }
    let written = config(&relay);
    for key in ["temperature", "max_output_tokens", "request_timeout_secs"] {
        assert!(written["model"].get(key).is_none(), "{written:#}");
    }
}

/// What `relay init` sets is sent, and kept when init runs again for the
/// same provider.
#[test]
fn the_configured_temperature_and_output_limit_are_sent() {
    let model = ScriptedModel::start_on_thread(sends_each_turn(|_| "Hello!".into()));
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"retry_backoff_ms": 10, "max_retries": 2}));
    relay.ok(&["init", "--temperature", "0.7", "--max-output-tokens", "300", "--request-timeout", "90s"]);
    relay.ok(&["init", "--provider", "openai-compatible", "--model", "scripted"]);
    let written = config(&relay);
    assert_eq!(
        (&written["model"]["temperature"], &written["model"]["max_output_tokens"]),
        (&json!(0.7), &json!(300)),
        "{written:#}"
    );
    assert_eq!(written["model"]["request_timeout_secs"], 90, "{written:#}");
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    for request in &model.requests() {
        assert_eq!((&request["temperature"], &request["max_tokens"]), (&json!(0.7), &json!(300)), "{request:#}");
    }
}

/// Settings no call could be made with are refused by name.
#[test]
fn init_refuses_a_temperature_out_of_range() {
    let relay = Relay::sandbox();
    let base = ["init", "--provider", "openai-compatible", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"];
    let refused = relay.fails(&[&base[..], &["--temperature", "2.5"]].concat(), 2);
    assert!(refused.contains("model.temperature must be between 0 and 2"), "{refused}");
    let refused = relay.fails(&[&base[..], &["--max-output-tokens", "0"]].concat(), 2);
    assert!(refused.contains("model.max_output_tokens must be at least 1"), "{refused}");
}

/// A config.json written when `request_timeout_secs` and `max_output_tokens`
/// were `agent` settings still loads, and both take effect; the next
/// `relay init` writes them under `model` only.
#[test]
fn a_config_with_the_old_agent_settings_still_loads_and_uses_them() {
    // The first call is held far longer than the old timeout allows.
    let responder = Arc::new(|n, _: &Value| match n {
        0 => Reply::After(Duration::from_secs(30), Box::new(Reply::Text(String::new()))),
        _ => Reply::Text(String::new()),
    });
    let model = ScriptedModel::start_on_thread(responder);
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"max_retries": 0, "request_timeout_secs": 1, "max_output_tokens": 77}));
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let reason = needs["intervention_reason"].as_str().unwrap();
    assert!(reason.contains("no answer within 1s"), "{reason}");
    assert_eq!(model.requests()[0]["max_tokens"], 77);

    relay.ok(&["init"]);
    let written = config(&relay);
    assert_eq!(written["model"]["request_timeout_secs"], 1, "{written:#}");
    assert_eq!(written["model"]["max_output_tokens"], 77, "{written:#}");
    for key in ["request_timeout_secs", "max_output_tokens"] {
        assert!(written["agent"].get(key).is_none(), "{written:#}");
    }
}

/// Every config written before held the old defaults (60 s, 1024) under
/// `agent`, chosen or not: they move nowhere, so a local server gets its own
/// default timeout (300 s), not 60 s.
#[test]
fn the_old_defaults_are_not_carried_over_as_choices() {
    let model = ScriptedModel::start_on_thread(sends_each_turn(|_| "Hello!".into()));
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"request_timeout_secs": 60, "max_output_tokens": 1024}));
    relay.ok(&["init"]);
    let written = config(&relay);
    for key in ["request_timeout_secs", "max_output_tokens"] {
        assert!(written["model"].get(key).is_none() && written["agent"].get(key).is_none(), "{written:#}");
    }
}

/// The model section's own setting wins over the old `agent` one.
#[test]
fn the_model_sections_setting_wins_over_the_old_agent_one() {
    let model = ScriptedModel::start_on_thread(sends_each_turn(|_| "Hello!".into()));
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"retry_backoff_ms": 10, "max_output_tokens": 77}));
    relay.edit_config(|config| config["model"]["max_output_tokens"] = json!(500));
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    assert_eq!(model.requests()[0]["max_tokens"], 500);
}

/// The input tokens a server reports as read from its cache are summed in
/// the conversation's usage and shown by `relay get`.
#[test]
fn cached_input_tokens_are_summed_in_the_usage() {
    let script = completing_model("the day is agreed", "delivery day confirmed");
    let (relay, _model) = with_model(Arc::new(move |n, request| Reply::Cached(60, Box::new(script(n, request)))));
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "Friday 3pm works"]);
    let done = relay.wait_for_state(&id, "COMPLETED");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 400, "cached_input_tokens": 240, "output_tokens": 40, "model_calls": 4})
    );
    let shown = relay.ok(&["get", &id]);
    assert!(shown.contains("4 model calls, 400 input (240 cached) + 40 output tokens"), "{shown}");
}

/// A server that reports no cache: no `cached_input_tokens`, nothing said.
#[test]
fn no_cached_tokens_reported_means_none_shown() {
    let (relay, _model) = with_model(queue(vec![Reply::tool("send_message", json!({"text": "Hi"}))]));
    let id = relay.create(&[]);
    let waiting = relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    assert!(waiting["usage"].get("cached_input_tokens").is_none(), "{waiting:#}");
    assert!(!relay.ok(&["get", &id]).contains("cached"));
}

/// `relay init` writes `model.tool_calls`: the provider's default
/// (json_schema for openai-compatible and ollama, native for anthropic and
/// openai), or what `--tool-calls` says, kept when init runs again.
#[test]
fn init_writes_how_the_model_makes_its_tool_calls() {
    let relay = Relay::sandbox();
    let local = ["init", "--provider", "openai-compatible", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"];
    let said = relay.ok(&local);
    assert!(said.contains("tool calls: json_schema"), "{said}");
    assert_eq!(config(&relay)["model"]["tool_calls"], "json_schema");
    relay.ok(&["init", "--tool-calls", "text"]);
    relay.ok(&["init", "--temperature", "0.5"]);
    assert_eq!(config(&relay)["model"]["tool_calls"], "text", "kept");
    relay.ok(&["init", "--provider", "openai", "--model", "gpt-4o-mini", "--api-key-env", "RELAY_TEST_KEY"]);
    assert_eq!(config(&relay)["model"]["tool_calls"], "native", "a new provider's default");
    let refused = relay.fails(&["init", "--provider", "anthropic", "--model", "m", "--tool-calls", "json_schema"], 2);
    assert!(
        refused.contains("model.tool_calls \"json_schema\" is for Chat Completions servers and Ollama"),
        "{refused}"
    );
}

/// A config written before `model.tool_calls` may hold `text_tool_calls`:
/// `true` reads calls written as text, as it did (`tool_calls: text`: the
/// tools offered with "auto", a call in the text run); the next `relay
/// init` writes it as `tool_calls`. Set beside a `tool_calls` that says
/// otherwise, or to a value that is none of the modes, it is refused by name.
#[test]
fn an_old_text_tool_calls_setting_still_works_and_is_rewritten() {
    let model = ScriptedModel::start_on_thread(queue(vec![
        Reply::Text(r#"<tool_call>{"name": "send_message", "arguments": {"text": "Hi!"}}</tool_call>"#.into()),
        Reply::Text(String::new()),
    ]));
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"retry_backoff_ms": 10, "max_retries": 2}));
    relay.edit_config(|config| {
        config["model"].as_object_mut().unwrap().remove("tool_calls");
        config["model"]["text_tool_calls"] = json!(true);
    });
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    let waiting = relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    assert_eq!(waiting["usage"]["text_tool_calls"], 1);
    assert_eq!(model.requests()[0]["tool_choice"], "auto");
    assert!(model.requests()[0].get("response_format").is_none());
    relay.ok(&["stop"]);

    relay.ok(&["init"]);
    let written = config(&relay);
    assert_eq!(written["model"]["tool_calls"], "text", "{written:#}");
    assert!(written["model"].get("text_tool_calls").is_none(), "{written:#}");

    relay.edit_config(|config| config["model"]["text_tool_calls"] = json!(false));
    let refused = relay.fails(&["start"], 2);
    assert!(
        refused.contains("model.text_tool_calls (false) and model.tool_calls (\"text\") disagree")
            && refused.contains("relay init --tool-calls text"),
        "{refused}"
    );
    relay.ok(&["init", "--tool-calls", "native"]);
    assert_eq!(config(&relay)["model"]["tool_calls"], "native");
    assert!(config(&relay)["model"].get("text_tool_calls").is_none());

    relay.edit_config(|config| config["model"]["tool_calls"] = json!("xml"));
    let refused = relay.fails(&["start"], 2);
    assert!(refused.contains("model.tool_calls: unknown variant `xml`"), "{refused}");
}

/// `relay init --transcription-url` writes the transcriber, with a known
/// server's model by default (whisper-1 at OpenAI, whisper-large-v3-turbo at
/// Groq); another server must name its model. Run again, init keeps it; a
/// new URL asks for the model and key anew and keeps the language;
/// `--no-transcription` removes it. The key is never printed.
#[test]
fn init_writes_the_transcriber_and_removes_it() {
    let relay = Relay::sandbox();
    assert!(config(&relay)["media"].get("transcription").is_none(), "none by default");
    assert_eq!(config(&relay)["media"]["keep"], "90d");
    let said = relay.ok(&[
        "init",
        "--transcription-url",
        "https://api.openai.com/v1/",
        "--transcription-key-env",
        "RELAY_TEST_STT_KEY",
        "--transcription-language",
        "ES",
    ]);
    assert!(
        said.contains("Transcription: whisper-1 at https://api.openai.com/v1 (key from $RELAY_TEST_STT_KEY"),
        "{said}"
    );
    let openai = json!({
        "base_url": "https://api.openai.com/v1",
        "model": "whisper-1",
        "api_key_env": "RELAY_TEST_STT_KEY",
        "language": "es",
        "request_timeout_secs": 120
    });
    assert_eq!(config(&relay)["media"]["transcription"], openai);
    relay.ok(&["init", "--temperature", "0.5", "--provider", "ollama", "--model", "m"]);
    assert_eq!(config(&relay)["media"]["transcription"], openai, "kept by an init that does not name it");

    relay.ok(&["init", "--transcription-url", "https://api.groq.com/openai/v1"]);
    assert_eq!(
        config(&relay)["media"]["transcription"],
        json!({
            "base_url": "https://api.groq.com/openai/v1",
            "model": "whisper-large-v3-turbo",
            "language": "es",
            "request_timeout_secs": 120
        })
    );

    let refused = relay.fails(&["init", "--transcription-url", "http://127.0.0.1:9/v1"], 2);
    assert!(refused.contains("--transcription-model"), "{refused}");
    assert_eq!(config(&relay)["media"]["transcription"]["model"], "whisper-large-v3-turbo", "unchanged");
    relay.ok(&["init", "--transcription-url", "http://127.0.0.1:9/v1", "--transcription-model", "tiny.en"]);
    assert_eq!(config(&relay)["media"]["transcription"]["model"], "tiny.en");
    assert_eq!(relay.json(&["init"])["transcription"], "tiny.en at http://127.0.0.1:9/v1");

    let refused = relay.fails(&["init", "--transcription-language", "Spanish"], 2);
    assert!(refused.contains("media.transcription.language must be"), "{refused}");
    let refused = relay.fails(&["init", "--transcription-url", "api.openai.com/v1"], 2);
    assert!(refused.contains("media.transcription.base_url must be"), "{refused}");
    relay.fails(&["init", "--no-transcription", "--transcription-url", "https://api.openai.com/v1"], 2);

    let said = relay.ok(&["init", "--no-transcription"]);
    assert!(said.contains("Transcription: none."), "{said}");
    assert!(config(&relay)["media"].get("transcription").is_none());
    let refused = relay.fails(&["init", "--transcription-model", "whisper-1"], 2);
    assert!(refused.contains("--transcription-url"), "{refused}");
}

/// A media setting no file could be fetched or kept with, or a key the
/// section does not have, stops the daemon before it starts, naming it;
/// `relay doctor` says the same.
#[test]
fn a_wrong_media_setting_is_refused_by_name() {
    let relay = Relay::sandbox();
    relay.edit_config(|config| config["media"]["download_attempts"] = json!(0));
    let refused = relay.fails(&["start"], 2);
    assert!(refused.contains("media.download_attempts must be at least 1"), "{refused}");
    let report = relay.run(&["doctor", "--offline", "--json"]);
    assert!(report.stdout.contains("media.download_attempts must be at least 1"), "{}", report.stdout);

    relay.edit_config(|config| config["media"] = json!({"keep": "three months"}));
    let refused = relay.fails(&["start"], 2);
    assert!(refused.contains("media.keep: 'three months' is not a duration"), "{refused}");
    relay.edit_config(|config| config["media"] = json!({"keep": "5m"}));
    let refused = relay.fails(&["start"], 2);
    assert!(refused.contains("media.keep must be from 1h to 3650d (it is 5m"), "{refused}");
    relay.edit_config(|config| config["media"] = json!({"max_size": 10}));
    let refused = relay.fails(&["start"], 2);
    assert!(refused.contains("unknown field `max_size`"), "{refused}");
    relay.edit_config(|config| config["model"] = json!({"provider": "ollama", "name": "m", "vision": "yes"}));
    relay.edit_config(|config| config["media"] = json!({}));
    let refused = relay.fails(&["start"], 2);
    assert!(refused.contains("model.vision"), "{refused}");
}
