//! Receipts in-process, on a fake channel: receipts for messages relay did
//! not send change nothing, anywhere. (Delivery end to end is
//! `e2e::delivery`.)

use std::sync::Arc;

/// Receipts for messages relay did not send (the operator's own chats on
/// the linked phone) change nothing, anywhere.
#[test]
fn receipts_for_messages_relay_did_not_send_change_nothing() {
    use relay::api::SendStatus;
    use relay::channel::SentUpdate;

    use crate::support::channel::FakeChannel;
    use crate::support::engine::World;
    use crate::support::test_agent::TestAgent;

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    runtime.block_on(async {
        let agent = Arc::new(TestAgent::new(|_, _| Box::pin(async { Ok(()) })));
        let w = World::start(|_| FakeChannel::default(), agent);
        let files = |home: &relay::home::Home| {
            let mut names: Vec<String> = walk(home.root());
            names.sort();
            names
        };
        let before = files(&w.home);
        for status in [SendStatus::Delivered, SendStatus::Read, SendStatus::Played] {
            let receipt = SentUpdate::Receipt { status, at: chrono::Utc::now() };
            w.channel.sink.get().unwrap().sent_update("3EB0NOT-RELAYS".into(), receipt).await;
        }
        w.channel.sink.get().unwrap().sent_update("3EB0NOT-RELAYS".into(), SentUpdate::Refused("463".into())).await;
        assert_eq!(files(&w.home), before, "no file written, no event logged");
    });
}

/// Every file under `dir`, with its size: what a write would change.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(format!("{} {}", path.display(), std::fs::metadata(&path).unwrap().len()));
        }
    }
    out
}

/// The agent hears that its message went out before relay has written the
/// settled line; whatever it does next takes effect after that line: the
/// event log says the message went out before the conversation moved on.
#[tokio::test(start_paused = true)]
async fn what_the_agent_does_after_a_send_comes_after_the_send_is_settled() {
    use futures_util::StreamExt;
    use relay::agent::ToolCall;
    use relay::api::{CreateInstanceRequest, EventData, NewTodo, SendStatus, State};

    use crate::support::channel::FakeChannel;
    use crate::support::engine::{World, until};
    use crate::support::test_agent::TestAgent;

    let agent = Arc::new(TestAgent::new(|_, tools| {
        Box::pin(async move {
            assert_eq!(tools.call(ToolCall::SendMessage { text: "Hi!".into() }).await.unwrap(), "sent");
            let ask = ToolCall::RequestHumanIntervention { reason: "a person decides".into(), question: None };
            tools.call(ask).await.unwrap();
            Ok(())
        })
    }));
    let w = World::start(|_| FakeChannel::default(), agent);
    let request = CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: "+56912345678".into(),
        todos: vec![NewTodo::new("delivery day")],
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;
    until(&w.engine, id, |i| i.state == State::NeedsHumanIntervention).await;

    let events: Vec<EventData> =
        w.engine.events(0, Some(id), false).unwrap().map(|e| e.unwrap().data.clone()).collect().await;
    let sent = events.iter().position(|e| matches!(e, EventData::MessageOut { send_status: SendStatus::Sent, .. }));
    let asked =
        events.iter().position(|e| matches!(e, EventData::Transition { to: State::NeedsHumanIntervention, .. }));
    assert!(sent.unwrap() < asked.unwrap(), "{events:?}");
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    assert!(transcript.iter().any(|m| m.content == "Hi!" && m.send_status == Some(SendStatus::Sent)));
}
