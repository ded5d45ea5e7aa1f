//! Conversations that start later (`start_at`), on tokio's paused clock with
//! relay's wall clock set to a chosen day: the first message waits in
//! CREATED for its start time, through a restart, holding its contact's
//! queue; then quiet hours and the day's cap hold it as any first message.
//! (How the time is read is `api::start_at`'s unit tests; the CLI's words,
//! end to end, `e2e::start_at`.)

use chrono::{DateTime, Utc};
use relay::api::{CreateInstanceRequest, NewTodo, State, WaitReason, ZoneSource};
use relay::engine::{EngineError, Settings};
use uuid::Uuid;

use crate::support::engine::{SandboxWorld, any_hour, polite_agent, until};

const CONTACT: &str = "+56912345678";

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn request(contact: &str, start_at: Option<&str>) -> CreateInstanceRequest {
    CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: contact.into(),
        todos: vec![NewTodo::new("delivery day")],
        time_zone: Some("America/Santiago".into()),
        start_at: start_at.map(str::to_string),
        ..Default::default()
    }
}

/// The default quiet hours (21:00-09:00), nothing else that depends on the hour.
fn quiet_nights() -> Settings {
    let mut settings = any_hour();
    settings.courtesy.quiet_hours = Some("21:00-09:00".parse().unwrap());
    settings
}

/// When the agent's messages in `id` were sent.
fn sent_at(w: &SandboxWorld, id: Uuid) -> Vec<DateTime<Utc>> {
    w.agent_messages(id).into_iter().map(|m| m.timestamp).collect()
}

/// "tomorrow 10:00" at 11:00 in Santiago (UTC-3 in January): the
/// conversation waits in CREATED until 10:00 their time the next day,
/// saying so, through a restart; the contact's next conversation queues
/// behind it, and their message meanwhile is kept in it; at 10:00 the first
/// turn, with that message before it, sends the first message.
#[tokio::test(start_paused = true)]
async fn a_conversation_set_for_tomorrow_10_00_waits_through_a_restart_and_starts_then() {
    relay::clock::pretend(utc("2026-01-15T14:00:00Z"));
    let mut w = SandboxWorld::start(polite_agent(), quiet_nights());
    let created = w.engine.create(request(CONTACT, Some("tomorrow 10:00"))).await.unwrap();
    let start = created.start.expect("the answer says when it starts");
    let starts = utc("2026-01-16T13:00:00Z");
    assert_eq!((start.at, start.local.as_str()), (starts, "2026-01-16 10:00 -03:00"));
    assert_eq!((start.time_zone.as_str(), start.zone_source), ("America/Santiago", ZoneSource::Given));
    let held = until(&w.engine, created.id, |i| i.waiting_for.is_some()).await;
    assert_eq!(
        (held.state, held.waiting_for, held.next_send_at),
        (State::Created, Some(WaitReason::StartAt), Some(starts))
    );
    assert_eq!(held.start_at, Some(starts));
    assert_eq!(w.engine.first_contact_status().waiting.get(&WaitReason::StartAt), Some(&1));

    let next = w.engine.create(request(CONTACT, None)).await.unwrap();
    assert_eq!(next.state, State::Queued, "it holds its contact as any conversation");
    assert_eq!(next.start, None);

    // The contact writes meanwhile: it is kept in the conversation, which still waits.
    w.say(CONTACT, "Hi, is my parcel coming?").await;
    let wrote = until(&w.engine, created.id, |i| i.last_contact_message.is_some()).await;
    assert_eq!((wrote.state, wrote.waiting_for), (State::Created, Some(WaitReason::StartAt)));

    w.restart().await;
    let still = w.engine.get(&created.id.to_string()).unwrap();
    assert_eq!(
        (still.state, still.waiting_for, still.next_send_at),
        (State::Created, Some(WaitReason::StartAt), Some(starts))
    );
    assert!(w.received(CONTACT).is_empty());

    let started = until(&w.engine, created.id, |i| i.state == State::WaitingForReply).await;
    let sent = sent_at(&w, created.id);
    assert!(sent[0] >= starts && sent[0] < starts + chrono::Duration::minutes(1), "{sent:?}");
    assert_eq!((started.waiting_for, started.next_send_at), (None, None));
    // Its first turn had what they wrote before it, to answer.
    assert_eq!(w.engine.record(&created.id.to_string()).unwrap().unanswered_contact_messages, 0);
    let transcript = w.engine.transcript(&created.id.to_string()).unwrap();
    let said: Vec<&str> = transcript.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(said, ["Hi, is my parcel coming?", "Hello"]);
    assert_eq!(w.engine.get(&next.id.to_string()).unwrap().state, State::Queued);
}

/// A start at 23:00 their time falls in quiet hours: at 23:00 the first
/// message waits again, now for 09:00, as any first message would.
#[tokio::test(start_paused = true)]
async fn a_start_in_quiet_hours_then_waits_for_their_end() {
    relay::clock::pretend(utc("2026-01-15T14:00:00Z"));
    let w = SandboxWorld::start(polite_agent(), quiet_nights());
    let id = w.engine.create(request(CONTACT, Some("2026-01-15 23:00"))).await.unwrap().id;
    let held = until(&w.engine, id, |i| i.waiting_for.is_some()).await;
    assert_eq!((held.waiting_for, held.next_send_at), (Some(WaitReason::StartAt), Some(utc("2026-01-16T02:00:00Z"))));
    let quiet = until(&w.engine, id, |i| i.waiting_for == Some(WaitReason::QuietHours)).await;
    assert_eq!((quiet.state, quiet.next_send_at), (State::Created, Some(utc("2026-01-16T12:00:00Z"))));
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    let sent = sent_at(&w, id);
    assert!(sent[0] >= utc("2026-01-16T12:00:00Z"), "{sent:?}");
}

/// With the day's cap on first contacts reached, a conversation with a new
/// contact that starts later waits for the cap once its start time comes.
#[tokio::test(start_paused = true)]
async fn at_its_start_a_first_contact_waits_for_the_days_cap() {
    relay::clock::pretend(utc("2026-03-10T15:00:00Z"));
    let mut settings = any_hour();
    settings.courtesy.max_new_contacts_per_day = 1;
    let w = SandboxWorld::start(polite_agent(), settings);
    let later = w.engine.create(request("+56912340002", Some("2026-03-10T13:00:00-03:00"))).await.unwrap().id;
    let now = w.engine.create(request("+56912340001", None)).await.unwrap().id;
    until(&w.engine, now, |i| i.state == State::WaitingForReply).await;
    assert_eq!(w.engine.get(&later.to_string()).unwrap().waiting_for, Some(WaitReason::StartAt));

    let capped = until(&w.engine, later, |i| i.waiting_for == Some(WaitReason::NewContactCap)).await;
    assert!(relay::clock::now() >= utc("2026-03-10T16:00:00Z"));
    let frees = capped.next_send_at.unwrap();
    assert!(frees >= utc("2026-03-11T15:00:00Z") && frees < utc("2026-03-11T15:01:00Z"), "{frees}");
    until(&w.engine, later, |i| i.state == State::WaitingForReply).await;
    assert!(sent_at(&w, later)[0] >= frees);
}

/// What cannot start is refused with the reason, and creates nothing: a
/// time passed, one too far ahead, one the clocks skip, one after the
/// conversation's own deadline.
#[tokio::test(start_paused = true)]
async fn a_start_that_cannot_be_is_refused_with_the_reason() {
    relay::clock::pretend(utc("2026-03-10T15:00:00Z"));
    let w = SandboxWorld::start(polite_agent(), any_hour());
    let refused = async |start: &str, expires_in_ms: Option<u64>| {
        let budget = relay::api::BudgetRequest { expires_in_ms, ..Default::default() };
        let asked = CreateInstanceRequest { budget: Some(budget), ..request(CONTACT, Some(start)) };
        match w.engine.create(asked).await {
            Err(EngineError::Invalid(why)) => why,
            other => panic!("{start}: {other:?}"),
        }
    };
    assert!(refused("today 09:00", None).await.contains("has already passed"));
    assert!(refused("2026-05-01 10:00", None).await.contains("is more than 30 days ahead"));
    assert!(refused("2026-09-06 00:30", None).await.contains("does not exist in America/Santiago"));
    let why = refused("tomorrow 10:00", Some(3_600_000)).await;
    assert!(why.starts_with("the conversation would end (its deadline,"), "{why}");
    assert!(w.engine.list(&[], None, None, 10).unwrap().items.is_empty(), "nothing was created");
}
