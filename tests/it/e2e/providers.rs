//! One whole conversation through each provider's own wire (issue 40): the
//! real binary on the sandbox, rig-core's client for that provider, and the
//! scripted model server speaking that provider's protocol. The contact
//! sends a photo; the model, which sees (`model.vision`), gets it in the
//! provider's shape, marks the todo with what it shows (a second look on
//! the same wire, shown the photo too, confirms it), thanks the contact and
//! ends the conversation, COMPLETED.

use base64::Engine;
use serde_json::{Value, json};

use crate::support::model::outbox;
use crate::support::*;
use relay::scripted_model::{Reply, ScriptedModel, queue};

/// How a provider's wire carries what the test checks.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Wire {
    /// Anthropic's Messages API.
    Messages,
    /// OpenAI's Chat Completions.
    ChatCompletions,
    /// Ollama's `/api/chat`.
    OllamaChat,
}

impl Wire {
    fn of(provider: &str) -> Wire {
        match provider {
            "anthropic" => Wire::Messages,
            "openai" | "openai-compatible" => Wire::ChatCompletions,
            "ollama" => Wire::OllamaChat,
            other => panic!("no provider {other}"),
        }
    }
}

/// A sandbox relay whose model is `model`, reached as `provider` (with a
/// model name and a key such an operator would give), making its calls as
/// `tool_calls` says, with fast retries (`max_retries`), started.
fn relay_on(provider: &str, model: &ScriptedModel, tool_calls: &str, max_retries: u32) -> Relay {
    let url = match Wire::of(provider) {
        Wire::Messages => model.anthropic_url(),
        Wire::ChatCompletions => model.base_url(),
        Wire::OllamaChat => model.ollama_url(),
    };
    let name = match provider {
        "anthropic" => "claude-haiku-4-5",
        "openai" => "gpt-4o-mini",
        _ => "qwen2.5vl",
    };
    let relay = Relay::sandbox();
    relay.ok(&["init", "--provider", provider, "--model", name, "--base-url", url, "--api-key", "sk-scripted"]);
    relay.edit_config(|config| {
        config["model"]["vision"] = json!(true);
        config["model"]["tool_calls"] = json!(tool_calls);
        config["agent"] = json!({"retry_backoff_ms": 10, "max_retries": max_retries, "reply_window_ms": 50});
    });
    relay.ok(&["start"]);
    relay
}

/// Runs the conversation with `provider` (as config.json names it) making
/// its tool calls as `tool_calls` says, and checks what went over its wire.
fn a_whole_conversation_with_a_photo(provider: &str, tool_calls: &str) {
    let wire = Wire::of(provider);
    let model = ScriptedModel::start_on_thread(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Could you send me a photo of the meter?"})),
        Reply::Text(String::new()),
        Reply::Tools(vec![
            (
                "mark_todo_item".into(),
                json!({"todo_id": "1", "status": "completed", "answer": "12345", "value": 12345, "media": "m1"}),
            ),
            ("send_message".into(), json!({"text": "Thanks, 12345 it is!"})),
        ]),
        Reply::tool("end_conversation", json!({"reason": "the reading is recorded", "outcome": "achieved"})),
    ]));
    let relay = relay_on(provider, &model, tool_calls, 0);
    let id = crate::e2e::typed_answers::ask_for_the_meter_reading(&relay);
    let id = id.as_str();
    relay.wait_for_state(id, "WAITING_FOR_REPLY");
    let photo = relay.path().join("meter.png");
    std::fs::write(&photo, crate::e2e::typed_answers::PHOTO).unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "the meter", "--image", photo.to_str().unwrap()]);
    // Ended, or handed over, or waiting again after the reply turn (which
    // fails below, with what the model was sent).
    let ended = ["COMPLETED", "ABANDONED", "FAILED", "NEEDS_HUMAN_INTERVENTION"];
    let done = relay.wait_for(id, "the end", |i| {
        ended.iter().any(|s| i["state"] == *s)
            || (i["state"] == "WAITING_FOR_REPLY" && i["usage"]["model_calls"].as_u64() >= Some(3))
    });

    // What relay did: the todo marked with what the photo shows, confirmed
    // by the second look, both messages sent, the conversation ended.
    let requests = model.requests();
    assert_eq!(done["state"], "COMPLETED", "{done:#}\nthe model was sent {requests:#?}");
    let todo = &done["todos"][0];
    assert_eq!((&todo["value"], &todo["check"]), (&json!(12345), &json!("verified")), "{todo:#}");
    assert_eq!(todo["evidence"][0]["media"], "m1");
    assert_eq!(outbox(&relay), ["Hi! Could you send me a photo of the meter?", "Thanks, 12345 it is!"]);
    // Four turns' calls and the second look, each 100 tokens in and 10 out,
    // as the provider reported them.
    assert_eq!(done["usage"], json!({"input_tokens": 500, "output_tokens": 50, "model_calls": 5}));

    // What went over the wire, in the provider's own shape.
    assert_eq!(requests.len(), 4, "{requests:#?}");
    for request in &requests {
        let system = system_prompt(wire, request);
        assert!(system.contains("Get the meter reading") && system.contains("The meter reading"), "{system}");
    }
    // Offered: every tool, but for the stub `place_call` when the calls
    // are asked for as JSON (its schema leaves it out).
    let offered = tool_names(wire, &requests[0]);
    let tools = if tool_calls == "json_schema" { 7 } else { 8 };
    assert_eq!(offered.len(), tools, "{offered:?}");
    assert!(offered.iter().any(|t| t == "mark_todo_item"), "{offered:?}");
    // A call is required until the turn has sent, as the wire says it.
    let choices: Vec<Value> = requests.iter().map(|r| r.get("tool_choice").cloned().unwrap_or(Value::Null)).collect();
    assert_eq!(choices, tool_choices(wire, tool_calls), "{provider}");
    // The photo, to the turn it came in and to the second look: its bytes,
    // as the wire carries an image.
    let png = base64::engine::general_purpose::STANDARD.encode(crate::e2e::typed_answers::PHOTO);
    assert!(images(wire, &requests[1]).is_empty(), "no photo before it came");
    assert_eq!(images(wire, &requests[2]), std::slice::from_ref(&png), "{:#}", requests[2]);
    let looks = model.verifications();
    assert_eq!(looks.len(), 1, "{looks:#?}");
    assert_eq!(images(wire, &looks[0]), [png], "{:#}", looks[0]);
    assert!(looks[0].get("tools").is_none() && looks[0].get("tool_choice").is_none(), "{:#}", looks[0]);
    // The reply turn's calls, in the history as the provider's calls, each
    // answered by its result.
    let made: Vec<String> = calls(wire, &requests[3]).into_iter().map(|(_, name)| name).collect();
    assert_eq!(made, ["mark_todo_item", "send_message"], "{:#}", requests[3]);
    let answered = results(wire, &requests[3]);
    assert_eq!(answered.len(), 2, "{:#}", requests[3]);
    if wire != Wire::OllamaChat {
        let ids: Vec<Option<String>> = calls(wire, &requests[3]).into_iter().map(|(id, _)| id).collect();
        assert_eq!(answered.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(), ids, "each result names its call");
    }
    let said: Vec<&str> = answered.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(said, ["todo 1 is now completed", "sent"]);
}

/// A server that is overloaded (529, Anthropic's "overloaded_error") is
/// asked again; its next answer, which reports tokens read from its cache
/// and comes late, writes the call as text (`model.tool_calls: text`),
/// which relay reads and runs. Usage adds up as the provider reported it.
fn an_overloaded_server_then_a_call_written_as_text(provider: &str) {
    let model = ScriptedModel::start_on_thread(queue(vec![
        Reply::Error(529, "Overloaded".into()),
        Reply::Cached(
            60,
            Box::new(Reply::After(
                std::time::Duration::from_millis(20),
                Box::new(Reply::Raw(
                    r#"<tool_call>{"name": "send_message", "arguments": {"text": "Hi there!"}}</tool_call>"#.into(),
                )),
            )),
        ),
        Reply::Text(String::new()),
    ]));
    let relay = relay_on(provider, &model, "text", 1);
    let id = relay.create(&[]);
    // The message is sent before the turn's last call: wait for that call too.
    let waiting = relay.wait_for(&id, "the turn's end", |i| {
        i["state"] == "WAITING_FOR_REPLY" && i["usage"]["model_calls"].as_u64() >= Some(2)
    });
    assert_eq!(outbox(&relay), ["Hi there!"]);
    assert_eq!(model.requests().len(), 3, "the refused call, again, and after the call");
    assert_eq!(
        waiting["usage"],
        json!({"input_tokens": 200, "cached_input_tokens": 60, "output_tokens": 20, "model_calls": 2, "text_tool_calls": 1})
    );
}

/// A key the provider refuses (401, in its error envelope) is not asked
/// again: the conversation goes to a person with the provider's words.
fn a_refused_key_hands_over_with_the_providers_words(provider: &str) {
    let model = ScriptedModel::start_on_thread(queue(vec![Reply::Error(401, "invalid x-api-key".into())]));
    let relay = relay_on(provider, &model, "native", 2);
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let reason = needs["intervention_reason"].as_str().unwrap();
    assert!(reason.contains("invalid x-api-key"), "{reason}");
    assert_eq!(model.requests().len(), 1, "a refused key is not retried");
}

macro_rules! each_provider {
    ($($provider:ident: $name:literal;)*) => {$(
        mod $provider {
            /// In native mode: the provider's own tool calls.
            #[test]
            fn a_whole_conversation_with_a_photo() {
                super::a_whole_conversation_with_a_photo($name, "native");
            }

            #[test]
            fn an_overloaded_server_then_a_call_written_as_text() {
                super::an_overloaded_server_then_a_call_written_as_text($name);
            }

            #[test]
            fn a_refused_key_hands_over_with_the_providers_words() {
                super::a_refused_key_hands_over_with_the_providers_words($name);
            }
        }
    )*};
}

each_provider! {
    anthropic: "anthropic";
    openai: "openai";
    openai_compatible: "openai-compatible";
    ollama: "ollama";
}

/// The local servers' default: the calls as one JSON document.
#[test]
fn a_whole_conversation_with_a_photo_on_openai_compatible_in_json_schema_mode() {
    a_whole_conversation_with_a_photo("openai-compatible", "json_schema");
}

#[test]
fn a_whole_conversation_with_a_photo_on_ollama_in_json_schema_mode() {
    a_whole_conversation_with_a_photo("ollama", "json_schema");
}

/// The `tool_choice` of each of the four calls: a call required in the
/// opening and in the reply, until the turn has sent. Ollama's API has none.
fn tool_choices(wire: Wire, tool_calls: &str) -> Vec<Value> {
    let (required, then) = match (wire, tool_calls) {
        (Wire::OllamaChat, _) => (Value::Null, Value::Null),
        (_, "json_schema") => (json!("none"), json!("none")),
        (Wire::Messages, _) => (json!({"type": "any"}), json!({"type": "auto"})),
        (Wire::ChatCompletions, _) => (json!("required"), json!("auto")),
    };
    vec![required.clone(), then.clone(), required, then]
}

fn messages(request: &Value) -> &[Value] {
    request["messages"].as_array().map(Vec::as_slice).unwrap_or_default()
}

/// A message's content as a list of parts (a string is one text part).
fn parts(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(parts) => parts.clone(),
        _ => vec![],
    }
}

/// The system prompt: Anthropic's `system` (text blocks), else the first
/// message, the system's.
fn system_prompt(wire: Wire, request: &Value) -> String {
    let text = |parts: Vec<Value>| parts.iter().filter_map(|p| p["text"].as_str()).collect::<String>();
    match wire {
        Wire::Messages => text(request["system"].as_array().cloned().unwrap_or_default()),
        Wire::ChatCompletions | Wire::OllamaChat => {
            let first = &messages(request)[0];
            assert_eq!(first["role"], "system");
            text(parts(first))
        }
    }
}

/// The tools offered: Anthropic's have `input_schema` beside their name;
/// the others are functions with `parameters`.
fn tool_names(wire: Wire, request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().unwrap();
    tools
        .iter()
        .map(|tool| {
            let (name, schema) = match wire {
                Wire::Messages => (&tool["name"], &tool["input_schema"]),
                Wire::ChatCompletions | Wire::OllamaChat => {
                    (&tool["function"]["name"], &tool["function"]["parameters"])
                }
            };
            assert_eq!(schema["type"], "object", "{tool}");
            name.as_str().unwrap().to_string()
        })
        .collect()
}

/// The images in the user's messages, as base64: Anthropic's `image`
/// blocks with a base64 source, Chat Completions' `image_url` parts with a
/// data URL, Ollama's `images`. Each says it is a PNG where the wire says.
fn images(wire: Wire, request: &Value) -> Vec<String> {
    let users = messages(request).iter().filter(|m| m["role"] == "user");
    match wire {
        Wire::Messages => users
            .flat_map(parts)
            .filter(|p| p["type"] == "image")
            .map(|p| {
                assert_eq!((&p["source"]["type"], &p["source"]["media_type"]), (&json!("base64"), &json!("image/png")));
                p["source"]["data"].as_str().unwrap().to_string()
            })
            .collect(),
        Wire::ChatCompletions => users
            .flat_map(parts)
            .filter(|p| p["type"] == "image_url")
            .map(|p| {
                let url = p["image_url"]["url"].as_str().unwrap();
                url.strip_prefix("data:image/png;base64,").unwrap_or_else(|| panic!("not a PNG data URL: {url}")).into()
            })
            .collect(),
        Wire::OllamaChat => users
            .flat_map(|m| m["images"].as_array().cloned().unwrap_or_default())
            .map(|i| i.as_str().unwrap().to_string())
            .collect(),
    }
}

/// The calls in the history's assistant messages: (id, name). Anthropic's
/// are `tool_use` blocks; the others' `tool_calls` (Ollama's without ids).
fn calls(wire: Wire, request: &Value) -> Vec<(Option<String>, String)> {
    let assistants = messages(request).iter().filter(|m| m["role"] == "assistant");
    let id = |v: &Value| v.as_str().map(str::to_string);
    match wire {
        Wire::Messages => assistants
            .flat_map(parts)
            .filter(|p| p["type"] == "tool_use")
            .map(|p| (id(&p["id"]), p["name"].as_str().unwrap().to_string()))
            .collect(),
        Wire::ChatCompletions | Wire::OllamaChat => assistants
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .map(|c| (id(&c["id"]), c["function"]["name"].as_str().unwrap().to_string()))
            .collect(),
    }
}

/// The tool results in the history: (the call they answer, their text).
/// Anthropic's are `tool_result` blocks in a user message; the others'
/// messages of role `tool`.
fn results(wire: Wire, request: &Value) -> Vec<(Option<String>, String)> {
    let text = |content: &Value| match content {
        Value::String(text) => text.clone(),
        parts => parts.as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect(),
    };
    let id = |v: &Value| v.as_str().map(str::to_string);
    match wire {
        Wire::Messages => messages(request)
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(parts)
            .filter(|p| p["type"] == "tool_result")
            .map(|p| (id(&p["tool_use_id"]), text(&p["content"])))
            .collect(),
        Wire::ChatCompletions | Wire::OllamaChat => messages(request)
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| (id(&m["tool_call_id"]), text(&m["content"])))
            .collect(),
    }
}
