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
    let reached = |i: &relay::store::ConversationRecord| i.first_delivered_at.is_some();
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
