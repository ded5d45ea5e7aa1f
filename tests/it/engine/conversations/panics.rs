//! A panic in a conversation's task or turn (a bug in relay) is caught, the
//! conversation restored from disk and the event log told, or a person asked.

use relay::api::State;
use relay::engine::Engine;

use super::fixtures::*;

/// The events of conversation `id` so far, by type.
async fn event_kinds(engine: &Engine, id: uuid::Uuid) -> Vec<relay::api::EventData> {
    use futures_util::StreamExt;
    engine.events(0, Some(id), false).unwrap().map(|e| e.unwrap().data.clone()).collect().await
}

fn recovered(events: &[relay::api::EventData]) -> Vec<String> {
    let reason = |e: &relay::api::EventData| match e {
        relay::api::EventData::Recovered { reason } => Some(reason.clone()),
        _ => None,
    };
    events.iter().filter_map(reason).collect()
}

/// A panic in the contact's task (a bug in relay) is caught: the
/// conversation is read back from disk, the event log says so, and it goes
/// on; the same conversation panicking again goes to a person, with the
/// reason. The contact's other conversations are not lost either way.
#[tokio::test(start_paused = true)]
async fn a_panic_in_a_conversations_task_is_caught_restored_and_said() {
    let w = saying("Hi! Which day suits you?");
    w.agent.ready_panics.store(1, std::sync::atomic::Ordering::SeqCst);
    let id = w.engine.create(request(&["Ask which day suits"], None, None)).await.unwrap().id;
    until_state(&w.engine, id, State::WaitingForReply).await;
    let events = event_kinds(&w.engine, id).await;
    assert_eq!(recovered(&events).len(), 1, "{events:?}");
    assert!(recovered(&events)[0].contains("restored this conversation from disk"), "{events:?}");

    // Twice in one conversation: a person decides. The next one, queued
    // behind it for the same contact, is still there; its first turn was
    // not due yet (CREATED), so it waits paused, with the reason. The
    // operator's cancel that set it going stands.
    w.agent.ready_panics.store(2, std::sync::atomic::Ordering::SeqCst);
    let second = w.engine.create(request(&["Ask which time suits"], None, None)).await.unwrap().id;
    w.engine.cancel(&id.to_string()).await.unwrap();
    let stuck = until_state(&w.engine, second, State::Paused).await;
    let why = stuck.history.last().and_then(|t| t.reason.clone()).unwrap_or_default();
    assert!(why.contains("internal error (a bug) twice"), "{stuck:?}");
    assert_eq!(recovered(&event_kinds(&w.engine, second).await).len(), 2);
    // And the engine still serves it: resumed, it goes on.
    w.engine.resume(&second.to_string()).await.unwrap();
    until_state(&w.engine, second, State::WaitingForReply).await;
}

/// A turn that panics (a bug in relay, in the agent) ends, failed, instead
/// of never: the conversation goes to a person with the reason.
#[tokio::test(start_paused = true)]
async fn a_turn_that_panics_ends_and_a_person_is_asked() {
    let w = world(|_turn, _tools| Box::pin(async move { panic!("a bug, played by the test agent's turn") }));
    let id = w.engine.create(request(&["Ask which day suits"], None, None)).await.unwrap().id;
    let stuck = until_state(&w.engine, id, State::NeedsHumanIntervention).await;
    assert!(stuck.intervention_reason.as_deref().unwrap_or("").contains("internal error (a bug)"), "{stuck:?}");
}
