//! What a model writes as text where it had to act: it is reminded once,
//! then a person is asked; and calls written as text, in the formats small
//! models use, are read and run (unless turned off), never text that is
//! not a call.

use std::sync::Arc;

use crate::support::model::*;
use crate::support::*;
use relay::scripted_model::{Reply, Responder, ScriptedModel, queue};
use serde_json::{Value, json};

/// What the model is told when it answered in plain text where it had to
/// act (src/agent/prompt.rs `act_through_tools`).
const REMINDER: &str = "you must act through your tools; your text reached no one";

/// A small model writes its message as plain text: relay tells it once, in
/// the same turn; it still sends nothing, so a person is asked. The
/// conversation never waits for a reply to a message that was not sent.
#[test]
fn a_model_that_answers_in_plain_text_is_told_once_then_a_person_is_asked() {
    let (relay, model) = with_tool_calls(
        queue(vec![
            Reply::Text("Hi! Which day suits you for the delivery?".into()),
            Reply::Text("Hi! Which day suits you?".into()),
            Reply::tool("send_message", json!({"text": "never reached: the turn is over"})),
        ]),
        "text",
    );
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(needs["intervention_reason"], "the model answered without using its tools");
    let states: Vec<&str> =
        needs["history"].as_array().unwrap().iter().map(|t| t["to_state"].as_str().unwrap()).collect();
    assert_eq!(states, ["CREATED", "ACTIVE", "NEEDS_HUMAN_INTERVENTION"], "never WAITING_FOR_REPLY");
    assert!(outbox(&relay).is_empty());
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "told once, not twice");
    let reminder = last_message(&requests[1]);
    assert_eq!(reminder["role"], "user");
    assert!(reminder["content"].as_str().unwrap().contains(REMINDER), "{reminder}");
    // The model's text stays in the turn, so it knows what it did.
    let messages = requests[1]["messages"].as_array().unwrap();
    assert!(messages.iter().any(|m| m["role"] == "assistant" && m.to_string().contains("Which day suits you for")));
    let shown = relay.ok(&["get", &id]);
    assert!(shown.contains("the model answered without using its tools"), "{shown}");
}

/// Told once, the model acts: the turn goes on and the conversation waits
/// for the contact, as if it had sent at once.
#[test]
fn a_model_reminded_to_use_its_tools_goes_on_in_the_same_turn() {
    let (relay, model) = with_model(queue(vec![
        Reply::Text("Hi! Which day suits you?".into()),
        Reply::tool("send_message", json!({"text": "Hi! Which day suits you?"})),
        Reply::Text("(done)".into()),
    ]));
    let id = relay.create(&[]);
    let waiting = relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    assert_eq!(outbox(&relay), ["Hi! Which day suits you?"]);
    assert_eq!(history_triggers(&waiting).last().unwrap(), "message_sent");
    assert_eq!(waiting["usage"]["model_calls"], 3, "one turn of three calls");
    assert!(last_message(&model.requests()[1])["content"].as_str().unwrap().contains(REMINDER));
}

/// Every kind of turn that has to speak gets the same rule: here the turn
/// after the operator's answer, and a follow-up.
#[test]
fn an_answered_turn_and_a_follow_up_in_plain_text_go_to_a_person_too() {
    let responder: Responder = Arc::new(|n, request| {
        let system = instructions(request);
        match n {
            0 => Reply::tool("request_human_intervention", json!({"reason": "pricing", "question": "10% off?"})),
            _ if system.contains("operator has answered") => Reply::Text("Good news: 10% off!".into()),
            _ => Reply::tool("send_message", json!({"text": "unexpected"})),
        }
    });
    let (relay, model) = with_model(responder);
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["answer", &id, "Yes"]);
    let needs = relay.wait_for(&id, "the answered turn", |i| {
        i["state"] == "NEEDS_HUMAN_INTERVENTION" && i["history"].as_array().unwrap().len() == 5
    });
    assert_eq!(needs["intervention_reason"], "the model answered without using its tools");
    assert!(outbox(&relay).is_empty());
    assert_eq!(model.requests().len(), 3, "the question, then the answered turn told once");

    // A follow-up turn: the model opens, then answers the heartbeat in text.
    let responder: Responder = Arc::new(|_, request| {
        if relay_note(request).contains("Write follow-up") {
            Reply::Text("Just checking in!".into())
        } else if last_message(request)["role"] == "tool" {
            Reply::Text(String::new())
        } else {
            Reply::tool("send_message", json!({"text": "Hello!"}))
        }
    });
    let (relay, _model) = with_model(responder);
    let id = relay.create(&["--heartbeat-interval", "1s", "--max-followups", "3"]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(needs["intervention_reason"], "the model answered without using its tools");
    assert_eq!(needs["follow_up_count"], 0, "no follow-up was sent");
    assert_eq!(outbox(&relay), ["Hello!"]);
}

/// Writes calls (name, arguments) as a model writes them in its text.
type WriteCalls = fn(&[(&str, Value)]) -> String;

/// The formats small models write their calls in.
fn text_formats() -> Vec<(&'static str, WriteCalls)> {
    fn objects(calls: &[(&str, Value)]) -> Vec<Value> {
        calls.iter().map(|(name, arguments)| json!({"name": name, "arguments": arguments})).collect()
    }
    fn python(value: &Value) -> String {
        match value {
            Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            other => other.to_string(),
        }
    }
    vec![
        ("hermes", |calls| objects(calls).iter().map(|o| format!("<tool_call>\n{o}\n</tool_call>\n")).collect()),
        ("bare JSON", |calls| objects(calls).iter().map(Value::to_string).collect::<Vec<_>>().join("\n")),
        ("arguments as a JSON string", |calls| {
            calls
                .iter()
                .map(|(name, arguments)| json!({"name": name, "arguments": arguments.to_string()}).to_string())
                .collect::<Vec<_>>()
                .join("\n")
        }),
        ("a JSON list", |calls| Value::Array(objects(calls)).to_string()),
        ("a fenced block", |calls| {
            format!(
                "Here you go:\n```json\n{}\n```",
                serde_json::to_string_pretty(&Value::Array(objects(calls))).unwrap()
            )
        }),
        ("python", |calls| {
            calls
                .iter()
                .map(|(name, arguments)| {
                    let arguments: Vec<String> =
                        arguments.as_object().unwrap().iter().map(|(k, v)| format!("{k}={}", python(v))).collect();
                    format!("{name}({})", arguments.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        }),
    ]
}

/// A model (with `model.tool_calls: text`) that writes its calls as text,
/// in each format models use: relay runs them as calls, the conversation
/// goes on, and the turn and the usage say the calls were read from text.
#[test]
fn calls_written_as_text_drive_a_conversation_in_every_format() {
    for (format, write) in text_formats() {
        let (relay, model) = with_tool_calls(
            queue(vec![
                Reply::Text(write(&[("send_message", json!({"text": "Hi! Which day suits you? It's \"urgent\"."}))])),
                Reply::Text(String::new()),
                Reply::Text(write(&[
                    ("mark_todo_item", json!({"todo_id": "1", "status": "completed", "answer": "Friday 3pm"})),
                    ("send_message", json!({"text": "Perfect, Friday 3pm.\nThank you!"})),
                ])),
                Reply::Text(String::new()),
            ]),
            "text",
        );
        let id = relay.create(&[]);
        relay.wait_for_state(&id, "WAITING_FOR_REPLY");
        relay.ok(&["sandbox", "say", CONTACT, "Friday 3pm works"]);
        let done = relay.wait_for(&id, "the reply turn's end", |i| {
            i["history"].as_array().unwrap().last().unwrap()["reason"] == "2 tool calls read from the model's text"
        });
        assert_eq!(done["todos"][0]["status"], "completed", "{format}");
        assert_eq!(done["todos"][0]["answer"], "Friday 3pm", "{format}");
        assert_eq!(
            outbox(&relay),
            ["Hi! Which day suits you? It's \"urgent\".", "Perfect, Friday 3pm.\nThank you!"],
            "{format}"
        );
        assert_eq!(done["usage"]["text_tool_calls"], 3, "{format}: {done:#}");
        // The turn says so, in the history (and so in `relay get`) and in the events.
        let reasons: Vec<&str> =
            done["history"].as_array().unwrap().iter().filter_map(|t| t["reason"].as_str()).collect();
        assert_eq!(reasons, ["1 tool call read from the model's text", "2 tool calls read from the model's text"]);
        assert!(relay.ok(&["get", &id]).contains("2 tool calls read from the model's text"), "{format}");
        let events = relay.ok(&["events", "--json"]);
        assert!(events.contains("1 tool call read from the model's text"), "{format}: {events}");
        // The model got tool results answering calls in its history.
        let messages = model.requests()[1]["messages"].as_array().unwrap().clone();
        let call = messages.iter().find(|m| m["role"] == "assistant" && m["tool_calls"].is_array()).unwrap();
        let id_sent = &call["tool_calls"][0]["id"];
        let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(&result["tool_call_id"], id_sent, "{format}");
        assert!(result["content"].to_string().contains("sent"), "{format}: {result}");
    }
}

/// Text that only looks like a call is none: nothing is done, and the
/// turn follows the rule for a model that answered without its tools.
#[test]
fn text_that_is_not_a_call_is_not_run() {
    let (relay, model) = with_tool_calls(
        queue(vec![
            Reply::Text("I will call send_message(\"Hi!\") now.".into()),
            Reply::Text("<tool_call>{\"name\": \"send_message\", \"arguments\": {\"text\": \"Hi</tool_call>".into()),
        ]),
        "text",
    );
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(needs["intervention_reason"], "the model answered without using its tools");
    assert!(outbox(&relay).is_empty());
    assert!(needs["usage"].get("text_tool_calls").is_none(), "{needs:#}");
    assert_eq!(model.requests().len(), 2);
}

/// `model.tool_calls: native` reads no calls from text: a call written as
/// text is plain text. So did the old `model.text_tool_calls: false`, which
/// a config may still hold (it maps to `native`).
#[test]
fn reading_calls_from_text_can_be_turned_off() {
    for (key, value) in [("tool_calls", json!("native")), ("text_tool_calls", json!(false))] {
        let model = ScriptedModel::start_on_thread(queue(vec![
            Reply::Text(r#"{"name": "send_message", "arguments": {"text": "Hi!"}}"#.into()),
            Reply::Text(r#"{"name": "send_message", "arguments": {"text": "Hi!"}}"#.into()),
        ]));
        let relay = Relay::sandbox();
        relay.ok(&["init", "--provider", "openai-compatible", "--model", "scripted", "--base-url", model.base_url()]);
        relay.edit_config(|config| {
            config["model"].as_object_mut().unwrap().remove("tool_calls");
            config["model"][key] = value.clone();
            config["agent"] = json!({"retry_backoff_ms": 10, "max_retries": 2});
        });
        relay.ok(&["start"]);
        let id = relay.create(&[]);
        let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
        assert_eq!(needs["intervention_reason"], "the model answered without using its tools", "{key}");
        assert!(outbox(&relay).is_empty(), "{key}");
        assert_eq!(model.requests()[0]["tool_choice"], "required", "{key}: native");
    }
}

/// A call to a tool that does not exist, written as text, is answered once
/// with the tools' signatures; the model then calls the right one.
#[test]
fn an_unknown_tool_written_as_text_is_answered_with_the_signatures() {
    let (relay, model) = with_tool_calls(
        queue(vec![
            Reply::Text(r#"{"name": "send", "arguments": {"message": "Hi!"}}"#.into()),
            Reply::Text(r#"send_message(text="Hi!")"#.into()),
            Reply::Text(String::new()),
        ]),
        "text",
    );
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    assert_eq!(outbox(&relay), ["Hi!"]);
    let result = last_message(&model.requests()[1]);
    assert_eq!(result["role"], "tool");
    assert_eq!(
        result["content"],
        "error: there is no tool 'send'; the tools are send_message(text), send_attachment(attachment_id, \
         caption?), mark_todo_item(todo_id, status, answer?, value?, quote?, media?), end_conversation(reason, outcome?, summary?), schedule_next_heartbeat(delay), place_call(), \
         request_human_intervention(reason, question?), contact_opted_out(reason)"
    );
}
