//! The agent's turns: how one may end, what a message during one, a pause,
//! a request for a human, a failing model or a restart does to it, the
//! tools' refusals, and a reply and a heartbeat that never race.

use std::sync::Mutex;
use std::time::Duration;

use relay::agent::{AgentError, ToolCall, TurnKind};
use relay::api::{CreateInstanceRequest, Role, State, TodoStatus};
use tokio::sync::Notify;

use crate::support::engine::until;

use super::fixtures::*;

/// How a turn may end (src/agent/mod.rs `may_end_without_sending`), for any
/// agent: a turn that sends nothing hands the conversation to a person,
/// whatever its kind, except a reply turn that chose when to follow up.
#[tokio::test(start_paused = true)]
async fn a_turn_that_sends_nothing_hands_the_conversation_to_a_person() {
    const SILENT: &str = "the model answered without using its tools";
    // Each turn does what the contact's last message (or the turn kind) says.
    let w = world(|turn, tools| {
        Box::pin(async move {
            let last_contact =
                turn.transcript.iter().rev().find(|m| m.role == Role::Contact).map(|m| m.content.clone());
            match (turn.kind, last_contact.as_deref()) {
                (TurnKind::FirstMessage, _) if turn.instance.objective == "silent" => {}
                (TurnKind::FirstMessage, _) => drop(tools.call(send("Hello!")).await.unwrap()),
                (TurnKind::Reply, Some("ask me in 2 hours")) => {
                    let later = ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(7200) };
                    tools.call(later).await.unwrap();
                }
                (TurnKind::Reply, Some("question")) => {
                    let ask = ToolCall::RequestHumanIntervention {
                        reason: "pricing".into(),
                        question: Some("10% off?".into()),
                    };
                    tools.call(ask).await.unwrap();
                }
                // Every other turn (reply, follow-up, resume, answered) says nothing.
                _ => {}
            }
            Ok(())
        })
    });
    let silent_request = || CreateInstanceRequest { objective: "silent".into(), ..request(&["t"], None, Some(3)) };

    // A first turn.
    let first = w.engine.create(silent_request()).await.unwrap();
    let needs = until_state(&w.engine, first.id, State::NeedsHumanIntervention).await;
    assert_eq!(needs.intervention_reason.as_deref(), Some(SILENT));
    assert_eq!(triggers(&needs)[1..], ["agent_sends_first_message", "agent_error"]);
    // A resume turn, after the operator handed it back.
    w.engine.resume(&first.id.to_string()).await.unwrap();
    let needs = until(&w.engine, first.id, |i| triggers(i)[triggers(i).len() - 2..] == ["resume", "agent_error"]).await;
    assert_eq!((needs.state, needs.intervention_reason.as_deref()), (State::NeedsHumanIntervention, Some(SILENT)));
    w.engine.cancel(&first.id.to_string()).await.unwrap();

    // A reply turn that only chose when to follow up waits, silently.
    let id = w.engine.create(request(&["t"], None, Some(3))).await.unwrap().id;
    until_state(&w.engine, id, State::WaitingForReply).await;
    say(&w, "ask me in 2 hours").await;
    let waiting = until(&w.engine, id, |i| triggers(i).last() == Some(&"agent_waits")).await;
    assert_eq!(waiting.state, State::WaitingForReply);
    let due = waiting.next_heartbeat_at.unwrap() - waiting.updated_at;
    assert!(due > chrono::Duration::seconds(7199) && due <= chrono::Duration::seconds(7200), "{due}");
    // The follow-up turn it leads to has to speak: it did not.
    let needs = until_state(&w.engine, id, State::NeedsHumanIntervention).await;
    assert_eq!(triggers(&needs)[triggers(&needs).len() - 2..], ["heartbeat_fires", "agent_error"]);
    assert_eq!((needs.intervention_reason.as_deref(), needs.follow_up_count), (Some(SILENT), 0));
    // The operator writes; the contact asks something the agent asks a person about.
    w.engine.send(&id.to_string(), "Hi, Ana here.".into()).await.unwrap();
    say(&w, "question").await;
    let asked = until(&w.engine, id, |i| i.pending_question.is_some()).await;
    assert_eq!(asked.intervention_reason.as_deref(), Some("pricing"));
    // The turn after the answer has to speak: it did not.
    w.engine.answer(&id.to_string(), "yes".into()).await.unwrap();
    let needs =
        until(&w.engine, id, |i| i.state == State::NeedsHumanIntervention && i.pending_question.is_none()).await;
    assert_eq!(triggers(&needs)[triggers(&needs).len() - 2..], ["operator_answers", "agent_error"]);
    assert_eq!(needs.intervention_reason.as_deref(), Some(SILENT));
    // A plain reply turn that says nothing: the same.
    w.engine.send(&id.to_string(), "Anything else?".into()).await.unwrap();
    say(&w, "hmm").await;
    let needs =
        until(&w.engine, id, |i| i.state == State::NeedsHumanIntervention && i.unanswered_contact_messages == 0).await;
    assert_eq!(triggers(&needs)[triggers(&needs).len() - 2..], ["agent_processes_reply", "agent_error"]);
    // Nothing but the operator's messages and the first "Hello!" went out.
    let sent: Vec<String> = w.channel.outbox(None).into_iter().map(|e| e.text).collect();
    assert_eq!(sent, ["Hello!", "Hi, Ana here.", "Anything else?"]);
    // In all of it, never WAITING_FOR_REPLY right after a turn that sent nothing.
    for pair in needs.history.windows(2) {
        if pair[1].to_state == State::WaitingForReply {
            assert!(["message_sent", "agent_waits", "followup_sent"].contains(&pair[1].trigger.as_str()));
        }
    }
}

/// A turn cut short after it spoke (a restart) owes the contact nothing
/// more: re-run, it may end without sending, and the conversation waits.
#[tokio::test(start_paused = true)]
async fn a_turn_rerun_after_it_spoke_may_end_without_sending_again() {
    let (w, _gate) = world_sharing::<Notify>(|turn, tools, gate| {
        Box::pin(async move {
            if turn.kind == TurnKind::FirstMessage {
                assert!(!turn.already_spoke);
                tools.call(send("Hello!")).await.unwrap();
                gate.notified().await; // cut short by the shutdown
            } else {
                assert_eq!(turn.kind, TurnKind::Resume);
                assert!(turn.already_spoke, "the re-run turn is told it spoke");
            }
            Ok(())
        })
    });
    let created = w.engine.create(request(&["t"], None, None)).await.unwrap();
    while w.channel.outbox(None).is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    w.engine.shutdown().await;
    let engine = restart(&w);
    let waiting = until_state(&engine, created.id, State::WaitingForReply).await;
    assert_eq!(triggers(&waiting).last(), Some(&"message_sent"));
    assert_eq!(w.agent.kinds(), [TurnKind::FirstMessage, TurnKind::Resume]);
}

#[tokio::test(start_paused = true)]
async fn a_message_during_a_turn_is_answered_by_the_next_turn() {
    let (w, gate) = world_sharing::<Notify>(|turn, tools, gate| {
        Box::pin(async move {
            if turn.kind == TurnKind::Reply && turn.transcript.len() == 2 {
                gate.notified().await; // hold the first reply turn open
            }
            tools.call(send("ok")).await.unwrap();
            Ok(())
        })
    });
    let created = w.engine.create(request(&["t"], None, None)).await.unwrap();
    until_state(&w.engine, created.id, State::WaitingForReply).await;
    say(&w, "first").await;
    until_state(&w.engine, created.id, State::Active).await;
    say(&w, "second, while the agent is busy").await;
    let busy = w.engine.record(&created.id.to_string()).unwrap();
    assert_eq!((busy.state, busy.unanswered_contact_messages), (State::Active, 1));
    gate.notify_one();
    until(&w.engine, created.id, |i| i.state == State::WaitingForReply && w.agent.kinds().len() == 3).await;
    let turns = w.agent.turns.lock().unwrap();
    let last = turns.last().unwrap();
    assert_eq!(last.kind, TurnKind::Reply);
    let from_contact: Vec<&str> =
        last.transcript.iter().filter(|m| m.role == Role::Contact).map(|m| m.content.as_str()).collect();
    assert_eq!(from_contact, ["first", "second, while the agent is busy"]);
}

#[tokio::test(start_paused = true)]
async fn pause_interrupts_a_turn_and_resume_runs_it_again() {
    let (w, _gate) = world_sharing::<Notify>(|turn, tools, gate| {
        Box::pin(async move {
            if turn.kind == TurnKind::FirstMessage {
                gate.notified().await; // never released: the pause interrupts it
            }
            tools.call(send("Hello after resume")).await.unwrap();
            Ok(())
        })
    });
    let created = w.engine.create(request(&["t"], None, None)).await.unwrap();
    until_state(&w.engine, created.id, State::Active).await;
    let paused = w.engine.pause(&created.id.to_string()).await.unwrap();
    assert_eq!((paused.state, paused.previous_state), (State::Paused, Some(State::Active)));
    assert!(w.channel.outbox(None).is_empty());
    w.engine.resume(&created.id.to_string()).await.unwrap();
    until_state(&w.engine, created.id, State::WaitingForReply).await;
    assert_eq!(w.agent.kinds(), [TurnKind::FirstMessage, TurnKind::Resume]);
    assert_eq!(w.channel.outbox(None).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn asking_for_a_human_ends_the_turn_and_later_calls_are_refused() {
    let (w, refused) = world_sharing::<Mutex<Option<_>>>(|_turn, tools, refused| {
        Box::pin(async move {
            let reason = "the contact asks for a refund; I cannot decide that".to_string();
            tools.call(ToolCall::RequestHumanIntervention { reason, question: None }).await.unwrap();
            *refused.lock().unwrap() = Some(tools.call(send("one more thing")).await);
            Ok(())
        })
    });
    let created = w.engine.create(request(&["t"], None, None)).await.unwrap();
    let needs = until_state(&w.engine, created.id, State::NeedsHumanIntervention).await;
    assert_eq!(needs.intervention_reason.as_deref(), Some("the contact asks for a refund; I cannot decide that"));
    assert_eq!(triggers(&needs).last(), Some(&"request_intervention"));
    let refused = loop {
        if let Some(result) = refused.lock().unwrap().take() {
            break result;
        }
        tokio::task::yield_now().await;
    };
    assert!(refused.unwrap_err().0.contains("this turn is over"));
    assert!(w.channel.outbox(None).is_empty());
    // The operator answers; the conversation waits for the reply with its heartbeat armed.
    w.engine.send(&created.id.to_string(), "Hi, I am the human in charge.".into()).await.unwrap();
    let waiting = w.engine.get(&created.id.to_string()).unwrap();
    assert_eq!(waiting.state, State::WaitingForReply);
    assert!(waiting.next_heartbeat_at.is_some());
}

#[tokio::test(start_paused = true)]
async fn the_tools_validate_their_arguments_and_say_what_went_wrong() {
    let (w, results) = world_sharing::<Mutex<Vec<_>>>(|_turn, tools, results| {
        Box::pin(async move {
            let calls = [
                ToolCall::MarkTodoItem {
                    todo_id: "7".into(),
                    status: TodoStatus::Completed,
                    answer: None,
                    value: None,
                    quote: None,
                    media: None,
                },
                ToolCall::MarkTodoItem {
                    todo_id: "2".into(),
                    status: TodoStatus::InProgress,
                    answer: Some("x".repeat(2000)),
                    value: None,
                    quote: None,
                    media: None,
                },
                send("   "),
                send(&"y".repeat(5000)),
                ToolCall::PlaceCall,
                ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(0) },
                ToolCall::MarkTodoItem {
                    todo_id: "2".into(),
                    status: TodoStatus::Skipped,
                    answer: Some("not needed".into()),
                    value: None,
                    quote: None,
                    media: None,
                },
                send("Hello!"),
            ];
            for call in calls {
                let result = tools.call(call).await;
                results.lock().unwrap().push(result);
            }
            Ok(())
        })
    });
    let created = w.engine.create(request(&["a", "b"], None, None)).await.unwrap();
    let waiting = until_state(&w.engine, created.id, State::WaitingForReply).await;
    let results = results.lock().unwrap();
    let text = |i: usize| match &results[i] {
        Ok(s) => s.clone(),
        Err(e) => format!("error: {e}"),
    };
    assert!(text(0).contains("there is no todo '7'; the todo ids are 1, 2"), "{}", text(0));
    assert!(text(1).contains("answer is too long"), "{}", text(1));
    assert!(text(2).contains("message is empty"), "{}", text(2));
    assert!(text(3).contains("message is too long"), "{}", text(3));
    assert!(text(4).contains("Calls are not available yet"), "{}", text(4));
    assert!(text(5).contains("next follow-up is due 1m"), "clamped to the configured minimum: {}", text(5));
    assert_eq!(text(6), "todo 2 is now skipped");
    // Only the valid message went out; relay waits with the agent's
    // (clamped) delay for the heartbeat.
    let sent: Vec<String> = w.channel.outbox(None).into_iter().map(|e| e.text).collect();
    assert_eq!(sent, ["Hello!"]);
    assert_eq!(triggers(&waiting).last(), Some(&"message_sent"));
    assert_eq!(waiting.todos[1].status, TodoStatus::Skipped);
    assert_eq!(waiting.todos[1].answer.as_deref(), Some("not needed"));
    let due = waiting.next_heartbeat_at.unwrap() - waiting.updated_at;
    assert!(due <= chrono::Duration::seconds(60) && due > chrono::Duration::seconds(59), "{due}");
    // place_call leaves a note for the operator in the transcript.
    let transcript = w.engine.transcript(&created.id.to_string()).unwrap();
    let roles: Vec<Role> = transcript.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::Agent]);
}

#[tokio::test(start_paused = true)]
async fn a_model_failure_hands_the_conversation_to_a_human_with_the_reason() {
    let w =
        world(|_turn, _tools| Box::pin(async { Err(AgentError::Model("provider answered 401: invalid key".into())) }));
    let created = w.engine.create(request(&["t"], None, None)).await.unwrap();
    let needs = until_state(&w.engine, created.id, State::NeedsHumanIntervention).await;
    assert!(needs.intervention_reason.unwrap().contains("provider answered 401: invalid key"));
}

#[tokio::test(start_paused = true)]
async fn a_restarted_engine_reruns_an_interrupted_turn_with_the_whole_transcript() {
    let (w, _gate) = world_sharing::<Notify>(|turn, tools, gate| {
        Box::pin(async move {
            match turn.kind {
                TurnKind::FirstMessage => tools.call(send("Hello!")).await.map(drop).unwrap(),
                _ => gate.notified().await, // the reply turn hangs until the daemon stops
            }
            Ok(())
        })
    });
    let created = w.engine.create(request(&["t"], None, None)).await.unwrap();
    until_state(&w.engine, created.id, State::WaitingForReply).await;
    say(&w, "Hi, who is this?").await;
    until_state(&w.engine, created.id, State::Active).await;
    w.engine.shutdown().await;

    let _engine = restart(&w);
    // A re-run turn changes nothing on disk until it acts, so watch the agent.
    while w.agent.kinds().len() < 3 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let turns = w.agent.turns.lock().unwrap();
    let resumed = turns.last().unwrap();
    assert_eq!(resumed.kind, TurnKind::Reply, "a restart is invisible to the agent");
    let contents: Vec<&str> = resumed.transcript.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["Hello!", "Hi, who is this?"]);
}

#[tokio::test(start_paused = true)]
async fn a_reply_and_a_heartbeat_never_race() {
    // The contact answers exactly when the heartbeat is due: whichever the
    // actor sees first wins, and the conversation stays consistent.
    let w = world(|turn, tools| {
        Box::pin(async move {
            let text = match turn.kind {
                TurnKind::FirstMessage => "Hello!",
                TurnKind::FollowUp { .. } => "Just checking in",
                _ => "Thanks!",
            };
            tools.call(send(text)).await.unwrap();
            Ok(())
        })
    });
    let interval = Duration::from_secs(60);
    let created = w.engine.create(request(&["t"], Some(interval), Some(5))).await.unwrap();
    let waiting = until_state(&w.engine, created.id, State::WaitingForReply).await;
    tokio::time::sleep(interval).await;
    say(&w, "Here!").await;
    let settled = until(&w.engine, created.id, |i| {
        i.state == State::WaitingForReply && i.unanswered_contact_messages == 0 && i.updated_at > waiting.updated_at
    })
    .await;
    assert!(settled.follow_up_count <= 1);
    let transcript = w.engine.transcript(&created.id.to_string()).unwrap();
    assert!(transcript.iter().any(|m| m.content == "Here!"));
}

#[tokio::test(start_paused = true)]
async fn messages_in_quick_succession_get_one_answer() {
    let w = saying("ok");
    let created = w.engine.create(request(&["t"], None, None)).await.unwrap();
    until_state(&w.engine, created.id, State::WaitingForReply).await;
    say(&w, "Hi").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    say(&w, "I mean: Friday").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    say(&w, "at 3pm").await;
    // Still within the window of the last message: no turn yet.
    assert_eq!(w.engine.get(&created.id.to_string()).unwrap().state, State::WaitingForAgent);
    until(&w.engine, created.id, |i| i.state == State::WaitingForReply && w.agent.kinds().len() == 2).await;
    let turns = w.agent.turns.lock().unwrap();
    let from_contact: Vec<&str> =
        turns[1].transcript.iter().filter(|m| m.role == Role::Contact).map(|m| m.content.as_str()).collect();
    assert_eq!(from_contact, ["Hi", "I mean: Friday", "at 3pm"], "one turn answers all three");
}
