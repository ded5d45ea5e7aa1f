//! Calls the daemon refuses within a turn, telling the model why: the same
//! message twice, an achieved ending with todos pending, an answer before
//! the contact has written.

use crate::support::model::*;
use crate::support::*;
use relay::scripted_model::{Reply, ScriptedModel, queue};
use serde_json::json;

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
