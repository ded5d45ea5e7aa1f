//! The conversation agent end to end: the real binary, the sandbox channel,
//! and rig-core's real OpenAI client talking to the scripted model server,
//! whose recorded requests show what relay sent.

use std::sync::Arc;

use crate::support::model::*;
use crate::support::*;
use relay::scripted_model::{Reply, Responder, ScriptedModel, queue};
use serde_json::{Value, json};

/// PRD success criterion 1: CREATED to COMPLETED with no manual intervention.
#[test]
fn a_conversation_runs_to_completion_on_its_own() {
    let (relay, model) = with_model(completing_model("the day is agreed", "delivery day confirmed"));
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "Friday 3pm works"]);
    let done = relay.wait_for_state(&id, "COMPLETED");

    assert_eq!(done["summary"], "delivery day confirmed");
    assert_eq!(done["todos"][0]["status"], "completed");
    assert_eq!(done["todos"][0]["answer"], "Friday 3pm");
    assert_eq!(done["usage"], json!({"input_tokens": 400, "output_tokens": 40, "model_calls": 4}));
    assert_eq!(outbox(&relay), ["Hi! Which day suits you for the delivery?", "Perfect, Friday 3pm. Thank you!"]);
    assert!(relay.ok(&["get", &id]).contains("Friday 3pm"), "get shows the todo's note");

    let requests = model.requests();
    assert_eq!(requests.len(), 4, "the turn stops right after end_conversation");
    // What the model was given: the tools, exactly, but for the stub
    // `place_call`, which a local server's json_schema mode does not offer.
    let tools: Vec<&str> =
        requests[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "send_message",
            "send_attachment",
            "mark_todo_item",
            "end_conversation",
            "schedule_next_heartbeat",
            "request_human_intervention",
            "contact_opted_out"
        ]
    );
    // What local servers need (llama-cpp-python offers no tools without
    // `tool_choice`, and refuses a system content that is a list): both, in
    // every request. "none": by default an openai-compatible server is asked
    // for the calls as JSON (`model.tool_calls: json_schema`, tests/it/e2e/tool_calls.rs).
    for request in &requests {
        assert_eq!(request["tool_choice"], "none");
        assert!(request["messages"][0]["content"].is_string(), "{:#}", request["messages"][0]);
    }
    let send = &requests[0]["tools"][0]["function"];
    assert_eq!(send["parameters"]["required"], json!(["text"]));
    assert_eq!(send["parameters"]["additionalProperties"], false);
    assert_eq!(send["parameters"]["properties"]["text"]["maxLength"], 4096);
    let system = system_prompt(&requests[0]);
    assert!(
        system.contains("Confirm the delivery date") && system.contains("id \"1\": Ask which day suits"),
        "{system}"
    );
    let note = relay_note(&requests[0]);
    assert!(note.contains("id \"1\" [pending]") && note.contains("write your first message"), "{note}");
    // Nothing that changes from turn to turn is in the system prompt, so a
    // server's prompt cache keeps it (and the tools after it) across turns.
    assert!(requests.iter().all(|r| system_prompt(r) == system), "one system prompt in every turn");
    // The reply turn: the history as chat turns, the contact's words only as the user's.
    let reply_turn = &requests[2];
    assert!(!system_prompt(reply_turn).contains("Friday 3pm works"));
    let messages = reply_turn["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(last["content"].as_str().unwrap().starts_with("Friday 3pm works\n\n(relay "), "{last}");
    assert!(
        messages.iter().any(|m| m["role"] == "assistant" && m["content"].to_string().contains("Which day suits you"))
    );
}

/// PRD success criterion 2: follow-ups at the interval, then ABANDONED.
#[test]
fn a_silent_contact_gets_exactly_max_followups() {
    let (relay, model) = with_model(sends_each_turn(|n| format!("message {n}")));
    let id = relay.create(&["--heartbeat-interval", "1s", "--max-followups", "2"]);
    let abandoned = relay.wait_for_state(&id, "ABANDONED");
    assert_eq!(outbox(&relay).len(), 3, "exactly 1 + max_followups messages");
    assert_eq!(abandoned["follow_up_count"], 2, "the follow-ups sent");
    assert_eq!(abandoned["summary"], "The contact did not reply, even after 2 follow-ups.");
    // Each follow-up turn is two calls (send_message, then the closing text):
    // count the turns' first calls, those not answering a tool result.
    let followups: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| r["messages"].as_array().unwrap().last().unwrap()["role"] != "tool")
        .map(relay_note)
        .filter(|s| s.contains("Write follow-up"))
        .collect();
    assert_eq!(followups.len(), 2);
    assert!(followups[0].contains("follow-up 1 of 2") && followups[1].contains("follow-up 2 of 2"));
}

/// Many turns at once (heartbeats due together, a burst of creates) share
/// `agent.max_concurrent_model_calls` model calls; the rest wait their turn.
#[test]
fn model_calls_in_flight_never_exceed_the_configured_limit() {
    let hello = sends_each_turn(|_| "Hello!".into());
    let responder: Responder =
        Arc::new(move |n, request| Reply::After(std::time::Duration::from_millis(200), Box::new(hello(n, request))));
    let (relay, model) = with_agent_settings(responder, json!({"max_concurrent_model_calls": 2}));
    let contacts = ["+56912345678", "+56912345679", "+56912345670", "+447911123456", "+447911123457", "+14155552671"];
    let ids: Vec<String> = contacts
        .iter()
        .map(|c| {
            relay.ok(&["create", "--objective", "Say hello", "--contact", c, "--todo", "Greet"]).trim().to_string()
        })
        .collect();
    for id in &ids {
        relay.wait_for_state(id, "WAITING_FOR_REPLY");
    }
    assert_eq!(outbox(&relay).len(), contacts.len(), "every conversation got its turn");
    assert_eq!(model.most_in_flight(), 2, "two calls at a time, and never more");
}

#[test]
fn asking_for_a_human_then_relay_send_waits_again() {
    let (relay, _model) = with_model(queue(vec![Reply::tool(
        "request_human_intervention",
        json!({"reason": "they want a refund; I cannot decide"}),
    )]));
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(needs["intervention_reason"], "they want a refund; I cannot decide");
    assert!(relay.ok(&["get", &id]).contains("they want a refund"));
    relay.ok(&["send", &id, "Hello, I am the manager."]);
    let waiting = relay.get(&id);
    assert_eq!(waiting["state"], "WAITING_FOR_REPLY");
    assert!(waiting["next_heartbeat_at"].is_string());
}

#[test]
fn a_restarted_daemon_gives_the_model_the_whole_conversation() {
    let (relay, model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Which day suits you?"})),
        Reply::Text(String::new()),
        Reply::Text(String::new()),
    ]));
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["stop"]);
    relay.ok(&["start"]);
    relay.ok(&["sandbox", "say", CONTACT, "Who is this?"]);
    relay.wait_for(&id, "the reply turn", |i| i["usage"]["model_calls"].as_u64() >= Some(3));
    let after_restart = &model.requests()[2];
    let messages = after_restart["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "assistant", "user"]);
    assert!(messages[1]["content"].to_string().contains("Which day suits you?"));
    assert!(messages[2]["content"].as_str().unwrap().starts_with("Who is this?\n\n(relay "));
}

#[test]
fn unknown_tools_and_recipient_arguments_send_nothing_to_anyone() {
    let (relay, model) = with_model(queue(vec![
        Reply::Tools(vec![
            ("send_message".into(), json!({"text": "hi", "to": OTHER_CONTACT})),
            ("forward_message".into(), json!({"contact": OTHER_CONTACT, "text": "hi"})),
            ("place_call".into(), json!({"number": OTHER_CONTACT})),
        ]),
        Reply::Text(String::new()),
    ]));
    let id = relay.create(&[]);
    // Nothing went out, so relay does not wait for a reply: a person is asked.
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert!(outbox(&relay).is_empty(), "nothing reached anyone");
    assert_eq!(needs["intervention_reason"], "nothing the model tried to send went out");
    // The model was told why, call by call.
    let results: Vec<String> = model.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0],
        "\"error: send_message: `to` is not an argument of this tool (its arguments are `text`); nothing was done. \
         Call it as send_message(text)\""
    );
    assert!(results[1].contains("there is no tool 'forward_message'"), "{}", results[1]);
    assert!(results[2].contains("`number` is not an argument of this tool (it takes none)"), "{}", results[2]);
}

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

/// `--max-followups 1`: one follow-up goes out, the count says 1, and the
/// summary says what happened.
#[test]
fn one_follow_up_allowed_is_one_sent_and_counted() {
    let (relay, _model) = with_model(sends_each_turn(|_| "Are you there?".into()));
    let id = relay.create(&["--heartbeat-interval", "1s", "--max-followups", "1"]);
    let abandoned = relay.wait_for_state(&id, "ABANDONED");
    assert_eq!(outbox(&relay).len(), 2, "the opening and one follow-up");
    assert_eq!(abandoned["follow_up_count"], 1);
    assert_eq!(abandoned["summary"], "The contact did not reply, even after 1 follow-up.");
    let shown = relay.ok(&["get", &id]);
    assert!(shown.contains("1 sent"), "{shown}");
}

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

#[test]
fn the_demo_runs_a_whole_conversation_and_says_it_is_simulated() {
    let relay = Relay::uninitialised();
    let run = relay.run(&["demo"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("SIMULATED: the model is a scripted model server and the contact is scripted too"));
    assert!(run.stdout.contains("ACTIVE -> COMPLETED (end_conversation)"), "{}", run.stdout);
    assert!(run.stdout.contains("[x] 2. Agree on a time window: Friday, around 3pm"), "{}", run.stdout);
    // --json: the final conversation, as one document.
    let done: Value = serde_json::from_str(&relay.ok(&["demo", "--json"])).unwrap();
    assert_eq!(done["state"], "COMPLETED");
    assert!(done["todos"].as_array().unwrap().iter().all(|t| t["status"] == "completed"));
}

/// WhatsApp not linked: with a model, the conversation neither sends nor
/// fails nor goes to a person; it waits, saying why, and no model call is made.
#[test]
fn a_conversation_waits_for_an_unlinked_whatsapp_and_says_why() {
    let model = ScriptedModel::start_on_thread(queue(vec![Reply::tool("send_message", json!({"text": "Hi!"}))]));
    let relay = Relay::init("whatsapp");
    relay.ok(&["init", "--provider", "openai-compatible", "--model", "scripted", "--base-url", model.base_url()]);
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    let waiting = relay.wait_for(&id, "a channel_blocked reason", |i| i["channel_blocked"].is_string());
    // Not started: relay cannot even ask WhatsApp whether it may write first.
    assert_eq!(waiting["state"], "CREATED");
    assert!(waiting["channel_blocked"].as_str().unwrap().contains("relay init"), "{waiting}");
    assert!(model.requests().is_empty(), "no turn runs while nothing can be sent");
    let shown = relay.ok(&["get", &id]);
    assert!(shown.contains("waiting     WhatsApp is not linked"), "{shown}");
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

/// The tool results the model was given in request `n`, as text.
fn tool_results(model: &ScriptedModel, n: usize) -> Vec<String> {
    model.requests()[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

/// A turn may not send the same message twice (the same words, whatever the
/// spacing or case): a person would get it twice.
#[test]
fn a_turn_never_sends_the_same_message_twice() {
    let (relay, model) = with_model(queue(vec![
        // Each after a mark, which lets a turn write again (one message a turn otherwise).
        Reply::Tools(vec![
            ("send_message".into(), json!({"text": "Which day suits you?"})),
            ("mark_todo_item".into(), json!({"todo_id": "1", "status": "in_progress"})),
            ("send_message".into(), json!({"text": "which  day suits you? "})),
            ("mark_todo_item".into(), json!({"todo_id": "1", "status": "in_progress"})),
            ("send_message".into(), json!({"text": "And what time?"})),
        ]),
        Reply::Text(String::new()),
    ]));
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    assert_eq!(outbox(&relay), ["Which day suits you?", "And what time?"]);
    let results = tool_results(&model, 1);
    assert!(results[2].contains("this turn already sent that same message"), "{}", results[2]);
}

/// "Achieved" while todos are still pending is refused, with the count: the
/// conversation goes on until the model marks them or says otherwise.
#[test]
fn achieved_with_todos_pending_is_refused_until_they_are_marked() {
    let (relay, model) = with_model(queue(vec![
        Reply::Tools(vec![
            ("send_message".into(), json!({"text": "Hi! Which day suits you?"})),
            ("end_conversation".into(), json!({"reason": "done", "outcome": "achieved"})),
        ]),
        Reply::Text(String::new()),
        Reply::Tools(vec![
            ("mark_todo_item".into(), json!({"todo_id": "1", "status": "completed", "answer": "Friday"})),
            ("end_conversation".into(), json!({"reason": "done", "outcome": "achieved"})),
        ]),
    ]));
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "Friday"]);
    let ended = relay.wait_for_state(&id, "COMPLETED");
    let results = tool_results(&model, 1);
    assert!(results[1].contains("not ended: 1 todo is still pending"), "{}", results[1]);
    assert_eq!(ended["outcome"], "achieved");
    assert_eq!(ended["todos"][0]["status"], "completed");
}

/// An answer is what someone said: before the contact has written (or the
/// operator answered), "completed" with an answer is refused and the model
/// told why; the rest of its calls still run (a todo done without an answer,
/// an action, is taken), and once the contact has answered the same call is
/// taken.
#[test]
fn a_todo_cannot_be_completed_with_an_answer_before_the_contact_has_written() {
    let mark = || ("mark_todo_item".to_string(), json!({"todo_id": "1", "status": "completed", "answer": "Friday"}));
    let (relay, model) = with_model(queue(vec![
        Reply::Tools(vec![
            mark(),
            ("send_message".into(), json!({"text": "Hi! Which day suits you?"})),
            ("mark_todo_item".into(), json!({"todo_id": "2", "status": "completed"})),
        ]),
        Reply::Text(String::new()),
        Reply::Tools(vec![mark()]),
        Reply::Text(String::new()),
    ]));
    let id = relay.create(&["--todo", "Tell them the parcel is on its way"]);
    let waiting = relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let results = tool_results(&model, 1);
    assert!(results[0].contains("todo 1 is not marked: the contact has not written yet"), "{}", results[0]);
    assert_eq!((waiting["todos"][0]["status"].as_str(), waiting["todos"][0].get("answer")), (Some("pending"), None));
    assert!(results[2].contains("todo 2 is now completed"), "an action done, with no answer: {}", results[2]);
    assert_eq!(outbox(&relay), ["Hi! Which day suits you?"]);
    relay.ok(&["sandbox", "say", CONTACT, "Friday works"]);
    let marked = relay.wait_for(&id, "the mark", |i| i["todos"][0]["status"] == "completed");
    assert_eq!(marked["todos"][0]["answer"], "Friday");
}
