//! What the in-process media tests share: a contact's photo whose fetch
//! fails on cue, an agent that keeps what it read, and a conversation
//! waiting for the contact's reply.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
use relay::api::{MediaInfo, MediaKind, Role, State, TranscriptMessage};
use relay::channel::{Fetch, FetchError, InboundMedia};
use relay::contact::Contact;
use relay::engine::Settings;
use relay::util::BoxFuture;

use crate::support::engine::{SandboxWorld, until};
use crate::support::test_agent::TestAgent;

pub(super) use crate::support::media::{hex, jpeg, sent_sha};

pub(super) const CONTACT: &str = "+56912345678";

/// An agent that writes "Hello" first and answers each reply with "Got it",
/// keeping what the contact's last message read as in each reply turn.
pub(super) fn reading_agent() -> (Arc<TestAgent>, Arc<Mutex<Vec<String>>>) {
    let read = Arc::new(Mutex::new(Vec::new()));
    let seen = read.clone();
    let agent = TestAgent::new(move |turn: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
        if turn.kind == TurnKind::Reply {
            let last = turn.transcript.iter().rev().find(|m| m.role == Role::Contact).unwrap();
            seen.lock().unwrap().push(last.content.clone());
        }
        Box::pin(async move {
            let text = if turn.kind == TurnKind::FirstMessage { "Hello" } else { "Got it" };
            tools.call(ToolCall::SendMessage { text: text.into() }).await.unwrap();
            Ok(())
        })
    });
    (Arc::new(agent), read)
}

/// A fetch that fails `failures` times, then gives `bytes`; and its calls.
pub(super) fn flaky(bytes: Vec<u8>, failures: u32) -> (Fetch, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let fetch: Fetch = Arc::new(move |_max| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        let bytes = bytes.clone();
        Box::pin(async move {
            if n < failures { Err(FetchError::retryable("503 from the media server")) } else { Ok(bytes) }
        })
    });
    (fetch, calls)
}

pub(super) fn photo(fetch: Fetch) -> InboundMedia {
    InboundMedia {
        kind: MediaKind::Photo,
        declared_mime: Some("image/jpeg".into()),
        declared_bytes: None,
        declared_sha256: None,
        seconds: None,
        file_name: None,
        caption: Some("the meter".into()),
        fetch,
    }
}

/// A conversation waiting for the contact's reply, on a fresh sandbox.
pub(super) async fn waiting(settings: Settings) -> (SandboxWorld, uuid::Uuid, Arc<Mutex<Vec<String>>>) {
    let (agent, read) = reading_agent();
    let w = SandboxWorld::start(agent, settings);
    let request = relay::api::CreateInstanceRequest {
        objective: "Get a photo of the meter".into(),
        target_contact: CONTACT.into(),
        todos: vec![relay::api::NewTodo::new("Get the meter reading")],
        heartbeat_config: Some(relay::api::HeartbeatOverrides { interval_ms: Some(3_600_000), max_followups: Some(1) }),
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    (w, id, read)
}

pub(super) async fn send(w: &SandboxWorld, media: InboundMedia) {
    w.channel.say_media(Contact::parse(CONTACT).unwrap(), media).await;
}

/// The contact's message with media, as the transcript has it now.
pub(super) fn media_message(w: &SandboxWorld, id: uuid::Uuid) -> (TranscriptMessage, MediaInfo) {
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    let message = transcript.into_iter().find(|m| m.media.is_some()).expect("a media message");
    let media = *message.media.clone().unwrap();
    (message, media)
}

pub(super) async fn replied(w: &SandboxWorld, id: uuid::Uuid) {
    until(&w.engine, id, |i| i.state == State::WaitingForReply && i.last_contact_message.is_some()).await;
}
