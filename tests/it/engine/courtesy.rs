//! Courtesy, enforced by the engine whatever the agent does: quiet hours in
//! the contact's zone (on tokio's paused clock, with relay's wall clock set
//! to a chosen night), the do-not-contact list and opt-out words, and the
//! disclosure line. These tests set the courtesy settings they depend on.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
use relay::api::{CreateInstanceRequest, EndedBy, HeartbeatOverrides, NewTodo, Outcome, State, WaitReason, ZoneSource};
use relay::channel::SandboxChannel;
use relay::contact::Contact;
use relay::engine::{Engine, EngineError, Settings};
use relay::home::Home;
use relay::util::BoxFuture;

use crate::support::engine::{SandboxWorld, any_hour, polite_agent, start_engine_with, until};
use crate::support::test_agent::TestAgent;

const CONTACT: &str = "+56912345678";

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// The default quiet hours (21:00-09:00), nothing else that depends on the hour.
fn quiet_nights() -> Settings {
    let mut settings = any_hour();
    settings.courtesy.quiet_hours = Some("21:00-09:00".parse().unwrap());
    settings
}

/// The agent's messages in `id`: what it wrote, and when.
fn sent_by_agent(w: &SandboxWorld, id: uuid::Uuid) -> Vec<(String, DateTime<Utc>)> {
    w.agent_messages(id).into_iter().map(|m| (m.content, m.timestamp)).collect()
}

fn request(interval: Duration) -> CreateInstanceRequest {
    CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: CONTACT.into(),
        todos: vec![NewTodo::new("delivery day")],
        heartbeat_config: Some(HeartbeatOverrides {
            interval_ms: Some(interval.as_millis() as u64),
            max_followups: Some(3),
        }),
        time_zone: Some("America/Santiago".into()),
        ..Default::default()
    }
}

async fn until_state(engine: &Engine, id: uuid::Uuid, state: State) -> relay::api::ConversationInstance {
    until(engine, id, |i| i.state == state).await
}

/// Created at 23:00 in Santiago (UTC-3 in January): the first message
/// waits, saying why and until when, through a restart, and goes out at
/// 09:00 their time.
#[tokio::test(start_paused = true)]
async fn a_first_message_created_at_23_00_contact_time_goes_out_at_09_00_even_across_a_restart() {
    relay::clock::pretend(utc("2026-01-15T02:00:00Z"));
    let mut w = SandboxWorld::start(polite_agent(), quiet_nights());
    let id = w.engine.create(request(Duration::from_secs(24 * 3600))).await.unwrap().id;
    let held = until(&w.engine, id, |i| i.waiting_for.is_some()).await;
    assert_eq!(held.state, State::Created);
    assert_eq!(held.waiting_for, Some(WaitReason::QuietHours));
    assert_eq!(held.next_send_at, Some(utc("2026-01-15T12:00:00Z")));
    let zone = held.contact_time.as_ref().unwrap();
    assert_eq!((zone.time_zone.as_str(), zone.zone_source), ("America/Santiago", ZoneSource::Given));
    assert!(sent_by_agent(&w, id).is_empty());

    w.restart().await;
    let waiting = until_state(&w.engine, id, State::WaitingForReply).await;
    let sent = sent_by_agent(&w, id);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].1 >= utc("2026-01-15T12:00:00Z") && sent[0].1 < utc("2026-01-15T12:01:00Z"), "{sent:?}");
    assert_eq!((waiting.waiting_for, waiting.next_send_at), (None, None));
}

/// A follow-up due at 02:00 their time moves to 09:00; a reply at 02:00 to
/// a contact who has just written goes out at once.
#[tokio::test(start_paused = true)]
async fn a_follow_up_due_at_02_00_moves_to_09_00_but_a_reply_at_02_00_goes_out() {
    // 20:00 in Santiago: not quiet; the follow-up is due six hours later.
    relay::clock::pretend(utc("2026-01-15T23:00:00Z"));
    let w = SandboxWorld::start(polite_agent(), quiet_nights());
    let id = w.engine.create(request(Duration::from_secs(6 * 3600))).await.unwrap().id;
    let waiting = until_state(&w.engine, id, State::WaitingForReply).await;
    assert_eq!(waiting.next_heartbeat_at, Some(utc("2026-01-16T12:00:00Z")), "02:00 moved to 09:00");
    assert_eq!(waiting.waiting_for, Some(WaitReason::QuietHours));
    let followed = until(&w.engine, id, |i| i.follow_up_count == 1).await;
    let sent = sent_by_agent(&w, id);
    assert_eq!(sent[1].0, "Still there?");
    assert!(sent[1].1 >= utc("2026-01-16T12:00:00Z"), "{sent:?}");
    assert_eq!(followed.state, State::WaitingForReply);

    // 02:00 the next night, the contact writes: the reply is not held.
    tokio::time::sleep(Duration::from_secs(14 * 3600)).await;
    let night = relay::clock::now();
    w.say(CONTACT, "Friday works").await;
    until(&w.engine, id, |i| i.state == State::WaitingForReply && i.last_contact_message.is_some()).await;
    let sent = sent_by_agent(&w, id);
    let reply = sent.last().unwrap();
    assert_eq!(reply.0, "Noted");
    assert!(reply.1 - night < chrono::Duration::minutes(1), "the reply waited: {sent:?}");
}

/// At 02:00 their time, a first message to someone who wrote a minute ago
/// is a reply and goes out; one to someone who did not write waits for 09:00.
#[tokio::test(start_paused = true)]
async fn a_first_message_to_someone_who_just_wrote_goes_out_in_quiet_hours() {
    relay::clock::pretend(utc("2026-01-15T05:00:00Z"));
    let w = SandboxWorld::start(polite_agent(), quiet_nights());
    w.say(CONTACT, "Hi, is my parcel coming?").await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    let id = w.engine.create(request(Duration::from_secs(24 * 3600))).await.unwrap().id;
    until_state(&w.engine, id, State::WaitingForReply).await;
    assert_eq!(sent_by_agent(&w, id).len(), 1, "the first message went out at 02:00");

    let silent = CreateInstanceRequest { target_contact: "+56987654321".into(), ..request(Duration::from_secs(3600)) };
    let held = w.engine.create(silent).await.unwrap().id;
    let held = until(&w.engine, held, |i| i.waiting_for.is_some()).await;
    assert_eq!((held.state, held.waiting_for), (State::Created, Some(WaitReason::QuietHours)));
}

/// "ＳＴＯＰ" when no conversation is live (the last one ended) puts the
/// number on the do-not-contact list all the same: the next create is
/// refused. The message is still kept with the unrouted ones.
#[tokio::test(start_paused = true)]
async fn stop_written_between_conversations_opts_the_number_out() {
    let w = SandboxWorld::start(polite_agent(), any_hour());
    let id = w.engine.create(request(Duration::from_secs(3600))).await.unwrap().id;
    until_state(&w.engine, id, State::WaitingForReply).await;
    let cancelled = w.engine.cancel(&id.to_string()).await.unwrap();
    assert!(cancelled.state.is_terminal(), "{:?}", cancelled.state);

    w.say(CONTACT, "ＳＴＯＰ").await;
    let listed = w.engine.opt_outs();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0].contact.as_str(), listed[0].instance_id), (CONTACT, None));
    assert_eq!(w.engine.unrouted_count(), 1);
    let refused = w.engine.create(request(Duration::from_secs(3600))).await.unwrap_err();
    assert!(matches!(refused, EngineError::OptedOut(_)), "{refused}");

    // A sentence with "stop" in it, between conversations, is kept and lists nothing.
    w.say("+56987654321", "stop by on Friday?").await;
    assert_eq!(w.engine.opt_outs().len(), 1);
}

/// A number with no zone of its own and no `--tz` takes courtesy.default_tz,
/// and says so.
#[tokio::test(start_paused = true)]
async fn a_number_whose_country_keeps_several_times_uses_the_default_zone_and_says_so() {
    let mut settings = any_hour();
    settings.courtesy.default_tz = "America/Punta_Arenas".into();
    let w = SandboxWorld::start(polite_agent(), settings);
    let request = CreateInstanceRequest { time_zone: None, ..request(Duration::from_secs(3600)) };
    let id = w.engine.create(request).await.unwrap().id;
    let zone = w.engine.get(&id.to_string()).unwrap().contact_time.unwrap();
    assert_eq!((zone.time_zone.as_str(), zone.zone_source), ("America/Punta_Arenas", ZoneSource::Default));
    let wrong = CreateInstanceRequest { time_zone: Some("Mars/Base".into()), ..request_for("+34612345678") };
    assert!(w.engine.create(wrong).await.unwrap_err().to_string().contains("IANA"));
}

fn request_for(contact: &str) -> CreateInstanceRequest {
    CreateInstanceRequest { target_contact: contact.into(), ..request(Duration::from_secs(3600)) }
}

/// "STOP" ends the conversation (and the one queued behind it) as opted
/// out; the next create is refused, naming the date; an override works and
/// is recorded in the conversation and the list. "stop the delivery on
/// Friday" is a sentence, not an opt-out.
#[tokio::test(start_paused = true)]
async fn stop_ends_every_conversation_with_the_contact_and_the_number_is_not_written_to_again() {
    let w = SandboxWorld::start(polite_agent(), any_hour());
    let id = w.engine.create(request(Duration::from_secs(3600))).await.unwrap().id;
    let queued = w.engine.create(request(Duration::from_secs(3600))).await.unwrap();
    assert_eq!(queued.state, State::Queued);
    until_state(&w.engine, id, State::WaitingForReply).await;

    w.say(CONTACT, "stop the delivery on Friday").await;
    let answered = until(&w.engine, id, |i| i.state == State::WaitingForReply && i.last_contact_message.is_some());
    assert_eq!(answered.await.outcome, None, "a sentence with 'stop' in it is not an opt-out");

    w.say(CONTACT, "STOP").await;
    let ended = until_state(&w.engine, id, State::Abandoned).await;
    assert_eq!((ended.outcome, ended.ended_by), (Some(Outcome::OptedOut), Some(EndedBy::Contact)));
    let behind = until_state(&w.engine, queued.id, State::Abandoned).await;
    assert_eq!(behind.outcome, Some(Outcome::OptedOut));
    let sent_before = sent_by_agent(&w, id).len();

    let refused = w.engine.create(request(Duration::from_secs(3600))).await.unwrap_err();
    assert!(matches!(refused, EngineError::OptedOut(_)), "{refused}");
    assert!(refused.to_string().starts_with("+56912345678 asked on "), "{refused}");
    let listed = w.engine.opt_outs();
    assert_eq!((listed.len(), listed[0].instance_id), (1, Some(id)));

    let anyway = CreateInstanceRequest {
        override_opt_out: Some("they phoned and asked us to write".into()),
        ..request(Duration::from_secs(3600))
    };
    let again = w.engine.create(anyway).await.unwrap().id;
    let started = until_state(&w.engine, again, State::WaitingForReply).await;
    assert_eq!(started.opt_out_override.as_deref(), Some("they phoned and asked us to write"));
    assert_eq!(w.engine.opt_outs()[0].overrides[0].instance_id, again);
    assert_eq!(sent_by_agent(&w, id).len(), sent_before, "nothing more in the ended conversation");
}

/// An engine on a sandbox home running `agent`: a conversation's first
/// message goes out, then the contact answers `said`.
async fn first_message_then(agent: Arc<TestAgent>, said: &str) -> (tempfile::TempDir, Engine, uuid::Uuid) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let channel = Arc::new(SandboxChannel::open(&home).unwrap());
    let engine = start_engine_with(&home, channel.clone(), agent, any_hour());
    let id = engine.create(request(Duration::from_secs(3600))).await.unwrap().id;
    until_state(&engine, id, State::WaitingForReply).await;
    channel.say(Contact::parse(CONTACT).unwrap(), said.into()).await;
    (dir, engine, id)
}

/// The agent's own `contact_opted_out` does what "STOP" does.
#[tokio::test(start_paused = true)]
async fn the_agents_contact_opted_out_lists_the_number_and_ends_the_conversation() {
    let agent = Arc::new(TestAgent::new(|turn: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
        Box::pin(async move {
            let call = match turn.kind {
                TurnKind::FirstMessage => ToolCall::SendMessage { text: "Hello".into() },
                _ => ToolCall::ContactOptedOut { reason: "they asked to be left alone".into() },
            };
            tools.call(call).await.unwrap();
            Ok(())
        })
    }));
    let (_dir, engine, id) = first_message_then(agent, "please leave me alone, thanks").await;
    let ended = until_state(&engine, id, State::Abandoned).await;
    assert_eq!((ended.outcome, ended.ended_by), (Some(Outcome::OptedOut), Some(EndedBy::Contact)));
    assert!(matches!(engine.create(request(Duration::from_secs(3600))).await, Err(EngineError::OptedOut(_))));
}

/// An agent's `contact_opted_out` that the contact's words do not back
/// (small models called it when asked for a person, or whether relay is a
/// bot, or on a first "hello") lists no one. The first call is refused with
/// the contact's words and the turn goes on; a model that insists hands the
/// conversation to a person, who decides.
#[tokio::test(start_paused = true)]
async fn an_opt_out_the_contacts_words_do_not_back_is_refused_then_goes_to_a_person() {
    for insists in [false, true] {
        let agent = Arc::new(TestAgent::new(move |turn: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
            Box::pin(async move {
                if turn.kind == TurnKind::FirstMessage {
                    tools.call(ToolCall::SendMessage { text: "Hello".into() }).await.unwrap();
                    return Ok(());
                }
                let opt_out = || ToolCall::ContactOptedOut { reason: "they do not want a bot".into() };
                let refused = tools.call(opt_out()).await.unwrap_err().0;
                assert!(refused.contains("do not ask to stop"), "{refused}");
                assert!(refused.contains("Put me through to a real person"), "their words are shown: {refused}");
                if insists {
                    let said = tools.call(opt_out()).await.unwrap();
                    assert!(said.contains("a person will decide"), "{said}");
                } else {
                    tools.call(ToolCall::SendMessage { text: "Of course, one moment.".into() }).await.unwrap();
                }
                Ok(())
            })
        }));
        let said = "I don't want to talk to a bot. Put me through to a real person, please.";
        let (_dir, engine, id) = first_message_then(agent, said).await;
        if insists {
            let handed = until_state(&engine, id, State::NeedsHumanIntervention).await;
            let question = handed.pending_question.expect("the person is asked");
            assert!(question.reason.contains("relay optout add"), "{}", question.reason);
            assert_eq!(question.question.as_deref(), Some("they do not want a bot"));
            assert_eq!(handed.outcome, None);
        } else {
            let going_on =
                until(&engine, id, |i| i.state == State::WaitingForReply && i.last_contact_message.is_some()).await;
            assert_eq!((going_on.pending_question, going_on.outcome), (None, None));
        }
        assert_eq!(engine.opt_outs().len(), 0, "nobody is listed on the model's word");
    }
}

/// relay's line that an assistant writes goes before the first message
/// only, whatever the model wrote.
#[tokio::test(start_paused = true)]
async fn the_first_message_carries_the_disclosure_and_later_ones_do_not() {
    let mut settings = any_hour();
    settings.courtesy.disclosure = relay::config::DEFAULT_DISCLOSURE.into();
    settings.courtesy.operator_name = Some("Ana Pérez".into());
    let w = SandboxWorld::start(polite_agent(), settings);
    let id = w.engine.create(request(Duration::from_secs(3600))).await.unwrap().id;
    until_state(&w.engine, id, State::WaitingForReply).await;
    w.say(CONTACT, "Friday").await;
    until(&w.engine, id, |i| i.state == State::WaitingForReply && i.last_contact_message.is_some()).await;
    let texts: Vec<String> = w.channel.outbox(None).into_iter().map(|e| e.text).collect();
    assert_eq!(
        texts,
        ["This is an automated assistant writing on behalf of Ana Pérez.\n\nHello", "Noted"],
        "the disclosure, then the model's words"
    );
    assert_eq!(w.engine.record(&id.to_string()).unwrap().pending_disclosure, None);
}
