//! The operator's own phone is in the conversation: relay is one linked
//! device of the operator's number, so a message the operator types to a
//! contact on the phone reaches relay too. End to end on the sandbox
//! (`relay sandbox say --from-operator`) with the real binary: it is recorded
//! as the operator's, the conversation pauses and the agent writes nothing
//! over them until resumed, and then reads it as the operator's.

use relay::scripted_model::{Reply, queue};
use serde_json::{Value, json};

use crate::support::CONTACT;
use crate::support::model::with_model;

#[test]
fn the_operator_writing_on_their_phone_pauses_the_agent_and_is_read_as_the_operators_after_resume() {
    let (relay, model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Which day suits you for the delivery?"})),
        Reply::Text(String::new()),
        // Only after `relay resume`:
        Reply::tool("end_conversation", json!({"reason": "the operator settled it"})),
    ]));
    let id = relay.ok(&["create", "--objective", "Arrange the delivery", "--contact", CONTACT, "--todo", "Day"]);
    let id = id.trim();
    relay.wait_for_state(id, "WAITING_FOR_REPLY");

    let said = relay.ok(&["sandbox", "say", CONTACT, "Ana here: Friday at 3 is fine, I'll be home", "--from-operator"]);
    assert!(said.contains("as yours; it is paused until `relay resume"), "{said}");
    let paused = relay.wait_for_state(id, "PAUSED");
    let last = paused["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (&last["from_state"], &last["trigger"]),
        (&json!("WAITING_FOR_REPLY"), &json!("operator_writes")),
        "{last}"
    );

    // The contact answers the operator: recorded; the agent stays silent.
    relay.ok(&["sandbox", "say", CONTACT, "Perfect, thanks Ana!"]);
    relay.wait_for(id, "the contact's message", |i| {
        i["last_contact_message"]["untrusted_contact_text"] == "Perfect, thanks Ana!"
    });
    assert_eq!(relay.state(id), "PAUSED");
    assert_eq!(model.requests().len(), 2, "no turn ran while the operator had it");
    let transcript = relay.transcript(id);
    let mine: Vec<&Value> = transcript.iter().filter(|m| m["role"] == "manual").collect();
    assert_eq!(mine.len(), 1, "{transcript:?}");
    assert_eq!((&mine[0]["outside_relay"], &mine[0]["send_status"]), (&json!(true), &json!("sent")));
    let shown = relay.ok(&["transcript", id]);
    assert!(
        shown.contains("operator  Ana here: Friday at 3 is fine, I'll be home  (on the operator's own WhatsApp)"),
        "{shown}"
    );
    let shown = relay.ok(&["get", id]);
    assert!(shown.contains("paused      you wrote to the contact on your phone; `relay resume`"), "{shown}");
    let events = relay.ok(&["events", "--json"]);
    assert!(events.contains("\"outside_relay\":true") || events.contains("\"outside_relay\": true"), "{events}");

    relay.ok(&["resume", id]);
    relay.wait_for_state(id, "COMPLETED");
    let requests = model.requests();
    let after = &requests[2]["messages"];
    let turns: Vec<(String, String)> = after
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| Some((m["role"].as_str()?.to_string(), m["content"].as_str()?.to_string())))
        .collect();
    let operator =
        turns.iter().find(|(_, text)| text.contains("Ana here: Friday at 3")).expect("the operator's message");
    assert_eq!(operator.0, "assistant", "the operator's words are relay's side, never the contact's: {turns:?}");
    assert!(operator.1.contains("[written by the human operator]"), "{operator:?}");
    assert!(turns.iter().any(|(role, text)| role == "user" && text.contains("Perfect, thanks Ana!")), "{turns:?}");
}

/// The operator's message to a number with no live conversation is not
/// routed (nor kept as the contact's), but the number is no longer a new
/// contact: the reach-out lock does not hold a first message to it.
#[test]
fn the_operators_message_to_a_number_without_a_conversation_makes_it_known_and_is_not_routed() {
    let (relay, _model) = with_model(queue(vec![Reply::tool("send_message", json!({"text": "Hi!"}))]));
    let said = relay.ok(&["sandbox", "say", CONTACT, "Hi, it's Ana", "--from-operator"]);
    assert!(said.contains("your message is not routed"), "{said}");
    relay.ok(&["sandbox", "lock", "--until", "2h"]);
    let id = relay.ok(&["create", "--objective", "o", "--contact", CONTACT, "--todo", "t"]);
    let started = relay.wait_for(id.trim(), "the first message", |i| i["state"] != "CREATED");
    assert_eq!(started["waiting_for"], Value::Null, "{started}");
    let (_, unrouted) = relay.http("GET", "/status", &[], None);
    assert!(unrouted.contains("\"unrouted_message_count\":0"), "{unrouted}");
}
