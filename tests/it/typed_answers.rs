//! Typed todo answers, end to end with the real binary: `relay create
//! --todo ... --answer KIND` gives a todo an answer schema; the agent's
//! `mark_todo_item` value that does not fit is refused with what is wrong
//! (and the model reads why), one that fits is kept; the report carries
//! each todo's `value` beside its words.

use relay::scripted_model::{Reply, queue};
use serde_json::{Value, json};

use crate::support::CONTACT;
use crate::support::model::with_model;

fn mark(todo: &str, answer: &str, value: Value) -> (String, Value) {
    let args = json!({"todo_id": todo, "status": "completed", "answer": answer, "value": value});
    ("mark_todo_item".to_string(), args)
}

fn quoting(call: (String, Value), quote: &str) -> (String, Value) {
    let (name, mut args) = call;
    args["quote"] = quote.into();
    (name, args)
}

#[test]
fn a_typed_todo_refuses_a_value_that_does_not_fit_and_keeps_one_that_does() {
    let (relay, model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Which day, and what time of day?"})),
        Reply::Text(String::new()),
        Reply::Tools(vec![mark("1", "next Friday", json!("next Friday"))]),
        Reply::Tools(vec![
            quoting(mark("1", "Friday", json!("2026-11-27")), "FRIDAY morning,"),
            mark("2", "in the evening", json!("evening")),
            mark("3", "yes", json!(true)),
        ]),
        Reply::Tools(vec![quoting(mark("2", "in the morning", json!("morning")), "mornings are best")]),
        Reply::Tools(vec![quoting(mark("2", "in the morning", json!("morning")), "morning")]),
        Reply::tool("end_conversation", json!({"reason": "all answered", "outcome": "achieved"})),
    ]));
    let id = relay.ok(&[
        "create",
        "--objective",
        "Arrange the delivery",
        "--contact",
        CONTACT,
        "--todo",
        "Delivery day",
        "--answer",
        "date",
        "--todo",
        "Time of day",
        "--answer",
        "choice:morning|afternoon",
        "--todo",
        "Someone will be home",
        "--answer",
        "yes-no",
    ]);
    let id = id.trim();
    let created = relay.get(id);
    assert_eq!(created["todos"][0]["answer_schema"], json!({"type": "string", "format": "date"}));
    assert_eq!(created["todos"][1]["answer_schema"]["enum"], json!(["morning", "afternoon"]));

    relay.wait_for(id, "the first message", |i| i["state"] == "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "Friday morning, and yes, someone will be home"]);
    let done = relay.wait_for_state(id, "COMPLETED");
    let values: Vec<&Value> = done["todos"].as_array().unwrap().iter().map(|t| &t["value"]).collect();
    assert_eq!(values, [&json!("2026-11-27"), &json!("morning"), &json!(true)]);
    assert_eq!(done["todos"][0]["answer"], "Friday", "the words stay beside the value");
    // The evidence: the contact's words as they wrote them, in their message;
    // with no quote, the answer's own words where the contact wrote them.
    let said = "Friday morning, and yes, someone will be home";
    let message = relay.transcript(id).into_iter().find(|m| m["role"] == "contact").unwrap();
    let evidence = |n: usize| done["todos"][n]["evidence"].clone();
    assert_eq!(evidence(0), json!([{"message_id": message["id"], "untrusted_contact_text": "Friday morning,"}]));
    assert_eq!(evidence(1), json!([{"message_id": message["id"], "untrusted_contact_text": "morning,"}]));
    assert_eq!(evidence(2), json!([{"message_id": message["id"], "untrusted_contact_text": "yes,"}]));
    assert!(said.contains("yes,"));

    // The model was told what was wrong, each time, in words it can act on.
    let requests = model.requests();
    // What the model read in request n: every message's text.
    let told = |n: usize| {
        let messages = requests[n]["messages"].as_array().unwrap();
        messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
    };
    let day = told(3);
    assert!(day.contains("todo 1 is not marked: its value must be a date like \"2026-11-27\""), "{day}");
    assert!(day.contains("\"next Friday\" is not a date"), "{day}");
    let choice = told(4);
    assert!(choice.contains("\"evening\" is not one of \"morning\", \"afternoon\""), "{choice}");
    let invented = told(5);
    assert!(invented.contains("the contact never wrote \"mornings are best\""), "{invented}");
    let shown = relay.ok(&["get", id]);
    assert!(shown.contains("value \"2026-11-27\""), "{shown}");
}

/// `--answer` belongs to the `--todo` before it; one that is not, or a kind
/// relay does not know, is refused before anything is created.
#[test]
fn an_answer_that_belongs_to_no_todo_or_is_no_kind_is_refused() {
    let (relay, _model) = with_model(queue(vec![]));
    let base = ["create", "--objective", "o", "--contact", CONTACT];
    let refused = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        relay.fails(&args, 2)
    };
    assert!(refused(&["--answer", "date", "--todo", "day"]).contains("put it after that --todo"));
    assert!(refused(&["--todo", "day", "--answer", "date", "--answer", "time"]).contains("todo 1 has two --answer"));
    assert!(refused(&["--todo", "day", "--answer", "weekday"]).contains("'weekday' is not an answer"));
    let backwards = refused(&["--todo", "n", "--answer", r#"{"type": "integer", "minimum": 9, "maximum": 1}"#]);
    assert!(backwards.contains("minimum 9 is more than maximum 1"), "{backwards}");
    assert!(relay.instances().is_empty(), "nothing was created");
    // The API refuses the same schema, naming the todo.
    let body = json!({"objective": "o", "target_contact": CONTACT,
        "todos": [{"text": "n", "answer_schema": {"type": "boolean", "minimum": 1}}]});
    let (status, said) = relay.http("POST", "/instances", &[], Some(&body.to_string()));
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("todo 1's answer_schema: minimum and maximum are for answers of type number"), "{said}");
}

/// A template keeps each todo's `--answer`, and conversations made from it
/// have typed todos.
#[test]
fn a_templates_todos_keep_their_answers() {
    let (relay, _model) = with_model(queue(vec![]));
    relay.ok(&[
        "template",
        "add",
        "delivery",
        "--objective",
        "Arrange the delivery of {{order}}",
        "--todo",
        "Delivery day",
        "--answer",
        "date",
        "--todo",
        "Anything else",
    ]);
    let shown = relay.ok(&["template", "show", "delivery"]);
    assert!(shown.contains("value: a date like \"2026-11-27\""), "{shown}");
    let id = relay.ok(&["create", "--template", "delivery", "--var", "order=1042", "--contact", CONTACT]);
    let todos = relay.get(id.trim())["todos"].clone();
    assert_eq!(todos[0]["answer_schema"], json!({"type": "string", "format": "date"}));
    assert!(todos[1]["answer_schema"].is_null());
}
