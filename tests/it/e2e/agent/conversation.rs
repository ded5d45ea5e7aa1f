//! Whole conversations run by the agent: to completion on its own, the
//! follow-ups a silent contact gets, the limit on model calls in flight, a
//! person asked, a restart, tools and recipients it does not have, the
//! demo, and a conversation that waits for an unlinked WhatsApp.

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
