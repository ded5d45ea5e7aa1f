//! The catch-up in-process, on tokio's paused clock: a message handed over
//! late is read as of when it was written. (relay away and back, end to
//! end, is `e2e::catch_up`.)

use serde_json::json;

use crate::support::CONTACT;

/// A message written at 23:50 and handed over by a catch-up at 00:10 is
/// read as written at 23:50: "mañana" is the day after it was written, not
/// after it arrived.
#[tokio::test(start_paused = true)]
async fn a_late_message_is_read_as_of_when_it_was_written() {
    use std::sync::{Arc, Mutex};

    use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
    use relay::api::{AnswerSchema, CreateInstanceRequest, NewTodo, State, TodoStatus};
    use relay::channel::InboundMessage;
    use relay::contact::Contact;

    use crate::support::engine::{SandboxWorld, any_hour, until};
    use crate::support::test_agent::TestAgent;

    // 00:10 in Santiago (UTC-3 in January).
    relay::clock::pretend("2026-01-16T03:10:00Z".parse().unwrap());
    let said = Arc::new(Mutex::new(Vec::new()));
    let seen = said.clone();
    let agent = TestAgent::new(move |turn: Turn, tools: ConversationTools| -> relay::util::BoxFuture<'static, _> {
        let seen = seen.clone();
        Box::pin(async move {
            if turn.kind == TurnKind::Reply {
                let mark = ToolCall::MarkTodoItem {
                    todo_id: "1".into(),
                    status: TodoStatus::Completed,
                    answer: Some("mañana".into()),
                    value: Some(json!("2026-01-16")),
                    quote: Some("mañana".into()),
                    media: None,
                };
                let result = tools.call(mark).await;
                seen.lock().unwrap().push(result);
            }
            tools.call(ToolCall::SendMessage { text: "Noted".into() }).await.ok();
            Ok(())
        })
    });
    let w = SandboxWorld::start(Arc::new(agent), any_hour());
    let request = CreateInstanceRequest {
        objective: "Agree on the day".into(),
        target_contact: CONTACT.into(),
        todos: vec![NewTodo { text: "The day".into(), answer_schema: Some(AnswerSchema::shorthand("date").unwrap()) }],
        time_zone: Some("America/Santiago".into()),
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    let written = "2026-01-16T02:50:00Z".parse().unwrap();
    let late = InboundMessage {
        written_at: Some(written),
        ..InboundMessage::new(Contact::parse(CONTACT).unwrap(), "mañana")
    };
    w.engine.deliver(late).await;
    until(&w.engine, id, |_| !said.lock().unwrap().is_empty()).await;
    let result = said.lock().unwrap()[0].clone();
    assert!(result.is_ok(), "{result:?}");
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    assert_eq!(transcript.iter().find(|m| m.content == "mañana").unwrap().written_at, Some(written));
}
