//! The engine against a channel that misbehaves on cue: not ready (logged
//! out, banned), failing sends, slow sends, late refusals, read receipts.
//! In-process, on tokio's paused clock, with a scripted test agent.

use std::sync::Arc;
use std::time::Duration;

use relay::agent::{ToolCall, TurnKind};
use relay::api::{CreateInstanceRequest, HeartbeatOverrides, NewTodo, Role, SendStatus, State, TranscriptMessage};
use relay::channel::{Blocked, ChannelError, InboundMessage, InboundOutcome, MessageRef, Sent};
use relay::contact::Contact;
use tokio::sync::Semaphore;

use crate::support::channel::FakeChannel;
use crate::support::engine::{self, start_engine, until};
use crate::support::test_agent::TestAgent;

const CONTACT: &str = "+56912345678";

type World = engine::World<FakeChannel>;

/// An agent that says `text` once per turn and then waits for the contact.
fn says(text: &'static str) -> Arc<TestAgent> {
    Arc::new(TestAgent::new(move |_turn, tools| {
        Box::pin(async move {
            let _ = tools.call(ToolCall::SendMessage { text: text.into() }).await;
            Ok(())
        })
    }))
}

fn world(channel: FakeChannel, agent: Arc<TestAgent>) -> World {
    World::start(|_| channel, agent)
}

async fn create(w: &World) -> uuid::Uuid {
    let request = CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: CONTACT.into(),
        todos: vec![NewTodo::new("delivery day")],
        heartbeat_config: None,
        ..Default::default()
    };
    w.engine.create(request).await.unwrap().id
}

/// A conversation whose first message is with the channel, which holds it
/// until the test adds a permit to the gate.
async fn with_a_send_stuck_in_the_channel() -> (World, Arc<Semaphore>, uuid::Uuid) {
    let channel = FakeChannel::default();
    let gate = channel.gated();
    let w = world(channel, says("Hi!"));
    let id = create(&w).await;
    until(&w.engine, id, |i| i.state == State::Active).await;
    tokio::task::yield_now().await;
    (w, gate, id)
}

/// The transcript once `done` holds for it. Transcript lines notify no one,
/// so this gives the actor a bounded number of turns to write them.
async fn transcript_when(
    w: &World,
    id: uuid::Uuid,
    done: impl Fn(&[TranscriptMessage]) -> bool,
) -> Vec<TranscriptMessage> {
    let mut transcript = w.engine.transcript(&id.to_string()).unwrap();
    for _ in 0..100 {
        if done(&transcript) {
            break;
        }
        tokio::task::yield_now().await;
        transcript = w.engine.transcript(&id.to_string()).unwrap();
    }
    transcript
}

fn contact() -> Contact {
    Contact::parse(CONTACT).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_conversation_waits_for_a_channel_that_cannot_send_and_goes_on_when_it_is_back() {
    let channel = FakeChannel::default();
    channel.block(Blocked::LoggedOut { reason: "unlinked from the phone".into() });
    let w = world(channel, says("Hi!"));
    let id = create(&w).await;

    let held = until(&w.engine, id, |i| i.channel_blocked.is_some()).await;
    // Not started: relay cannot even ask whether it may write first.
    assert_eq!(held.state, State::Created);
    assert!(held.channel_blocked.unwrap().contains("logged this device out"));
    assert!(w.agent.kinds().is_empty(), "no turn runs while nothing can be sent");

    w.channel.unblock();
    let going = until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    assert_eq!(going.channel_blocked, None);
    assert_eq!(w.channel.sent(), vec!["Hi!"]);
}

#[tokio::test(start_paused = true)]
async fn a_channel_lost_mid_turn_holds_the_conversation_and_the_turn_runs_again() {
    let channel = FakeChannel::default();
    channel.then(Err(ChannelError::Unavailable {
        channel: "fake",
        reason: Blocked::Banned { until: chrono::Utc::now(), reason: "SentToTooManyPeople".into() },
    }));
    let w = world(channel, says("Hi!"));
    let id = create(&w).await;
    let held = until(&w.engine, id, |i| i.channel_blocked.is_some()).await;
    assert_eq!(held.state, State::Active, "nothing is wrong with the conversation itself");
    assert!(w.channel.sent().is_empty());

    w.channel.unblock();
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    assert_eq!(w.channel.sent(), vec!["Hi!"]);
    assert_eq!(w.agent.kinds(), vec![TurnKind::FirstMessage, TurnKind::FirstMessage]);
}

#[tokio::test(start_paused = true)]
async fn a_send_that_fails_after_its_retries_fails_the_conversation_with_the_reason() {
    let channel = FakeChannel::default();
    channel.then(Err(ChannelError::Failed { channel: "fake", reason: "not sent after 3 attempts: timeout".into() }));
    let w = world(channel, says("Hi!"));
    let id = create(&w).await;
    let failed = until(&w.engine, id, |i| i.state.is_terminal()).await;
    assert_eq!(failed.state, State::Failed);
    assert!(failed.failure_reason.unwrap().contains("after 3 attempts"));
    assert_eq!(failed.history.last().unwrap().trigger, "unrecoverable_error");
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    assert_eq!(transcript.len(), 1, "the attempt is recorded");
    assert_eq!(transcript[0].send_status, Some(SendStatus::Failed));
    assert!(transcript[0].delivery_error.as_deref().unwrap().contains("after 3 attempts"));
}

#[tokio::test(start_paused = true)]
async fn a_slow_send_does_not_hold_up_the_contacts_messages() {
    let (w, gate, id) = with_a_send_stuck_in_the_channel().await;

    // The agent's send is stuck in the channel; the contact's message still lands at once.
    let delivery =
        tokio::time::timeout(Duration::from_secs(1), w.engine.deliver(InboundMessage::new(contact(), "hello?")))
            .await
            .expect("the contact's message waited for the send");
    assert_eq!(delivery, InboundOutcome::Delivered(id));

    gate.add_permits(10);
    until(&w.engine, id, |i| i.state == State::WaitingForReply || i.state == State::WaitingForAgent).await;
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    let roles: Vec<Role> = transcript.iter().map(|m| m.role).collect();
    // The agent's message was recorded (pending) before the channel got it.
    assert_eq!(roles[..2], [Role::Agent, Role::Contact], "each recorded when it happened");
    assert_eq!(transcript[0].send_status, Some(SendStatus::Sent));
}

#[tokio::test(start_paused = true)]
async fn answered_messages_are_marked_read_and_sent_ids_recorded() {
    let channel = FakeChannel::default();
    channel.then(Ok(Sent { message_id: Some("WA-1".into()) }));
    let w = world(channel, says("Hi!"));
    let id = create(&w).await;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    assert_eq!(transcript[0].channel_message_id.as_deref(), Some("WA-1"));

    let reference = MessageRef { chat: "lid-chat".into(), id: "IN-1".into() };
    let message = InboundMessage { reference: Some(reference.clone()), ..InboundMessage::new(contact(), "Friday") };
    w.engine.deliver(message).await;
    tokio::time::timeout(Duration::from_secs(60), w.channel.read_marked.notified()).await.expect("marked read");
    assert_eq!(*w.channel.read.lock().unwrap(), vec![reference]);
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    assert_eq!(transcript[1].channel_message_id.as_deref(), Some("IN-1"));
}

/// The account's own messages come back from WhatsApp's other devices:
/// relay's own send, seen again, is not the operator's and changes nothing;
/// one relay did not send is the operator's, and pauses the conversation.
#[tokio::test(start_paused = true)]
async fn relays_own_message_echoed_is_not_the_operators_and_the_operators_is() {
    let channel = FakeChannel::default();
    channel.then(Ok(Sent { message_id: Some("WA-1".into()) }));
    let w = world(channel, says("Hi!"));
    let id = create(&w).await;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    let own = |id: &str, text: &str| InboundMessage {
        reference: Some(MessageRef { chat: "contact-chat".into(), id: id.into() }),
        by_operator: true,
        ..InboundMessage::new(contact(), text)
    };
    assert_eq!(w.engine.deliver(own("WA-1", "Hi!")).await, InboundOutcome::NoConversation, "relay's own, echoed");
    assert_eq!(w.engine.get(&id.to_string()).unwrap().state, State::WaitingForReply);
    assert_eq!(w.engine.transcript(&id.to_string()).unwrap().len(), 1);

    assert_eq!(w.engine.deliver(own("PHONE-1", "Ana here")).await, InboundOutcome::Delivered(id));
    let paused = until(&w.engine, id, |i| i.state == State::Paused).await;
    assert_eq!(paused.history.last().unwrap().trigger, "operator_writes");
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    assert_eq!((transcript[1].role, transcript[1].outside_relay), (Role::Manual, true));
    assert!(w.channel.read.lock().unwrap().is_empty(), "the operator's own message is not marked read");
}

#[tokio::test(start_paused = true)]
async fn a_message_refused_after_it_was_sent_is_marked_in_the_transcript() {
    let channel = FakeChannel::default();
    channel.then(Ok(Sent { message_id: Some("WA-7".into()) }));
    let w = world(channel, says("Hi!"));
    let id = create(&w).await;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;

    w.channel.refused_later("WA-7".into(), "463").await;
    let transcript = transcript_when(&w, id, |t| t[0].delivery_error.is_some()).await;
    assert_eq!(transcript.len(), 1, "annotated in place, not added");
    assert_eq!(transcript[0].delivery_error.as_deref(), Some("463"));
}

#[tokio::test(start_paused = true)]
async fn a_message_from_a_contact_with_no_conversation_is_kept_not_answered() {
    let w = world(FakeChannel::default(), says("Hi!"));
    let stranger = Contact::parse("+14155552671").unwrap();
    let delivery = w.engine.deliver(InboundMessage::new(stranger, "who is this?")).await;
    assert_eq!(delivery, InboundOutcome::NoConversation);
    assert_eq!(w.engine.unrouted_count(), 1);
    let kept = std::fs::read_to_string(w.home.unrouted_file()).unwrap();
    assert!(kept.contains("who is this?") && kept.contains("+14155552671"), "{kept}");
    assert!(w.channel.sent().is_empty());
    assert!(w.agent.kinds().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_message_still_going_out_when_the_conversation_is_cancelled_is_recorded() {
    let (w, gate, id) = with_a_send_stuck_in_the_channel().await;

    w.engine.cancel(&id.to_string()).await.unwrap();
    // The send was already with the channel (say, waiting for WhatsApp to
    // come back, for longer than shutdown would wait): it goes out, so it is
    // written down.
    tokio::time::sleep(Duration::from_secs(60)).await;
    gate.add_permits(1);
    let transcript =
        transcript_when(&w, id, |t| t.first().is_some_and(|m| m.send_status == Some(SendStatus::Sent))).await;
    assert_eq!(w.channel.sent(), vec!["Hi!"]);
    assert_eq!(transcript.len(), 1, "sent after the cancel, and recorded");
    assert_eq!(transcript[0].role, Role::Agent);
}

/// An agent that says `text` unless the transcript shows it already did (or
/// may have): what a careful model does with what relay tells it.
fn says_once(text: &'static str) -> Arc<TestAgent> {
    Arc::new(TestAgent::new(move |turn, tools| {
        Box::pin(async move {
            let spoke =
                turn.transcript.iter().any(|m| m.role == Role::Agent && m.send_status != Some(SendStatus::Failed));
            if !spoke {
                let _ = tools.call(ToolCall::SendMessage { text: text.into() }).await;
            }
            Ok(())
        })
    }))
}

#[tokio::test(start_paused = true)]
async fn a_turn_paused_mid_send_waits_for_the_outcome_instead_of_sending_again() {
    let channel = FakeChannel::default();
    let gate = channel.gated();
    let w = world(channel, says_once("Hi!"));
    let id = create(&w).await;
    until(&w.engine, id, |i| i.state == State::Active).await;
    tokio::task::yield_now().await;

    w.engine.pause(&id.to_string()).await.unwrap();
    let resumed = w.engine.resume(&id.to_string()).await.unwrap();
    assert_eq!(resumed.state, State::Active);
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(w.agent.kinds(), vec![TurnKind::FirstMessage], "no turn while its message is with the channel");

    gate.add_permits(10);
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    assert_eq!(w.channel.sent(), vec!["Hi!"], "sent once");
    let turns = w.agent.turns.lock().unwrap().clone();
    assert_eq!(turns[1].kind, TurnKind::Resume);
    assert_eq!(turns[1].transcript[0].send_status, Some(SendStatus::Sent), "the turn saw how its send ended");
}

#[tokio::test(start_paused = true)]
async fn after_a_stop_mid_send_the_message_is_unconfirmed_and_not_sent_again() {
    let (w, _gate, id) = with_a_send_stuck_in_the_channel().await;
    // The send never reports back (as if relay were killed while WhatsApp had it).
    w.engine.shutdown().await;
    assert!(!w.home.clean_shutdown_file().exists(), "a send was left without its outcome");
    assert_eq!(w.engine.transcript(&id.to_string()).unwrap()[0].send_status, Some(SendStatus::Pending));

    let channel = Arc::new(FakeChannel::default());
    let agent = says_once("Hi!");
    let engine = start_engine(&w.home, channel.clone(), agent.clone());
    until(&engine, id, |i| i.state == State::WaitingForReply).await;
    let transcript = engine.transcript(&id.to_string()).unwrap();
    assert_eq!(transcript.len(), 1);
    assert_eq!(transcript[0].send_status, Some(SendStatus::Unconfirmed));
    let turns = agent.turns.lock().unwrap().clone();
    assert_eq!(turns[0].transcript[0].send_status, Some(SendStatus::Unconfirmed), "the model is told");
    assert!(channel.sent().is_empty(), "not sent again blindly");
}

#[tokio::test(start_paused = true)]
async fn a_clean_shutdown_is_marked_and_the_mark_is_taken_at_start() {
    let w = world(FakeChannel::default(), says("Hi!"));
    let id = create(&w).await;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    w.engine.shutdown().await;
    assert!(w.home.clean_shutdown_file().exists());
    let engine = start_engine(&w.home, w.channel.clone(), w.agent.clone());
    assert!(!w.home.clean_shutdown_file().exists(), "a crash from now on must be noticed");
    assert_eq!(engine.transcript(&id.to_string()).unwrap()[0].send_status, Some(SendStatus::Sent));
}

/// While the channel catches up on what came while relay was away, a first
/// message and a follow-up wait (the contact may have written meanwhile);
/// the message the catch-up brings is answered at once, and the catch-up's
/// end lets the first message go.
#[tokio::test(start_paused = true)]
async fn first_messages_and_follow_ups_wait_while_the_channel_catches_up_but_answers_do_not() {
    let agent = Arc::new(TestAgent::new(|turn, tools| {
        Box::pin(async move {
            let text = match (turn.kind, turn.transcript.iter().any(|m| m.role == Role::Contact)) {
                (TurnKind::FirstMessage, _) => "Hi!",
                (_, true) => "Thanks!",
                (_, false) => "Still there?",
            };
            let _ = tools.call(ToolCall::SendMessage { text: text.into() }).await;
            Ok(())
        })
    }));
    let channel = FakeChannel::default();
    channel.catch_up();
    let w = world(channel, agent);
    let request = CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: CONTACT.into(),
        todos: vec![NewTodo::new("delivery day")],
        heartbeat_config: Some(HeartbeatOverrides { interval_ms: Some(60_000), max_followups: Some(3) }),
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;

    // On the paused clock an hour passes at once, once every task is idle.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(w.engine.get(&id.to_string()).unwrap().state, State::Created);
    assert!(w.agent.kinds().is_empty() && w.channel.sent().is_empty(), "the first message waits");
    w.channel.caught_up();
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    assert_eq!(w.channel.sent(), ["Hi!"]);

    // A reconnection catches up again: the follow-up due waits...
    w.channel.catch_up();
    until(&w.engine, id, |i| i.state == State::HeartbeatScheduled).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(w.channel.sent(), ["Hi!"], "no follow-up while catching up");
    // ...and what the contact wrote meanwhile is answered, catch-up or not.
    assert_eq!(w.engine.deliver(InboundMessage::new(contact(), "Friday works")).await, InboundOutcome::Delivered(id));
    until(&w.engine, id, |i| i.state == State::WaitingForReply && i.unanswered_contact_messages == 0).await;
    assert_eq!(w.channel.sent(), ["Hi!", "Thanks!"]);
    w.channel.caught_up();
}
