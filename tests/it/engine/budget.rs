//! Budgets and deadlines, enforced by the engine whatever the agent does
//! (on tokio's paused clock): a turn budget and a token budget end a
//! conversation where the next turn would start, never past it; a deadline
//! ends one in any state, through a restart.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
use relay::api::{
    BudgetLimit, BudgetRequest, ConversationInstance, CreateInstanceRequest, EndedBy, HeartbeatOverrides, NewTodo,
    Outcome, State, TodoStatus, TokenUsage,
};
use relay::engine::Engine;
use relay::util::BoxFuture;

use crate::support::engine::{SandboxWorld, any_hour, until};
use crate::support::test_agent::TestAgent;

const CONTACT: &str = "+56912345678";
/// What each of the agent's turns costs, in tokens (input + output).
const TOKENS_PER_TURN: u64 = 150;

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// An agent whose every turn costs [`TOKENS_PER_TURN`]: it writes "Hello"
/// first, "Still there?" to follow up; to a reply it marks todo 1 done and
/// writes "Noted", but asks the operator when told "ask someone"; after an
/// answer it writes "Thanks".
fn agent() -> Arc<TestAgent> {
    Arc::new(TestAgent::new(|turn: Turn, tools: ConversationTools| -> BoxFuture<'static, _> {
        Box::pin(async move {
            tools.record_usage(TokenUsage {
                input_tokens: TOKENS_PER_TURN - 10,
                output_tokens: 10,
                model_calls: 1,
                ..Default::default()
            });
            let said = turn.instance.last_contact_message.as_ref().map(|m| m.untrusted_contact_text.clone());
            let call = match turn.kind {
                TurnKind::FirstMessage => ToolCall::SendMessage { text: "Hello".into() },
                TurnKind::FollowUp { .. } => ToolCall::SendMessage { text: "Still there?".into() },
                TurnKind::Answered => ToolCall::SendMessage { text: "Thanks".into() },
                _ if said.as_deref() == Some("ask someone") => {
                    ToolCall::RequestHumanIntervention { reason: "they want a person".into(), question: None }
                }
                _ => {
                    let done = ToolCall::MarkTodoItem {
                        todo_id: "1".into(),
                        status: TodoStatus::Completed,
                        answer: Some("Friday".into()),
                        value: None,
                        quote: None,
                        media: None,
                    };
                    tools.call(done).await.unwrap();
                    ToolCall::SendMessage { text: "Noted".into() }
                }
            };
            tools.call(call).await.unwrap();
            Ok(())
        })
    }))
}

/// The sandbox world with [`agent`], and nothing that depends on the hour.
fn world() -> SandboxWorld {
    SandboxWorld::start(agent(), any_hour())
}

/// What the agent wrote in conversation `id`.
fn sent(w: &SandboxWorld, id: uuid::Uuid) -> Vec<String> {
    w.agent_messages(id).into_iter().map(|m| m.content).collect()
}

/// A conversation with `contact` under `budget`.
async fn create(w: &SandboxWorld, contact: &str, budget: BudgetRequest) -> uuid::Uuid {
    let request = CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: contact.into(),
        todos: vec![NewTodo::new("delivery day"), NewTodo::new("time window")],
        heartbeat_config: Some(HeartbeatOverrides { interval_ms: Some(3_600_000), max_followups: Some(5) }),
        budget: Some(budget),
        ..Default::default()
    };
    w.engine.create(request).await.unwrap().id
}

async fn until_state(engine: &Engine, id: uuid::Uuid, state: State) -> relay::api::ConversationInstance {
    until(engine, id, |i| i.state == state).await
}

fn triggers(instance: &ConversationInstance) -> Vec<&str> {
    instance.history.iter().map(|t| t.trigger.as_str()).collect()
}

/// `--max-turns 2`: the first message and one follow-up; when the heartbeat
/// would start a third turn, the conversation ends instead, naming the limit.
#[tokio::test(start_paused = true)]
async fn a_turn_budget_ends_the_conversation_instead_of_the_next_follow_up() {
    let w = world();
    let id = create(&w, CONTACT, BudgetRequest { max_turns: Some(2), ..Default::default() }).await;
    let ended = until_state(&w.engine, id, State::Abandoned).await;
    assert_eq!(sent(&w, id), ["Hello", "Still there?"]);
    assert_eq!((ended.ended_by, ended.outcome), (Some(EndedBy::Budget), Some(Outcome::Failed)));
    assert_eq!(ended.summary.as_deref(), Some("The conversation reached its budget of 2 turns."));
    assert_eq!((ended.budget.reached, ended.turns_taken), (Some(BudgetLimit::MaxTurns), 2));
    let last = ended.history.last().unwrap();
    assert_eq!((last.from_state, last.trigger.as_str()), (Some(State::WaitingForReply), "budget_exhausted"));
    assert_eq!(last.reason.as_deref(), Some("the conversation reached its budget of 2 turns"));
    assert_eq!(w.agent.turns.lock().unwrap().len(), 2, "no third turn started");
}

/// The contact's answer to the last message the budget allowed is recorded
/// (the Main Agent sees it), not answered; the todos done make the outcome.
#[tokio::test(start_paused = true)]
async fn a_reply_past_the_turn_budget_is_recorded_but_not_answered() {
    let w = world();
    let id = create(&w, CONTACT, BudgetRequest { max_turns: Some(2), ..Default::default() }).await;
    until_state(&w.engine, id, State::WaitingForReply).await;
    w.say(CONTACT, "Friday").await;
    until(&w.engine, id, |i| i.state == State::WaitingForReply && i.turns_taken == 2).await;
    w.say(CONTACT, "in the morning").await;
    let ended = until_state(&w.engine, id, State::Abandoned).await;
    assert_eq!(sent(&w, id), ["Hello", "Noted"]);
    assert_eq!((ended.ended_by, ended.outcome), (Some(EndedBy::Budget), Some(Outcome::PartiallyAchieved)));
    assert_eq!(ended.last_contact_message.unwrap().untrusted_contact_text, "in the morning");
    assert_eq!(ended.history.last().unwrap().from_state, Some(State::WaitingForAgent));
}

/// `--max-tokens 200` at 150 tokens a turn: the second turn starts (100
/// were left), the third does not; the reason says how many were used.
#[tokio::test(start_paused = true)]
async fn a_token_budget_ends_the_conversation_before_the_next_turn() {
    let w = world();
    let id = create(&w, CONTACT, BudgetRequest { max_tokens: Some(200), ..Default::default() }).await;
    let ended = until_state(&w.engine, id, State::Abandoned).await;
    assert_eq!(sent(&w, id), ["Hello", "Still there?"]);
    assert_eq!(ended.ended_by, Some(EndedBy::Budget));
    assert_eq!(ended.budget.reached, Some(BudgetLimit::MaxTokens));
    assert_eq!(ended.summary.as_deref(), Some("The conversation reached its budget of 200 tokens (300 used)."));
    assert_eq!(ended.usage.total_tokens(), 2 * TOKENS_PER_TURN);
}

/// The operator's answer would start a turn past the budget: the
/// conversation ends instead of running it.
#[tokio::test(start_paused = true)]
async fn an_answer_past_the_turn_budget_ends_the_conversation_instead_of_a_turn() {
    let w = world();
    let id = create(&w, CONTACT, BudgetRequest { max_turns: Some(2), ..Default::default() }).await;
    until_state(&w.engine, id, State::WaitingForReply).await;
    w.say(CONTACT, "ask someone").await;
    until_state(&w.engine, id, State::NeedsHumanIntervention).await;
    // A deadline-free budget never ends a conversation that waits for you.
    tokio::time::sleep(Duration::from_secs(7 * 86_400)).await;
    assert_eq!(w.engine.get(&id.to_string()).unwrap().state, State::NeedsHumanIntervention);
    w.engine.answer(&id.to_string(), "Tell them Friday".into()).await.unwrap();
    let ended = until_state(&w.engine, id, State::Abandoned).await;
    assert_eq!(ended.ended_by, Some(EndedBy::Budget));
    assert_eq!(triggers(&ended).last(), Some(&"budget_exhausted"));
    assert_eq!(w.agent.turns.lock().unwrap().len(), 2, "the answer's turn never ran");
    assert_eq!(sent(&w, id), ["Hello"]);
}

/// `--expires-in 3d` on a conversation waiting for a reply (follow-ups a
/// week apart): a restart keeps the deadline, and it ends at the instant.
#[tokio::test(start_paused = true)]
async fn a_deadline_ends_a_waiting_conversation_at_its_instant_even_across_a_restart() {
    relay::clock::pretend(utc("2026-01-15T12:00:00Z"));
    let mut w = world();
    let request = CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: CONTACT.into(),
        todos: vec![NewTodo::new("delivery day")],
        heartbeat_config: Some(HeartbeatOverrides { interval_ms: Some(7 * 86_400_000), max_followups: Some(5) }),
        budget: Some(BudgetRequest { expires_in_ms: Some(3 * 86_400_000), ..Default::default() }),
        ..Default::default()
    };
    let id = w.engine.create(request).await.unwrap().id;
    let waiting = until_state(&w.engine, id, State::WaitingForReply).await;
    assert_eq!(waiting.budget.expires_at, Some(utc("2026-01-18T12:00:00Z")));
    tokio::time::sleep(Duration::from_secs(86_400)).await;
    w.restart().await;
    assert_eq!(w.engine.get(&id.to_string()).unwrap().state, State::WaitingForReply);
    // A minute before the deadline, nothing has moved (`until` would call
    // two silent days a stuck conversation).
    tokio::time::sleep(Duration::from_secs(2 * 86_400 - 60)).await;
    assert_eq!(w.engine.get(&id.to_string()).unwrap().state, State::WaitingForReply);
    let ended = until_state(&w.engine, id, State::Abandoned).await;
    let last = ended.history.last().unwrap();
    assert_eq!((last.trigger.as_str(), last.timestamp), ("expired", utc("2026-01-18T12:00:00Z")));
    assert_eq!((ended.ended_by, ended.budget.reached), (Some(EndedBy::Expired), Some(BudgetLimit::ExpiresAt)));
    assert_eq!(ended.outcome, Some(Outcome::Failed));
    assert_eq!(ended.summary.as_deref(), Some("The conversation reached its deadline (2026-01-18T12:00:00Z)."));
    assert_eq!(sent(&w, id), ["Hello"]);
}

/// A deadline ends a conversation wherever it is: QUEUED behind another,
/// PAUSED, NEEDS_HUMAN_INTERVENTION; the conversations without one go on.
#[tokio::test(start_paused = true)]
async fn a_deadline_ends_a_queued_a_paused_and_a_waiting_for_you_conversation() {
    const PAUSED: &str = "+447911123456";
    const NEEDS_YOU: &str = "+34612345678";
    let hours = |h: u64| BudgetRequest { expires_in_ms: Some(h * 3_600_000), ..Default::default() };
    // relay's wall clock moves with tokio's paused one: deadlines are wall-clock instants.
    relay::clock::pretend(utc("2026-01-15T12:00:00Z"));
    let w = world();
    let live = create(&w, CONTACT, BudgetRequest::default()).await;
    let queued = create(&w, CONTACT, hours(1)).await;
    assert_eq!(w.engine.get(&queued.to_string()).unwrap().state, State::Queued);
    let paused = create(&w, PAUSED, hours(2)).await;
    until_state(&w.engine, paused, State::WaitingForReply).await;
    w.engine.pause(&paused.to_string()).await.unwrap();
    let needs_you = create(&w, NEEDS_YOU, hours(3)).await;
    until_state(&w.engine, needs_you, State::WaitingForReply).await;
    w.say(NEEDS_YOU, "ask someone").await;
    until_state(&w.engine, needs_you, State::NeedsHumanIntervention).await;

    for (id, from) in [(queued, State::Queued), (paused, State::Paused), (needs_you, State::NeedsHumanIntervention)] {
        let ended = until_state(&w.engine, id, State::Abandoned).await;
        let last = ended.history.last().unwrap();
        assert_eq!((last.from_state, last.trigger.as_str()), (Some(from), "expired"));
        assert_eq!(last.timestamp, ended.budget.expires_at.unwrap(), "{from}");
        assert_eq!(ended.ended_by, Some(EndedBy::Expired));
    }
    assert_eq!(sent(&w, queued), Vec::<String>::new(), "the queued one never wrote");
    let live = w.engine.get(&live.to_string()).unwrap();
    assert!(!live.state.is_terminal() && live.budget.reached.is_none(), "{:?}", live.state);
}
