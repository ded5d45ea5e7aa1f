//! How the model makes its tool calls (`model.tool_calls`), as the scripted
//! model server receives the requests: `json_schema` asks for the calls as
//! one JSON document (Chat Completions' `response_format`, Ollama's
//! `format`) with `tool_choice: "none"`, requiring a call until the turn has
//! acted; `native` sends `tool_choice: "required"` until then and `auto`
//! after; a reply that is not the document is a turn error. In every mode a
//! call made twice in a turn is refused, and a model that never acts is
//! stopped at `agent.max_rounds` with a reason that says what it did.

use std::sync::Arc;

use crate::support::model::*;
use crate::support::*;
use relay::scripted_model::{Reply, Responder, ScriptedModel, queue};
use serde_json::{Value, json};

/// The `minItems` of the calls a Chat Completions request's schema asks for.
fn min_calls(request: &Value) -> u64 {
    let format = &request["response_format"];
    assert_eq!(format["type"], "json_schema", "{request:#}");
    assert_eq!(format["json_schema"]["name"], "relay_tool_calls");
    format["json_schema"]["schema"]["properties"]["calls"]["minItems"].as_u64().unwrap()
}

/// The tools a schema of calls offers, by name.
fn tools_in(schema: &Value) -> Vec<String> {
    schema["properties"]["calls"]["items"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["properties"]["name"]["enum"][0].as_str().unwrap().to_string())
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

/// The default for an openai-compatible server: every request keeps the
/// tools, says `tool_choice: "none"` and carries the schema of calls, which
/// requires one until the turn has sent and none after. The reply's calls
/// (the JSON document the scripted server writes for such a request) run
/// like native ones: the messages reach the contact, the todo is marked, the
/// history holds them as tool calls answered by tool results.
#[test]
fn json_schema_mode_asks_for_calls_as_json_and_runs_them_like_native_ones() {
    let (relay, model) = with_model(completing_model("the day is agreed", "delivery day confirmed"));
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(relay.path().join("config.json")).unwrap()).unwrap()["model"]
            ["tool_calls"],
        "json_schema",
        "relay init writes it"
    );
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "Friday 3pm works"]);
    let done = relay.wait_for_state(&id, "COMPLETED");
    assert_eq!(outbox(&relay), ["Hi! Which day suits you for the delivery?", "Perfect, Friday 3pm. Thank you!"]);
    assert_eq!((&done["todos"][0]["status"], &done["todos"][0]["answer"]), (&json!("completed"), &json!("Friday 3pm")));
    assert_eq!(done["outcome"], "achieved");
    assert!(done["usage"].get("text_tool_calls").is_none(), "not calls read from text: {done:#}");

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(request["tool_choice"], "none", "{request:#}");
        assert_eq!(tool_names(request).len(), 7, "the tools stay in the request, but for the stub place_call");
        let schema = &request["response_format"]["json_schema"]["schema"];
        assert_eq!(tools_in(schema), tool_names(request), "every tool, in the schema too");
        assert!(!schema.to_string().contains("oneOf"));
    }
    // Before the first message was sent, after it; the reply turn before its
    // message, after it (the model then ends the conversation).
    let required: Vec<u64> = requests.iter().map(min_calls).collect();
    assert_eq!(required, [1, 0, 1, 0]);

    // The calls in the history: an assistant turn of tool calls, answered.
    let messages = requests[1]["messages"].as_array().unwrap();
    let calls = &messages[messages.len() - 2];
    assert_eq!(calls["role"], "assistant");
    assert_eq!(calls["tool_calls"][0]["function"]["name"], "send_message");
    let id_made_up = calls["tool_calls"][0]["id"].as_str().unwrap();
    let result = &messages[messages.len() - 1];
    assert_eq!((result["role"].as_str(), result["tool_call_id"].as_str()), (Some("tool"), Some(id_made_up)));
    assert_eq!(result["content"], "sent");
    let reply_turn = requests[3]["messages"].as_array().unwrap();
    let names: Vec<&str> = reply_turn
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mark_todo_item", "send_message"]);
}

/// A reply that is not the JSON of calls (a server that ignores the
/// schema) ends the turn with a short reason that quotes none of it, and
/// says what to look at; the model is not asked again.
#[test]
fn a_reply_that_is_not_the_schema_is_a_turn_error() {
    let (relay, model) =
        with_model(queue(vec![Reply::Raw("Sure! I will ask them: is Friday at 12 Baker Street ok?".into())]));
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let reason = needs["intervention_reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "the model failed: openai-compatible/scripted: the reply is not the JSON of tool calls that \
             model.tool_calls \"json_schema\" asks for (it is not JSON: expected value at line 1 column 1)"
        ),
        "{reason}"
    );
    assert!(reason.contains("relay doctor"), "{reason}");
    assert!(!reason.contains("Baker"), "the reply is quoted: {reason}");
    assert_eq!(model.requests().len(), 1);
    assert!(outbox(&relay).is_empty());
    assert_eq!(needs["usage"]["model_calls"], 1, "the call is counted");
    let status = relay.json(&["status"]);
    assert!(status["model_error"].as_str().is_some_and(|e| e.contains("not the JSON of tool calls")), "{status:#}");
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    assert!(!log.contains("Baker"), "the log holds the reply");
}

/// `native` mode: `tool_choice: "required"` until the turn has acted (a
/// todo marked is not acting), `auto` after, and no schema.
#[test]
fn native_mode_requires_a_call_until_the_turn_acts() {
    let (relay, model) = with_tool_calls(
        queue(vec![
            Reply::tool("send_message", json!({"text": "Hi! Which day suits you?"})),
            Reply::Text(String::new()),
            Reply::tool("mark_todo_item", json!({"todo_id": "1", "status": "completed", "answer": "Friday"})),
            Reply::tool("send_message", json!({"text": "Thanks, Friday it is."})),
            Reply::Text(String::new()),
        ]),
        "native",
    );
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "Friday"]);
    relay.wait_for(&id, "the reply turn", |i| i["usage"]["model_calls"].as_u64() >= Some(5));
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let choices: Vec<Value> = model.requests().iter().map(|r| r["tool_choice"].clone()).collect();
    assert_eq!(choices, ["required", "auto", "required", "required", "auto"]);
    assert!(model.requests().iter().all(|r| r.get("response_format").is_none()));
    assert_eq!(outbox(&relay), ["Hi! Which day suits you?", "Thanks, Friday it is."]);
}

/// Ollama's native API (`/api/chat`, which the scripted server speaks too):
/// in json_schema mode the schema is `format`, beside the tools, and there
/// is no `tool_choice` (the API has none); the reply's calls run. In native
/// mode, neither.
#[test]
fn ollama_gets_the_schema_as_format_and_no_tool_choice() {
    for mode in ["json_schema", "native"] {
        let model = ScriptedModel::start_on_thread(queue(vec![
            Reply::tool("send_message", json!({"text": "Hi from Ollama"})),
            Reply::Text(String::new()),
        ]));
        let relay = Relay::sandbox();
        relay.ok(&["init", "--provider", "ollama", "--model", "qwen2.5", "--base-url", model.ollama_url()]);
        relay.edit_config(|config| {
            config["model"]["tool_calls"] = json!(mode);
            config["agent"] = json!({"retry_backoff_ms": 10, "max_retries": 0});
        });
        relay.ok(&["start"]);
        let id = relay.create(&[]);
        relay.wait_for_state(&id, "WAITING_FOR_REPLY");
        assert_eq!(outbox(&relay), ["Hi from Ollama"], "{mode}");
        let requests = model.requests();
        assert_eq!(requests.len(), 2, "{mode}");
        for request in &requests {
            assert!(request.get("tool_choice").is_none(), "{mode}: {request:#}");
            assert!(request.get("response_format").is_none(), "{mode}: {request:#}");
            assert_eq!(request["stream"], false, "{mode}");
            let offered = if mode == "json_schema" { 7 } else { 8 };
            assert_eq!(tool_names(request).len(), offered, "{mode}: the stub only natively");
        }
        if mode == "json_schema" {
            let required: Vec<u64> =
                requests.iter().map(|r| r["format"]["properties"]["calls"]["minItems"].as_u64().unwrap()).collect();
            assert_eq!(required, [1, 0]);
            assert_eq!(tools_in(&requests[0]["format"]), tool_names(&requests[0]));
            let last = requests[1]["messages"].as_array().unwrap().last().unwrap().clone();
            assert_eq!((last["role"].as_str(), last["content"].as_str()), (Some("tool"), Some("sent")), "{last}");
        } else {
            assert!(requests.iter().all(|r| r.get("format").is_none()));
        }
    }
}

/// The same call twice in one turn (same tool, same arguments) is refused
/// the second time, with the reason, and does nothing: the todo keeps the
/// first answer and one message goes out.
#[test]
fn a_call_made_twice_in_a_turn_is_refused_the_second_time() {
    let mark = || ("mark_todo_item".to_string(), json!({"todo_id": "1", "status": "in_progress"}));
    let send = || ("send_message".to_string(), json!({"text": "Hi! Which day suits you?"}));
    let (relay, model) = with_model(queue(vec![
        Reply::Tools(vec![mark(), send(), mark()]),
        // With a call that works beside it: a turn that acted and is only
        // refused ends at once.
        Reply::Tools(vec![send(), ("schedule_next_heartbeat".to_string(), json!({"delay": 60}))]),
        Reply::Text(String::new()),
    ]));
    let id = relay.create(&[]);
    let waiting = relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    assert_eq!(waiting["todos"][0]["status"], "in_progress");
    assert_eq!(outbox(&relay), ["Hi! Which day suits you?"]);
    let results = |n: usize| -> Vec<String> {
        model.requests()[n]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    let first = results(1);
    assert_eq!(first.len(), 3);
    let refused = "this turn already made this same call, with the same arguments; nothing was done";
    assert_eq!(first[2], format!("error: mark_todo_item: {refused}"));
    assert_eq!(results(2)[3], format!("error: send_message: {refused}"));
}

/// A model that only marks todos, round after round, never sending: stopped
/// at `agent.max_rounds`, and the reason says what it did instead of acting.
/// Its schema required a call in every request, since it never acted.
#[test]
fn a_model_that_never_acts_is_stopped_at_the_round_limit_saying_what_it_did() {
    let marking: Responder = Arc::new(|n, _| {
        Reply::tool("mark_todo_item", json!({"todo_id": "1", "status": "in_progress", "answer": format!("note {n}")}))
    });
    let (relay, model) = with_agent_settings(marking, json!({"max_rounds": 3}));
    let id = relay.create(&[]);
    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(
        needs["intervention_reason"],
        "the model failed: the model made 3 model calls in one turn (agent.max_rounds) without acting: it called \
         mark_todo_item 3 times, but sent no message, did not end the conversation and did not ask for a person; \
         stopped"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| min_calls(r) == 1), "a call was required in every request");
    assert!(outbox(&relay).is_empty());
}

/// In json_schema mode a tool relay refused in two rounds in a row leaves
/// the schema for the rest of the turn: the 1.5B model recorded an answer
/// nobody gave 8 times over, each time told why not; with the narrower
/// choice it writes to the contact. The next turn offers every tool again.
#[test]
fn a_tool_refused_two_rounds_running_leaves_the_schema_for_the_turn() {
    let invented =
        || ("mark_todo_item".to_string(), json!({"todo_id": "1", "status": "completed", "answer": "Monday"}));
    let (relay, model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Which day suits you?"})),
        Reply::Text(String::new()),
        Reply::Tools(vec![invented()]),
        Reply::Tools(vec![invented()]),
        Reply::tool("send_message", json!({"text": "Which day would suit you?"})),
        Reply::Text(String::new()),
    ]));
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "Hello, what is this about?"]);
    relay.wait_for(&id, "the reply", |i| i["usage"]["model_calls"].as_u64() >= Some(6));
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let offered: Vec<Vec<String>> =
        model.requests().iter().map(|r| tools_in(&r["response_format"]["json_schema"]["schema"])).collect();
    let all = tools_in(&model.requests()[0]["response_format"]["json_schema"]["schema"]);
    assert!(all.contains(&"mark_todo_item".to_string()));
    let without: Vec<String> = all.iter().filter(|t| *t != "mark_todo_item").cloned().collect();
    assert_eq!(offered[2..], [all.clone(), all.clone(), without.clone(), without], "refused twice, then gone");
    assert_eq!(outbox(&relay), ["Hi! Which day suits you?", "Which day would suit you?"]);
    assert_eq!(relay.get(&id)["todos"][0]["status"], "pending");
}
