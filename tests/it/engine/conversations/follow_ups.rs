//! A conversation from CREATED to COMPLETED with no one stepping in, and its
//! follow-ups: a silent contact gets `max_followups` of them, then the
//! conversation is abandoned; a reply resets the count.

use std::sync::Mutex;
use std::time::Duration;

use relay::agent::{ToolCall, TurnKind};
use relay::api::{Outcome, Role, State, TodoStatus};

use crate::support::engine::until;

use super::fixtures::*;

/// The PRD's first success criterion: CREATED to COMPLETED with no human.
#[tokio::test(start_paused = true)]
async fn a_full_conversation_completes_with_no_manual_intervention() {
    let (w, ended) = world_sharing::<Mutex<Option<_>>>(|turn, tools, ended| {
        Box::pin(async move {
            match turn.kind {
                TurnKind::FirstMessage => {
                    tools.call(send("Hi! Which day suits you for the delivery?")).await.unwrap();
                }
                TurnKind::Reply => {
                    let last = turn.transcript.last().unwrap();
                    assert_eq!(last.role, Role::Contact);
                    tools
                        .call(ToolCall::MarkTodoItem {
                            todo_id: "1".into(),
                            status: TodoStatus::Completed,
                            answer: Some(format!("contact said: {}", last.content)),
                            value: None,
                            quote: Some(last.content.clone()),
                            media: None,
                        })
                        .await
                        .unwrap();
                    tools.call(send("Great, Friday 3pm it is. Thank you!")).await.unwrap();
                    let end = ToolCall::EndConversation {
                        reason: "the contact confirmed".into(),
                        outcome: Some(Outcome::Achieved),
                        summary: Some("delivery day confirmed".into()),
                    };
                    // The agent's own turn hears back from end_conversation.
                    *ended.lock().unwrap() = Some(tools.call(end).await);
                }
                other => panic!("unexpected turn {other:?}"),
            }
            Ok(())
        })
    });
    let created = w.engine.create(request(&["Ask which day suits"], None, None)).await.unwrap();
    assert_eq!(created.state, State::Created);
    until_state(&w.engine, created.id, State::WaitingForReply).await;
    say(&w, "Friday 3pm").await;
    let done = until_state(&w.engine, created.id, State::Completed).await;

    assert_eq!(
        triggers(&done),
        [
            "create",
            "agent_sends_first_message",
            "message_sent",
            "contact_replies",
            "agent_processes_reply",
            "end_conversation"
        ]
    );
    assert_eq!(done.summary.as_deref(), Some("delivery day confirmed"));
    for _ in 0..1000 {
        if ended.lock().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let answer = ended.lock().unwrap().take().expect("the agent's turn was cut off before end_conversation answered");
    assert!(answer.unwrap().contains("ended"));
    assert_eq!(done.todos[0].status, TodoStatus::Completed);
    assert_eq!(done.todos[0].answer.as_deref(), Some("contact said: Friday 3pm"));
    let sent: Vec<String> = w.channel.outbox(None).into_iter().map(|e| e.text).collect();
    assert_eq!(sent, ["Hi! Which day suits you for the delivery?", "Great, Friday 3pm it is. Thank you!"]);
    let roles: Vec<Role> = w.engine.transcript(&done.id.to_string()).unwrap().iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Agent, Role::Contact, Role::Agent]);
}

/// The PRD's second success criterion: follow-ups at the interval, then
/// ABANDONED. For every small `max_followups` (0 included): exactly that
/// many follow-ups go out, `follow_up_count` is the number sent, and the
/// summary says so.
#[tokio::test(start_paused = true)]
async fn a_silent_contact_gets_max_followups_then_the_conversation_is_abandoned() {
    for max in 0..=4u32 {
        let w = world(|turn, tools| {
            Box::pin(async move {
                let text = match turn.kind {
                    TurnKind::FirstMessage => "Hello!".to_string(),
                    TurnKind::FollowUp { number, max } => format!("Follow-up {number} of {max}"),
                    other => panic!("unexpected turn {other:?}"),
                };
                tools.call(send(&text)).await.unwrap();
                Ok(())
            })
        });
        let interval = Duration::from_secs(30 * 60);
        let started = tokio::time::Instant::now();
        let created = w.engine.create(request(&["t"], Some(interval), Some(max))).await.unwrap();
        let abandoned = until_state(&w.engine, created.id, State::Abandoned).await;

        let sent: Vec<String> = w.channel.outbox(None).into_iter().map(|e| e.text).collect();
        let expected: Vec<String> =
            std::iter::once("Hello!".to_string()).chain((1..=max).map(|n| format!("Follow-up {n} of {max}"))).collect();
        assert_eq!(sent, expected, "exactly 1 + max_followups");
        assert_eq!(abandoned.follow_up_count, max, "the count is the number sent");
        let summary = abandoned.summary.clone().unwrap();
        match max {
            0 => assert!(summary.contains("no follow-up was allowed"), "{summary}"),
            1 => assert_eq!(summary, "The contact did not reply, even after 1 follow-up."),
            n => assert_eq!(summary, format!("The contact did not reply, even after {n} follow-ups.")),
        }
        assert_eq!(abandoned.history.last().unwrap().reason.as_deref(), Some(summary.as_str()));
        // One wait of one interval per message sent, on tokio's clock
        // (deadlines are kept in wall-clock time, which moves a few real
        // milliseconds meanwhile).
        let elapsed = started.elapsed();
        let (slack, waits) = (Duration::from_secs(1), max + 1);
        assert!(elapsed + slack >= interval * waits && elapsed < interval * waits + slack, "{elapsed:?}");
        let follow_ups: Vec<TurnKind> = (1..=max).map(|number| TurnKind::FollowUp { number, max }).collect();
        assert_eq!(w.agent.kinds()[1..], follow_ups[..]);
    }
}

/// A contact who writes starts the count of follow-ups again.
#[tokio::test(start_paused = true)]
async fn a_contact_reply_resets_the_follow_up_count() {
    let w = saying("Hello?");
    let created = w.engine.create(request(&["t"], Some(Duration::from_secs(60)), Some(5))).await.unwrap();
    let counted = until(&w.engine, created.id, |i| i.follow_up_count == 2 && i.state == State::WaitingForReply).await;
    assert_eq!(triggers(&counted).last(), Some(&"followup_sent"));
    say(&w, "Sorry, here now").await;
    let reset = until(&w.engine, created.id, |i| i.unanswered_contact_messages > 0 || i.follow_up_count == 0).await;
    assert_eq!(reset.follow_up_count, 0);
}
