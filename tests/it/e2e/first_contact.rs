//! First contact end to end with the real binary, as an operator tries it:
//! the sandbox's reach-out lock holds a first message and every view says
//! so until it is lifted; a lock nobody reported is revealed by a refused
//! first message, and then the operator's first messages wait too. (What
//! the engine enforces, whatever the agent does, is `engine::first_contact`.)

use crate::support::model::{outbox, sends_each_turn, with_model};
use crate::support::{Relay, history_triggers};
use serde_json::json;

/// End to end, as an operator tries it: `relay sandbox lock` holds a first
/// message, and `relay get`, `relay status` and `relay doctor` say why and
/// until when; `relay sandbox unlock` lets it go. Wrong input is refused in
/// the operator's words.
#[test]
fn the_sandbox_lock_holds_a_first_message_and_every_view_says_so_until_unlocked() {
    let (relay, _model) = with_model(sends_each_turn(|_| "Hello".into()));
    for (wrong, says) in [
        ("soon", "is not how long the lock lasts"),
        ("-2h", "is not how long the lock lasts"),
        ("0s", "more than 0s and at most 365d"),
        ("100000000d", "more than 0s and at most 365d"),
    ] {
        let said = relay.fails(&["sandbox", "lock", "--until", wrong], 2);
        assert!(said.contains(says), "{wrong}: {said}");
    }
    let locked = relay.json(&["sandbox", "lock", "--until", "2h"]);
    assert_eq!((&locked["locked"], &locked["reported"]), (&json!(true), &json!(true)));
    let id = relay.create(&[]);
    let held = relay.wait_for(&id, "the lock to hold it", |i| i["waiting_for"] == "reach_out_lock");
    assert_eq!(held["state"], "CREATED");
    assert_eq!(held["next_send_at"], locked["until"]);
    let shown = relay.ok(&["get", &id]);
    assert!(shown.contains("waits for WhatsApp's lock on writing first to new contacts: until"), "{shown}");
    let status = relay.ok(&["status"]);
    assert!(status.contains("reach-out lock WhatsApp says this number may not write first"), "{status}");
    assert!(status.contains("1 conversation for WhatsApp's lock on writing first"), "{status}");
    let doctor = relay.json(&["doctor", "--offline"]);
    let courtesy = doctor["checks"].as_array().unwrap().iter().find(|c| c["name"] == "courtesy").unwrap().clone();
    assert_eq!(courtesy["status"], "warning", "{courtesy}");
    assert!(courtesy["detail"].as_str().unwrap().contains("conversations waiting for it: 1"), "{courtesy}");
    assert!(outbox(&relay).is_empty());

    let unlocked = relay.json(&["sandbox", "unlock"]);
    assert_eq!(unlocked["locked"], false);
    relay.wait_for(&id, "the first message", |i| i["first_delivered_at"].is_string());
    assert_eq!(outbox(&relay), ["Hello"]);
    assert!(!relay.ok(&["status"]).contains("reach-out lock"));
}

/// End to end: a lock WhatsApp does not report is met by the first message
/// (463). The conversation is CREATED again, says why, and the lock is
/// relay's account-wide knowledge (`relay status --json`).
#[test]
fn an_unreported_lock_is_revealed_by_a_refused_first_message() {
    let (relay, _model) = with_model(sends_each_turn(|_| "Hello".into()));
    relay.ok(&["sandbox", "lock", "--until", "2h", "--unreported"]);
    let id = relay.create(&[]);
    let held = relay.wait_for(&id, "the refusal", |i| i["waiting_for"] == "reach_out_lock");
    assert_eq!(held["state"], "CREATED");
    assert_eq!(history_triggers(&held).last().unwrap(), "first_message_refused");
    let lock = &relay.json(&["status"])["first_contact"]["reach_out_lock"];
    assert_eq!(lock["source"], "refused", "{lock}");
    assert_eq!(held["next_send_at"], lock["until"]);
    let refused = relay.transcript(&id);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["send_status"], "failed");
    assert!(refused[0]["delivery_error"].as_str().unwrap().contains("error 463"), "{refused:?}");
    assert!(outbox(&relay).is_empty(), "nothing reached the contact");
}

/// Without a model the operator writes the first messages: one WhatsApp
/// refuses (463) reveals the lock, and from then on relay tries no first
/// message to a new contact, the operator's included: `relay send` is
/// refused (exit 1) and changes nothing, and conversations not started
/// wait for the lock's end.
#[test]
fn once_the_lock_is_known_the_operators_first_messages_are_not_tried_either() {
    let relay = Relay::started();
    relay.ok(&["sandbox", "lock", "--until", "2h", "--unreported"]);
    let create = |contact: &str| {
        relay
            .ok(&["create", "--objective", "Confirm the delivery", "--contact", contact, "--todo", "day"])
            .trim()
            .to_string()
    };
    let (first, second) = (create("+56912340001"), create("+56912340002"));
    relay.wait_for_state(&first, "NEEDS_HUMAN_INTERVENTION");
    relay.wait_for_state(&second, "NEEDS_HUMAN_INTERVENTION");

    relay.ok(&["send", &first, "Hi, this is Ana from Acme."]);
    let held = relay.wait_for(&first, "the refusal", |i| i["waiting_for"] == "reach_out_lock");
    assert_eq!(held["state"], "CREATED", "{held}");

    let refused = relay.fails(&["send", &second, "Hi, this is Ana from Acme."], 1);
    assert!(refused.contains("WhatsApp does not let this number write first to new contacts until"), "{refused}");
    let unchanged = relay.get(&second);
    assert_eq!(unchanged["state"], "NEEDS_HUMAN_INTERVENTION");
    assert!(relay.transcript(&second).is_empty(), "nothing recorded, nothing sent");

    let third = create("+56912340003");
    let waiting = relay.wait_for(&third, "the lock", |i| i["waiting_for"] == "reach_out_lock");
    assert_eq!(waiting["state"], "CREATED");
    assert!(outbox(&relay).is_empty(), "nothing reached anyone");
}
