//! Did the person get it? End to end on the sandbox, whose simulated phones
//! send receipts as WhatsApp's do: delivered at once, read when the contact
//! writes back, held while `relay sandbox offline`.

use serde_json::{Value, json};

use relay::scripted_model::ScriptedModel;

use crate::support::Relay;
use crate::support::model::{outbox, sends_each_turn, started_with};

const CONTACT: &str = "+56912345678";

/// A relay whose agent sends one message a turn (the opening, then each
/// follow-up), with a 1 s heartbeat and this delivery timeout.
/// The model server lives as long as the `ScriptedModel` returned.
fn relay(delivery_timeout: &str) -> (Relay, ScriptedModel) {
    let timeout = delivery_timeout.to_string();
    started_with(sends_each_turn(|n| format!("message {n}")), json!({}), move |config| {
        config["delivery"] = json!({ "timeout": timeout });
    })
}

fn create(relay: &Relay) -> String {
    relay.create(&["--heartbeat-interval", "1s", "--max-followups", "3"])
}

fn statuses(relay: &Relay, id: &str) -> Vec<String> {
    relay
        .transcript(id)
        .iter()
        .filter(|m| m["role"] == "agent")
        .map(|m| m["send_status"].as_str().unwrap().to_string())
        .collect()
}

fn events_of(relay: &Relay, id: &str, kind: &str) -> Vec<Value> {
    let out = relay.ok(&["events", "--json", "--id", id]);
    out.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()).filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_message_is_delivered_then_read_and_every_view_says_so() {
    let (relay, _model) = relay("10m");
    let id = create(&relay);
    let instance = relay.wait_for(&id, "the first delivery", |i| !i["first_delivered_at"].is_null());
    assert!(instance["last_read_at"].is_null());
    assert!(instance["awaiting_delivery"].is_null(), "{instance:#}");
    assert_eq!(statuses(&relay, &id)[0], "delivered");
    assert!(relay.ok(&["transcript", &id]).contains("message 0  ✓✓\n"));

    relay.ok(&["sandbox", "say", CONTACT, "Friday"]);
    let instance = relay.get(&id);
    assert!(!instance["last_read_at"].is_null(), "the read is recorded before `say` answers");
    let transcript = relay.transcript(&id);
    assert_eq!(transcript[0]["send_status"], "read");
    assert!(transcript[0]["delivered_at"].as_str() <= transcript[0]["read_at"].as_str());
    assert_eq!(instance["last_read_at"], transcript[0]["read_at"]);
    assert!(relay.ok(&["transcript", &id]).contains("message 0  ✓✓ read\n"));

    let changes: Vec<String> = events_of(&relay, &id, "message_status")
        .iter()
        .filter(|e| e["message_id"] == transcript[0]["id"])
        .map(|e| e["send_status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(changes, ["delivered", "read"], "one event per step forward");
}

#[test]
fn a_first_message_that_never_arrives_goes_to_a_person_and_nothing_follows_it() {
    let (relay, _model) = relay("2s");
    relay.ok(&["sandbox", "offline", CONTACT]);
    let id = create(&relay);
    let instance = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let reason = instance["intervention_reason"].as_str().unwrap();
    assert!(reason.contains("the first message was not delivered after 2s"), "{reason}");
    assert_eq!(outbox(&relay), ["message 0"], "no follow-up into the void (heartbeat 1s)");
    assert_eq!(statuses(&relay, &id), ["sent"]);
    assert_eq!(instance["awaiting_delivery"]["overdue"], true);
    assert!(relay.ok(&["get", &id]).contains("NOT DELIVERED"));
    let flagged = events_of(&relay, &id, "message_status");
    assert!(flagged.iter().any(|e| e["overdue"] == true), "{flagged:?}");

    // The operator goes on as usual: the phone comes back, relay resumes.
    let online = relay.json(&["sandbox", "online", CONTACT]);
    assert_eq!((online["online"].as_bool(), online["delivered"].as_u64()), (Some(true), Some(1)));
    assert_eq!(statuses(&relay, &id), ["delivered"]);
    let reason = relay.get(&id)["intervention_reason"].as_str().unwrap().to_string();
    assert!(reason.ends_with("(it has been delivered since)"), "{reason}");
    relay.ok(&["resume", &id]);
    relay.wait_for(&id, "a turn after resuming", |i| i["state"] == "WAITING_FOR_REPLY");
}

#[test]
fn a_phone_back_before_the_timeout_gets_its_follow_ups_and_they_waited_for_it() {
    let (relay, _model) = relay("10m");
    relay.ok(&["sandbox", "offline", CONTACT]);
    let id = create(&relay);
    let instance = relay.wait_for(&id, "the wait for delivery", |i| {
        i["state"] == "WAITING_FOR_REPLY" && !i["awaiting_delivery"].is_null()
    });
    assert_eq!(instance["awaiting_delivery"]["overdue"], false);
    assert!(relay.ok(&["get", &id]).contains("the next follow-up waits until it has"));
    // The 1 s heartbeat has long passed by the time the phone is back (the
    // daemon answered several requests meanwhile), yet nothing followed.
    assert_eq!(outbox(&relay), ["message 0"]);

    relay.ok(&["sandbox", "online", CONTACT]);
    let instance = relay.wait_for(&id, "a follow-up", |i| i["follow_up_count"].as_u64() >= Some(1));
    assert!(!instance["first_delivered_at"].is_null());
    let sent = outbox(&relay);
    assert!(sent.len() >= 2 && sent[0] == "message 0" && sent[1] != "message 0", "{sent:?}");
    assert_ne!(instance["state"], "NEEDS_HUMAN_INTERVENTION");
}

#[test]
fn receipts_survive_a_kill_and_find_their_message_after_a_restart() {
    let (relay, _model) = relay("10m");
    relay.ok(&["sandbox", "offline", CONTACT]);
    // No follow-up while it runs: one sent between a receipt and a kill
    // would be a second message awaiting delivery (under load it was).
    let id = relay.create(&["--heartbeat-interval", "1h"]);
    // Killed once the turn is over (a turn cut short runs again, and sends again).
    relay.wait_for(&id, "the wait for delivery", |i| {
        i["state"] == "WAITING_FOR_REPLY" && !i["awaiting_delivery"].is_null()
    });
    let pid = relay.pid().unwrap();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    relay.wait_until_lock_free();
    relay.ok(&["start"]);

    // The phone held the message across the restart, and its receipt finds
    // it. When `online` answers, relay has recorded the delivery: a kill the
    // next instant loses nothing.
    let online = relay.json(&["sandbox", "online", CONTACT]);
    assert_eq!(online["delivered"], 1);
    assert_eq!(statuses(&relay, &id)[0], "delivered", "recorded before the answer");
    let pid = relay.pid().unwrap();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    relay.wait_until_lock_free();
    relay.ok(&["start"]);
    assert_eq!(statuses(&relay, &id)[0], "delivered");
    let log = || std::fs::read_to_string(relay.path().join("relay.log")).unwrap_or_default();
    assert!(relay.get(&id)["awaiting_delivery"].is_null(), "{:#}\n{}", relay.get(&id), log());
    relay.ok(&["sandbox", "read", CONTACT]);
    assert_eq!(statuses(&relay, &id)[0], "read", "recorded before the answer");
    assert!(!relay.get(&id)["last_read_at"].is_null(), "{:#}\n{}", relay.get(&id), log());

    let pid = relay.pid().unwrap();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    relay.wait_until_lock_free();
    relay.ok(&["start"]);
    assert_eq!(statuses(&relay, &id)[0], "read", "what receipts said is on disk");
    assert!(!relay.get(&id)["last_read_at"].is_null());
}

#[test]
fn the_phone_commands_refuse_a_wrong_number_in_the_users_words() {
    let (relay, _model) = relay("10m");
    let error = relay.fails(&["sandbox", "offline", "+56 9 TAXI"], 2);
    assert!(error.contains("the letter 'T' cannot be part of one"), "{error}");
    let answer = relay.ok(&["sandbox", "read", CONTACT]);
    assert_eq!(answer.trim(), format!("{CONTACT} read 0 messages."));
}

#[test]
fn an_ended_conversation_awaits_nothing() {
    let (relay, _model) = relay("10m");
    relay.ok(&["sandbox", "offline", CONTACT]);
    let id = create(&relay);
    relay.wait_for(&id, "the wait for delivery", |i| !i["awaiting_delivery"].is_null());
    relay.ok(&["cancel", &id]);
    assert!(relay.get(&id)["awaiting_delivery"].is_null());
    assert!(!relay.ok(&["get", &id]).lines().any(|line| line.starts_with("delivery    ")));
    // Its receipts still reach its transcript.
    relay.ok(&["sandbox", "online", CONTACT]);
    assert_eq!(statuses(&relay, &id), ["delivered"]);
}

/// A webhook for `message_status` gets each step of each message, as the
/// event log has it.
#[test]
fn a_webhook_hears_each_step_of_a_message() {
    let (relay, _model) = relay("10m");
    let (go, wait_for_go) = std::sync::mpsc::channel();
    go.send(()).unwrap();
    let (port, received) = crate::support::webhook_receiver::receiver(0, wait_for_go);
    relay.ok(&["webhook", "add", &format!("http://127.0.0.1:{port}/hook"), "--events", "message_status"]);
    let id = create(&relay);
    relay.wait_for(&id, "the delivery", |i| !i["first_delivered_at"].is_null());
    relay.ok(&["sandbox", "say", CONTACT, "Friday"]);
    let mut steps = Vec::new();
    while steps.len() < 2 {
        let (_, request) = received.recv_timeout(std::time::Duration::from_secs(10)).expect("a webhook delivery");
        let event: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(event["type"], "message_status", "only what was asked for");
        steps.push(event["send_status"].as_str().unwrap().to_string());
    }
    assert_eq!(steps, ["delivered", "read"]);
}
