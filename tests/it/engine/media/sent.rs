//! Files relay sends (issue 28, plan step 11): a conversation's attachments,
//! given at create, sent by the agent (`send_attachment`) under the same
//! guards as a message, and by the operator (`relay send --file`); on the
//! sandbox they reach the outbox with their hash, and receipts move them on
//! as they do text.
use relay::agent::ToolError;
use relay::api::{
    CreateInstanceRequest, NewAttachment, NewTodo, OptOut, OptOutSource, PhoneAction, SendFile, SendStatus,
};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
use relay::api::{MediaKind, MediaStatus, Role, State};
use relay::contact::Contact;
use relay::util::BoxFuture;

use crate::support::engine::{SandboxWorld, any_hour, until};
use crate::support::test_agent::TestAgent;

use super::fixtures::*;

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
        heartbeat_config: Some(relay::api::HeartbeatOverrides { interval_ms: Some(3_600_000), max_followups: Some(1) }),
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
    assert_eq!(files[0].sha256, sent_sha(PDF));
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
    assert_eq!((file.bytes, file.sha256.as_str()), (PDF.len() as u64, sent_sha(PDF).as_str()));

    let sent = &w.agent_messages(id)[0];
    assert_eq!(sent.content, "[sent a1: invoice.pdf] Here is the invoice");
    let media = sent.media.as_deref().unwrap();
    assert_eq!((media.reference.as_str(), media.status), ("a1", MediaStatus::Stored));
    assert_eq!(media.sha256.as_deref(), Some(sent_sha(PDF).as_str()));
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
        ("Signed", sent_sha(&contract).as_str())
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
