//! relay away from WhatsApp and back, end to end on the sandbox with the
//! real binary: what contacts write meanwhile is held and handed over by
//! the catch-up when relay comes back; a catch-up cut short leaves the
//! conversations that were live marked as maybe missing messages, in
//! `relay get`, `relay status` and `relay doctor`.

use relay::scripted_model::{Reply, queue};
use serde_json::{Value, json};

use crate::support::CONTACT;
use crate::support::model::with_model;

#[test]
fn what_contacts_write_while_relay_is_away_comes_in_the_catch_up_and_a_cut_short_one_is_marked() {
    let (relay, _model) = with_model(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! Which day suits you?"})),
        Reply::Text(String::new()),
        Reply::tool("send_message", json!({"text": "Friday, noted."})),
        Reply::Text(String::new()),
    ]));
    let id = relay.ok(&["create", "--objective", "Agree on the day", "--contact", CONTACT, "--todo", "Day"]);
    let id = id.trim();
    relay.wait_for_state(id, "WAITING_FOR_REPLY");

    assert!(relay.ok(&["sandbox", "offline"]).contains("relay is offline from WhatsApp"));
    assert!(relay.ok(&["status"]).contains("offline (simulated"));
    let held = relay.ok(&["sandbox", "say", CONTACT, "Friday works"]);
    assert!(held.contains("WhatsApp holds it until `relay sandbox online`"), "{held}");
    assert_eq!(relay.get(id)["last_contact_message"], Value::Null, "not yet with relay");
    let back = relay.ok(&["sandbox", "online"]);
    assert!(relay.ok(&["sandbox", "online"]).contains("handed over 0"), "online twice is no harm");
    assert!(back.contains("the catch-up handed over 1 message(s)"), "{back}");
    relay.wait_for(id, "the held message", |i| i["last_contact_message"]["untrusted_contact_text"] == "Friday works");
    assert_eq!(relay.get(id)["messages_may_be_missing"], Value::Null);

    relay.ok(&["sandbox", "offline"]);
    relay.ok(&["sandbox", "say", CONTACT, "Actually, Saturday"]);
    let cut = relay.ok(&["sandbox", "online", "--cut-short"]);
    assert!(cut.contains("the catch-up was cut short: 1 message(s) lost"), "{cut}");
    let marked = relay.wait_for(id, "the mark", |i| i["messages_may_be_missing"].is_object());
    let span = &marked["messages_may_be_missing"];
    assert!(span["from"].is_string() && span["to"].is_string(), "{span}");
    assert!(relay.ok(&["get", id]).contains("missing     the contact's messages from "), "relay get says so");
    assert!(relay.ok(&["status"]).contains("the last catch-up did not finish: messages from "));
    let (_, doctor) = {
        let run = relay.run(&["doctor", "--json"]);
        (run.code, serde_json::from_str::<Value>(&run.stdout).unwrap())
    };
    let channel = doctor["checks"].as_array().unwrap().iter().find(|c| c["name"] == "channel").unwrap().clone();
    assert_eq!(channel["status"], "warning", "{channel}");
    assert!(channel["detail"].as_str().unwrap().contains("may be missing"), "{channel}");

    // Wrong input: a cut-short catch-up is for relay's own link.
    let refused = relay.fails(&["sandbox", "online", CONTACT, "--cut-short"], 2);
    assert!(refused.contains("--cut-short is for relay's own link"), "{refused}");
}
