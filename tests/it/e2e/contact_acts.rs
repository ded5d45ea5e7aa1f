//! What a contact's message refers to, end to end with the real binary on
//! the sandbox: a reaction names the message it reacts to (and a 👍 can
//! answer "Is Friday OK?"), a reply the message it quotes, an edit or a
//! deletion the message it takes back (marking the answers resting on it),
//! and a call leaves a trace; the agent reads each with what it refers to.

use relay::scripted_model::{Reply, queue};
use serde_json::{Value, json};

use crate::support::model::with_model;
use crate::support::{CONTACT, Relay};

fn send(text: &str) -> Reply {
    Reply::tool("send_message", json!({"text": text}))
}

/// The conversation's messages of `role`, oldest first.
fn of(relay: &Relay, id: &str, role: &str) -> Vec<Value> {
    relay.transcript(id).into_iter().filter(|m| m["role"] == role).collect()
}

/// Waits until the agent has written `n` messages and the conversation waits for the contact.
fn answered(relay: &Relay, id: &str, n: usize) {
    relay.wait_for(id, &format!("the agent's message {n}"), |i| {
        i["state"] == "WAITING_FOR_REPLY" && of(relay, id, "agent").len() == n
    });
}

/// What the model was shown in request `n`, all messages' text.
fn shown(model: &relay::scripted_model::ScriptedModel, n: usize) -> String {
    let request = &model.requests()[n];
    request["messages"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
}

#[test]
fn reactions_replies_edits_deletions_and_calls_reach_the_agent_with_what_they_refer_to() {
    let mark = |todo: &str, extra: Value| {
        let mut args = json!({"todo_id": todo, "status": "completed"});
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        Reply::tool("mark_todo_item", args)
    };
    let (relay, model) = with_model(queue(vec![
        send("Is Friday OK for the delivery?"),
        Reply::Text(String::new()),
        mark("1", json!({"value": true, "quote": "👍"})),
        send("Great! What time suits you?"),
        Reply::Text(String::new()),
        mark("2", json!({"answer": "at 3pm", "quote": "at 3pm"})),
        send("Noted, 3pm."),
        Reply::Text(String::new()),
        send("Understood, 4pm then."),
        Reply::Text(String::new()),
        send("Understood, 5pm then."),
        Reply::Text(String::new()),
        send("No problem."),
        Reply::Text(String::new()),
        send("I saw you called: calls are not answered here, but I can help by message."),
        Reply::Text(String::new()),
        Reply::tool("end_conversation", json!({"reason": "done"})),
    ]));
    let created = relay.ok(&[
        "create",
        "--objective",
        "Arrange the delivery",
        "--contact",
        CONTACT,
        "--todo",
        "Friday is fine",
        "--answer",
        "yes-no",
        "--todo",
        "Time",
    ]);
    let id = created.trim();
    answered(&relay, id, 1);
    let asked = of(&relay, id, "agent")[0]["id"].as_str().unwrap().to_string();

    // A 👍 to "Is Friday OK?": the agent sees what it answers, and so does the second look.
    relay.ok(&["sandbox", "react", CONTACT, &asked[..8], "👍"]);
    answered(&relay, id, 2);
    assert!(
        shown(&model, 2).contains("[reacted 👍 to your message \"Is Friday OK for the delivery?\"]"),
        "{}",
        shown(&model, 2)
    );
    let todo = relay.get(id)["todos"][0].clone();
    assert_eq!((&todo["value"], &todo["check"]), (&json!(true), &json!("verified")), "{todo}");
    let look = model.verifications()[0].to_string();
    assert!(look.contains("their reaction to") && look.contains("Is Friday OK for the delivery?"), "{look}");
    let reaction = of(&relay, id, "contact")[0].clone();
    assert_eq!(reaction["act"], json!({"kind": "reaction", "message_id": asked}), "{reaction}");

    // An answer, then the contact edits the message it rests on.
    relay.ok(&["sandbox", "say", CONTACT, "Friday works, at 3pm"]);
    answered(&relay, id, 3);
    let said = of(&relay, id, "contact")[1]["id"].as_str().unwrap().to_string();
    relay.ok(&["sandbox", "edit", CONTACT, &said, "Friday works, at 4pm"]);
    answered(&relay, id, 4);
    let edited = shown(&model, 8);
    assert!(
        edited.contains("[edited their message \"Friday works, at 3pm\", which todo 2's answer rested on"),
        "{edited}"
    );
    assert!(edited.contains("it now reads:] Friday works, at 4pm"), "{edited}");
    assert!(edited.contains("Friday works, at 3pm\n[they later edited this message]"), "{edited}");
    let evidence = relay.get(id)["todos"][1]["evidence"][0].clone();
    assert_eq!((&evidence["message_id"], &evidence["changed"]), (&json!(said), &json!("edited")), "{evidence}");

    // A second edit names the original too: the first edit's words are taken back with it.
    relay.ok(&["sandbox", "edit", CONTACT, &said, "Friday works, at 5pm"]);
    answered(&relay, id, 5);
    let contact = of(&relay, id, "contact");
    let first_edit = contact.iter().find(|m| m["content"] == "Friday works, at 4pm").unwrap();
    assert_eq!(first_edit["withdrawn"], "edited", "{first_edit}");
    // A deletion, a call, and a reply that quotes relay's question.
    relay.ok(&["sandbox", "delete", CONTACT, &said[..8]]);
    answered(&relay, id, 6);
    assert!(shown(&model, 12).contains("[deleted their message \"Friday works, at 3pm\""), "{}", shown(&model, 12));
    relay.ok(&["sandbox", "call", CONTACT]);
    answered(&relay, id, 7);
    assert!(shown(&model, 14).contains("[called you; calls are not answered here"), "{}", shown(&model, 14));
    relay.ok(&["sandbox", "say", CONTACT, "Yes, that's right", "--reply-to", &asked]);
    relay.wait_for_state(id, "COMPLETED");
    assert!(
        shown(&model, 16).contains("[replying to your message \"Is Friday OK for the delivery?\"] Yes, that's right")
    );
    let contact = of(&relay, id, "contact");
    let kinds: Vec<&Value> = contact.iter().map(|m| &m["act"]["kind"]).collect();
    let expected = [
        json!("reaction"),
        json!(null),
        json!("edit"),
        json!("edit"),
        json!("deletion"),
        json!("call"),
        json!("reply"),
    ];
    assert_eq!(kinds, expected.iter().collect::<Vec<_>>());
    let withdrawn: Vec<&Value> = contact.iter().map(|m| &m["withdrawn"]).collect();
    assert_eq!(withdrawn[1..4], [&json!("deleted"); 3], "the deletion takes back the message and both its edits");
}

/// A message that is not in the contact's conversation, an act with no
/// message, or a contact with no conversation: clear errors, nothing recorded.
#[test]
fn an_act_on_a_message_relay_does_not_have_is_refused_with_the_reason() {
    let (relay, _model) = with_model(queue(vec![send("Hi!"), Reply::Text(String::new())]));
    // What the act names is not there: not found (exit 4), as for any id.
    let refused = relay.fails(&["sandbox", "react", CONTACT, "0000", "👍"], 4);
    assert!(refused.contains("+56912345678 has no live conversation"), "{refused}");
    let id = relay.ok(&["create", "--objective", "o", "--contact", CONTACT, "--todo", "t"]);
    answered(&relay, id.trim(), 1);
    let refused = relay.fails(&["sandbox", "edit", CONTACT, "ffffffff", "new text"], 4);
    assert!(refused.contains("there is no message ffffffff in +56912345678's conversation"), "{refused}");
    let refused = relay.fails(&["sandbox", "delete", CONTACT, "ab"], 2);
    assert!(refused.contains("\"ab\" is too short: give 4 characters of the id or more"), "{refused}");
    // A contact edits and deletes only their own messages, as on WhatsApp.
    let relays = of(&relay, id.trim(), "agent")[0]["id"].as_str().unwrap().to_string();
    let refused = relay.fails(&["sandbox", "edit", CONTACT, &relays, "hijacked"], 2);
    assert!(refused.contains("is not +56912345678's: a contact edits and deletes only their own"), "{refused}");
    // An emoji is one: not text, not a terminal escape.
    for wrong in ["ok", "\u{1b}[31m", "👍 👍"] {
        let refused = relay.fails(&["sandbox", "react", CONTACT, &relays, wrong], 2);
        assert!(refused.contains("is not an emoji"), "{wrong:?}: {refused}");
    }
    assert_eq!(of(&relay, id.trim(), "contact").len(), 0);
    // A call is not a message to react to; a deleted message is gone.
    relay.ok(&["sandbox", "call", CONTACT]);
    relay.ok(&["sandbox", "say", CONTACT, "Friday"]);
    let contact = of(&relay, id.trim(), "contact");
    let (call, said) = (contact[0]["id"].as_str().unwrap(), contact[1]["id"].as_str().unwrap());
    let refused = relay.fails(&["sandbox", "react", CONTACT, call, "👍"], 2);
    assert!(refused.contains("is not a message of the chat"), "{refused}");
    relay.ok(&["sandbox", "delete", CONTACT, said]);
    let refused = relay.fails(&["sandbox", "edit", CONTACT, said, "Saturday"], 2);
    assert!(refused.contains("was deleted"), "{refused}");
}
