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
            quoting(mark("1", "Friday", json!("2026-12-04")), "FRIDAY 4 december 2026,"),
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
    relay.ok(&["sandbox", "say", CONTACT, "Friday 4 December 2026, morning, and yes, someone will be home"]);
    let done = relay.wait_for_state(id, "COMPLETED");
    let values: Vec<&Value> = done["todos"].as_array().unwrap().iter().map(|t| &t["value"]).collect();
    assert_eq!(values, [&json!("2026-12-04"), &json!("morning"), &json!(true)]);
    let checks: Vec<&Value> = done["todos"].as_array().unwrap().iter().map(|t| &t["check"]).collect();
    assert_eq!(checks, [&json!("resolved"), &json!("verbatim"), &json!("verified")], "how each value was read");
    assert_eq!(done["todos"][0]["answer"], "Friday", "the words stay beside the value");
    // The evidence: the contact's words as they wrote them, in their message;
    // with no quote, the answer's own words where the contact wrote them.
    let said = "Friday 4 December 2026, morning, and yes, someone will be home";
    let message = relay.transcript(id).into_iter().find(|m| m["role"] == "contact").unwrap();
    let evidence = |n: usize| done["todos"][n]["evidence"].clone();
    assert_eq!(
        evidence(0),
        json!([{"message_id": message["id"], "untrusted_contact_text": "Friday 4 December 2026,"}])
    );
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
    assert!(shown.contains("value \"2026-12-04\" (read from their words)"), "{shown}");
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

/// A value its evidence does not say is refused, however real the quote:
/// relay reads numbers, addresses and days from the quoted words itself,
/// and a yes or no goes to a second look that sees only the todo and the
/// evidence. The report says how each value was established.
#[test]
fn a_value_its_quoted_words_do_not_say_is_refused_and_the_report_says_how_each_was_read() {
    let said = "we are 3 people, my email is alice@example.com, and nobody is home on Friday";
    let marks = |people: Value, email: &str, home: bool| {
        Reply::Tools(vec![
            quoting(mark("1", "3 people", people), "3 people"),
            quoting(mark("2", "their email", json!(email)), "my email is alice@example.com"),
            quoting(mark("3", "nobody is home", json!(home)), "nobody is home on Friday"),
        ])
    };
    let (relay, model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! How many are you, your email, and is someone home?"})),
        Reply::Text(String::new()),
        marks(json!(7), "bob@evil.example", true),
        marks(json!(3), "alice@example.com", false),
        Reply::tool("end_conversation", json!({"reason": "all answered", "outcome": "achieved"})),
    ]));
    model.verdicts(vec![json!({"confirmed": false, "reading": "nobody is home on Friday: no"})]);
    let id = relay.ok(&[
        "create",
        "--objective",
        "Plan the visit of the inspector",
        "--contact",
        CONTACT,
        "--todo",
        "How many people",
        "--answer",
        "integer",
        "--todo",
        "Their email",
        "--answer",
        "email",
        "--todo",
        "Someone is home on Friday",
        "--answer",
        "yes-no",
    ]);
    let id = id.trim();
    relay.wait_for(id, "the first message", |i| i["state"] == "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, said]);
    let done = relay.wait_for_state(id, "COMPLETED");
    let todos = done["todos"].as_array().unwrap();
    let got: Vec<(&Value, &Value)> = todos.iter().map(|t| (&t["value"], &t["check"])).collect();
    assert_eq!(
        got,
        [
            (&json!(3), &json!("verbatim")),
            (&json!("alice@example.com"), &json!("verbatim")),
            (&json!(false), &json!("verified"))
        ]
    );
    // The model read why each wrong value was refused.
    let requests = model.requests();
    let told: String =
        requests[3]["messages"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(told.contains("the value 7 is not what their words say (7 is not in their words, which hold 3)"), "{told}");
    assert!(told.contains("the value \"bob@evil.example\" is not what their words say"), "{told}");
    assert!(
        told.contains(r#"does not find the value true in them (its reading: "nobody is home on Friday: no")"#),
        "{told}"
    );
    // Webhooks and `relay events` carry each todo's value and how it was read.
    let events = relay.ok(&["events", "--json"]).replace(": ", ":");
    assert!(events.contains(r#""value":false,"check":"verified""#), "{events}");
    // The second looks saw the todo and the evidence, not the conversation.
    let looks = model.verifications();
    assert_eq!(looks.len(), 2, "one refused, one confirmed: {looks:?}");
    let asked = looks[0].to_string();
    assert!(asked.contains("Someone is home on Friday") && asked.contains("nobody is home on Friday"), "{asked}");
    assert!(!asked.contains("inspector") && !asked.contains("How many are you"), "{asked}");
    assert!(!asked.contains("mark_todo_item"), "no tools and none of relay's instructions to the agent: {asked}");
}

/// A valid 1x1 PNG: the photo of the meter.
/// Creates the conversation the photo tests hold: one integer todo, the reading.
pub(crate) fn ask_for_the_meter_reading(relay: &crate::support::Relay) -> String {
    let id = relay.ok(&[
        "create",
        "--objective",
        "Get the meter reading",
        "--contact",
        CONTACT,
        "--todo",
        "The meter reading",
        "--answer",
        "integer",
    ]);
    id.trim().to_string()
}

pub(crate) const PHOTO: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

fn reading_from(media: &str) -> (String, Value) {
    let args = json!({"todo_id": "1", "status": "completed", "answer": "12345", "value": 12345, "media": media});
    ("mark_todo_item".to_string(), args)
}

/// Runs the meter conversation: the contact sends a photo captioned "the
/// meter", the agent records 12345 from it; then, if refused, asks, and
/// records it from the words the contact writes. The conversation at its end.
fn meter_reading(vision: bool) -> (Value, crate::support::Relay, relay::scripted_model::ScriptedModel) {
    let (relay, model) = crate::support::model::started_with(
        queue(vec![
            Reply::tool("send_message", json!({"text": "Hi! Could you send me the meter reading?"})),
            Reply::Text(String::new()),
            Reply::Tools(vec![reading_from("m1")]),
            Reply::tool("send_message", json!({"text": "Could you write the number for me?"})),
            Reply::Text(String::new()),
            Reply::Tools(vec![quoting(mark("1", "12345", json!(12345)), "it reads 12345")]),
            Reply::tool("end_conversation", json!({"reason": "done", "outcome": "achieved"})),
        ]),
        json!({}),
        move |config| config["model"]["vision"] = json!(vision),
    );
    let id = ask_for_the_meter_reading(&relay);
    relay.wait_for(&id, "the first message", |i| i["state"] == "WAITING_FOR_REPLY");
    let photo = relay.path().join("meter.png");
    std::fs::write(&photo, PHOTO).unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "the meter", "--image", photo.to_str().unwrap()]);
    let done = relay.wait_for(&id, "the value recorded or a question asked", |i| {
        i["todos"][0]["value"].is_number()
            || i["state"] == "WAITING_FOR_REPLY" && i["usage"]["model_calls"].as_u64() > Some(2)
    });
    if done["todos"][0]["value"].is_number() {
        return (done, relay, model);
    }
    relay.ok(&["sandbox", "say", CONTACT, "it reads 12345"]);
    let done = relay.wait_for(&id, "the value recorded", |i| i["todos"][0]["value"].is_number());
    (done, relay, model)
}

/// A value resting on a photo the model was never shown (`model.vision`
/// off) is refused: it can only be the model's guess. Written by the
/// contact, it is taken as their words.
#[test]
fn a_value_resting_on_a_photo_the_model_was_not_shown_is_refused() {
    let (done, _relay, model) = meter_reading(false);
    assert_eq!((&done["todos"][0]["value"], &done["todos"][0]["check"]), (&json!(12345), &json!("verbatim")));
    assert_eq!(done["todos"][0]["evidence"][0]["untrusted_contact_text"], "it reads 12345");
    let told = model.requests()[3].to_string();
    assert!(told.contains("rests on m1, which you were not shown"), "{told}");
    assert!(model.verifications().is_empty());
}

/// A model that sees the photo has what it shows confirmed by a second look
/// that is shown the photo too.
#[test]
fn a_value_read_from_a_photo_the_model_saw_is_confirmed_by_a_look_at_the_photo() {
    let (done, _relay, model) = meter_reading(true);
    let todo = &done["todos"][0];
    assert_eq!(
        (&todo["value"], &todo["check"], &todo["evidence"][0]["media"]),
        (&json!(12345), &json!("verified"), &json!("m1"))
    );
    let looks = model.verifications();
    assert_eq!(looks.len(), 1);
    assert!(looks[0].to_string().contains("data:image/png;base64"), "the photo was shown: {}", looks[0]);
}

/// A value resting on the operator's answer to the agent's question is read
/// from that answer by the same rules: one it does not give is refused.
#[test]
fn a_value_resting_on_the_operators_answer_is_read_from_it() {
    let quoting_operator = |value: Value| quoting(mark("1", "45 dollars", value), "45 dollars");
    let (relay, model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! I'll find out the price for you."})),
        Reply::Text(String::new()),
        Reply::tool("request_human_intervention", json!({"reason": "the price", "question": "What is the price?"})),
        Reply::Tools(vec![quoting_operator(json!(40))]),
        Reply::Tools(vec![quoting_operator(json!(45))]),
        Reply::tool("send_message", json!({"text": "It is 45 dollars."})),
        Reply::Text(String::new()),
    ]));
    let id = relay.ok(&[
        "create",
        "--objective",
        "Tell them the price",
        "--contact",
        CONTACT,
        "--todo",
        "The price",
        "--answer",
        "integer",
    ]);
    let id = id.trim();
    relay.wait_for_state(id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "How much is it?"]);
    relay.wait_for_state(id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["answer", id, "Quote 45 dollars, delivery next Monday"]);
    let done = relay.wait_for(id, "the value", |i| i["todos"][0]["value"].is_number());
    assert_eq!((&done["todos"][0]["value"], &done["todos"][0]["check"]), (&json!(45), &json!("operator")));
    let told = model.requests()[4].to_string();
    assert!(
        told.contains("the value 40 is not what the operator's answer says (40 is not in the operator's words"),
        "{told}"
    );
}
