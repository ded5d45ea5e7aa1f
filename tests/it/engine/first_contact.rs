//! First contact, enforced by the engine whatever the agent does: WhatsApp's
//! reach-out lock (asked before a first message, or revealed by a refused
//! one, error 463) holds first messages to new contacts and never replies;
//! the daily cap holds the first contact past it. On tokio's paused clock,
//! with the sandbox simulating the lock. Quiet hours are off here (they are
//! not what these tests are about); the cap is set where a test needs it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use relay::api::{CreateInstanceRequest, NewTodo, SendStatus, State, WaitReason};
use uuid::Uuid;

use crate::support::engine::{SandboxWorld, any_hour, polite_agent, until};
use crate::support::model::{outbox, sends_each_turn, with_model};
use crate::support::{Relay, history_triggers};
use serde_json::json;

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn number(n: u32) -> String {
    format!("+5691234{n:04}")
}

/// The sandbox world, and a conversation about the delivery with `contact`.
async fn create(w: &SandboxWorld, contact: &str) -> Uuid {
    let request = CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: contact.into(),
        todos: vec![NewTodo::new("delivery day")],
        time_zone: Some("America/Santiago".into()),
        ..Default::default()
    };
    w.engine.create(request).await.unwrap().id
}

/// The agent's messages in `id`: what it wrote, and what became of it.
fn agent_said(w: &SandboxWorld, id: Uuid) -> Vec<(String, Option<SendStatus>)> {
    w.agent_messages(id).into_iter().map(|m| (m.content, m.send_status)).collect()
}

/// The lock WhatsApp reports holds the first message to a new contact until
/// it ends, through a restart; a reply to a contact who wrote goes out
/// meanwhile; at the lock's end relay asks again and the first message goes.
#[tokio::test(start_paused = true)]
async fn a_reach_out_lock_holds_first_messages_to_new_contacts_not_replies_until_it_ends() {
    relay::clock::pretend(utc("2026-03-10T15:00:00Z"));
    let mut w = SandboxWorld::start(polite_agent(), any_hour());
    let (known, new) = (number(1), number(2));
    let running = create(&w, &known).await;
    until(&w.engine, running, |i| i.state == State::WaitingForReply).await;

    let lock = w.channel.lock(Duration::from_secs(2 * 3600), true).unwrap();
    let ends = lock.until.unwrap();
    let held = create(&w, &new).await;
    let waiting = until(&w.engine, held, |i| i.waiting_for.is_some()).await;
    assert_eq!((waiting.state, waiting.waiting_for), (State::Created, Some(WaitReason::ReachOutLock)));
    assert_eq!(waiting.next_send_at, Some(ends));
    let status = w.engine.first_contact_status();
    assert_eq!(status.reach_out_lock.map(|l| l.until), Some(Some(ends)));
    assert_eq!(status.waiting.get(&WaitReason::ReachOutLock), Some(&1));

    // A reply in a running conversation is not a first contact.
    w.say(&known, "Friday works").await;
    until(&w.engine, running, |i| i.state == State::WaitingForReply && i.last_contact_message.is_some()).await;
    assert_eq!(w.received(&known), ["Hello", "Noted"]);

    w.restart().await;
    let still = w.engine.get(&held.to_string()).unwrap();
    assert_eq!((still.state, still.waiting_for), (State::Created, Some(WaitReason::ReachOutLock)));
    assert!(w.received(&new).is_empty());

    let started = until(&w.engine, held, |i| i.state == State::WaitingForReply).await;
    assert!(relay::clock::now() >= ends, "it went before the lock's end");
    assert_eq!(w.received(&new), ["Hello"]);
    assert_eq!((started.waiting_for, started.next_send_at), (None, None));
}

/// A lock WhatsApp does not report shows itself as a refused first message
/// (463): that conversation goes back to CREATED and waits with every other
/// first contact; relay tries again an hour later, one first contact at a
/// time, and waits twice as long after each refusal.
#[tokio::test(start_paused = true)]
async fn a_first_message_refused_with_463_holds_every_first_contact_and_goes_out_after_the_lock() {
    relay::clock::pretend(utc("2026-03-10T15:00:00Z"));
    let mut settings = any_hour();
    settings.courtesy.disclosure = "This is an assistant.".into();
    let w = SandboxWorld::start(polite_agent(), settings);
    w.channel.lock(Duration::from_secs(150 * 60), false).unwrap();
    let first = create(&w, &number(1)).await;
    let refused = until(&w.engine, first, |i| i.waiting_for == Some(WaitReason::ReachOutLock)).await;
    assert_eq!(refused.state, State::Created);
    assert_eq!(refused.history.last().unwrap().trigger, "first_message_refused");
    assert_eq!(refused.next_send_at, Some(utc("2026-03-10T16:00:00Z")), "asked again an hour later");
    assert_eq!(agent_said(&w, first), [("This is an assistant.\n\nHello".to_string(), Some(SendStatus::Failed))]);

    // Another new contact waits for the same lock, without trying.
    let second = create(&w, &number(2)).await;
    let held = until(&w.engine, second, |i| i.waiting_for.is_some()).await;
    assert_eq!(held.waiting_for, Some(WaitReason::ReachOutLock));
    assert!(agent_said(&w, second).is_empty());

    // 16:00: still locked, but unreported. One of the two tries, and is
    // refused: both wait two hours more. 18:00: the lock ended at 17:30;
    // one tries, gets through, and the other follows.
    let reached = |i: &relay::api::ConversationInstance| i.first_delivered_at.is_some();
    until(&w.engine, first, reached).await;
    until(&w.engine, second, reached).await;
    assert!(relay::clock::now() >= utc("2026-03-10T18:00:00Z"));
    let refused: usize = [first, second]
        .iter()
        .map(|id| agent_said(&w, *id).iter().filter(|(_, status)| *status == Some(SendStatus::Failed)).count())
        .sum();
    assert_eq!(refused, 2, "at 15:00 and at 16:00, one at a time");
    assert_eq!(w.received(&number(1)), ["This is an assistant.\n\nHello"], "the disclosure goes with it");
    assert_eq!(w.received(&number(2)), ["This is an assistant.\n\nHello"]);
    assert!(w.engine.first_contact_status().reach_out_lock.is_none());
}

/// At most `max_new_contacts_per_day` first contacts in 24 hours: the
/// eleventh waits for a day after the first, and a contact who has written
/// before is no first contact.
#[tokio::test(start_paused = true)]
async fn the_daily_cap_holds_the_eleventh_first_contact() {
    relay::clock::pretend(utc("2026-03-10T15:00:00Z"));
    let mut settings = any_hour();
    settings.courtesy.max_new_contacts_per_day = 10;
    let w = SandboxWorld::start(polite_agent(), settings);
    let start = relay::clock::now();
    let mut ids = Vec::new();
    for n in 1..=10 {
        let id = create(&w, &number(n)).await;
        until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
        ids.push(id);
    }
    let eleventh = create(&w, &number(11)).await;
    let held = until(&w.engine, eleventh, |i| i.waiting_for.is_some()).await;
    assert_eq!((held.state, held.waiting_for), (State::Created, Some(WaitReason::NewContactCap)));
    let frees = held.next_send_at.unwrap();
    assert!(frees >= start + chrono::Duration::hours(24), "{frees}");
    assert!(frees < start + chrono::Duration::hours(24) + chrono::Duration::minutes(1), "{frees}");

    // Someone who wrote in before is not new: not held by the cap.
    w.say(&number(50), "hi, is this the shop?").await;
    let known = create(&w, &number(50)).await;
    until(&w.engine, known, |i| i.state == State::WaitingForReply).await;
    assert_eq!(w.engine.first_contact_status().started_last_24h, 10);

    until(&w.engine, eleventh, |i| i.state == State::WaitingForReply).await;
    assert!(relay::clock::now() >= frees);
    assert_eq!(w.received(&number(11)), ["Hello"]);
}

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
