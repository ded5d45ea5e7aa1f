//! A contact's file at the engine's seam: the message is recorded at once,
//! the file fetched beside the conversation (retried, capped, checked),
//! stored owner-only under relay's name, and the reply waits for it and reads
//! its label; a file that cannot be had is recorded so, and files are
//! removed after `media.keep` or when no transcript names them.

use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
use relay::api::{MediaKind, MediaStatus, State};
use relay::channel::{Fetch, InboundMedia};
use relay::contact::Contact;
use relay::util::BoxFuture;
use sha2::Digest;
use tokio::sync::Notify;

use crate::support::engine::{SandboxWorld, any_hour, until};
use crate::support::test_agent::TestAgent;

use super::fixtures::*;

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
    assert_eq!(w.engine.record(&id.to_string()).unwrap().media_received, 1);
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
    assert_eq!(delivered, relay::channel::InboundOutcome::NoConversation);
    let kept = std::fs::read_to_string(w.home.root().join("unrouted.jsonl")).unwrap();
    let kept: serde_json::Value = serde_json::from_str(kept.lines().next().unwrap()).unwrap();
    assert_eq!(kept["text"], "[photo, not fetched] look (photo m9)");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
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
