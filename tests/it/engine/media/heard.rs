//! Transcription against the scripted server (which hears the words a
//! scripted voice note carries), on the real clock: the server is real
//! HTTP, and a paused clock would run the transcription's timeout out while
//! the socket waits.
use relay::config::TranscriptionConfig;
use relay::media::ogg::scripted_voice_note;
use relay::scripted_model::{ScriptedModel, queue};

use std::sync::Arc;
use std::time::Duration;

use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
use relay::api::{MediaKind, State};
use relay::channel::InboundMedia;
use relay::engine::Settings;
use relay::util::BoxFuture;

use crate::support::engine::{SandboxWorld, any_hour, until};
use crate::support::test_agent::TestAgent;

use super::fixtures::*;

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
