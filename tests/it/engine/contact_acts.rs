//! A contact's act during a turn, in-process on tokio's paused clock: an
//! answer resting on words the contact edited while the turn was under way
//! is refused. (Acts end to end are `e2e::contact_acts`.)

use crate::support::CONTACT;

/// The contact edits their answer while the agent's turn is under way: the
/// turn can no longer record an answer resting on the words they took back.
#[tokio::test(start_paused = true)]
async fn an_answer_resting_on_words_edited_during_the_turn_is_refused() {
    use crate::support::engine::{SandboxWorld, any_hour, until};
    use crate::support::test_agent::TestAgent;
    use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
    use relay::api::{CreateInstanceRequest, NewTodo, Role, State, TodoStatus};
    use relay::channel::{InboundAct, InboundMessage};
    use relay::contact::Contact;
    use std::sync::{Arc, Mutex};

    let edited = Arc::new(tokio::sync::Notify::new());
    let said = Arc::new(Mutex::new(Vec::new()));
    let (wait, seen) = (edited.clone(), said.clone());
    let agent = TestAgent::new(move |turn: Turn, tools: ConversationTools| -> relay::util::BoxFuture<'static, _> {
        let (wait, seen) = (wait.clone(), seen.clone());
        Box::pin(async move {
            if turn.kind == TurnKind::Reply && !turn.transcript.iter().any(|m| m.act.is_some()) {
                wait.notified().await;
                let mark = ToolCall::MarkTodoItem {
                    todo_id: "1".into(),
                    status: TodoStatus::Completed,
                    answer: Some("Friday".into()),
                    value: None,
                    quote: Some("Friday works".into()),
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
        todos: vec![NewTodo::new("The day")],
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;
    until(&w.engine, id, |i| i.state == State::WaitingForReply).await;
    w.say(CONTACT, "Friday works").await;
    until(&w.engine, id, |i| i.state == State::Active).await;
    let transcript = w.engine.transcript(&id.to_string()).unwrap();
    let theirs = transcript.iter().find(|m| m.role == Role::Contact).unwrap();
    let of = theirs.channel_message_id.clone().unwrap();
    let edit = InboundMessage {
        act: Some(InboundAct::Edit { of }),
        ..InboundMessage::new(Contact::parse(CONTACT).unwrap(), "Saturday works")
    };
    w.engine.deliver(edit).await;
    edited.notify_one();
    until(&w.engine, id, |_| !said.lock().unwrap().is_empty()).await;
    let refused = said.lock().unwrap()[0].clone().unwrap_err().to_string();
    assert!(refused.contains("the contact never wrote \"Friday works\""), "{refused}");
    assert!(w.engine.get(&id.to_string()).unwrap().todos[0].answer.is_none());
}
