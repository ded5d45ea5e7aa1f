//! The six tools of a conversation agent, as requests to the conversation's
//! actor. A [`ConversationTools`] handle is bound to one conversation and one
//! turn: nothing it can express names a recipient, and once the turn is over
//! (ended, paused, cancelled) every call is refused.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::actor::Msg;
use crate::api::{Outcome, TodoStatus, TokenUsage};

/// One tool call, already parsed and typed.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    SendMessage {
        text: String,
    },
    MarkTodoItem {
        todo_id: String,
        status: TodoStatus,
        /// What was learned (the todo's `answer`); None keeps the old one.
        answer: Option<String>,
    },
    EndConversation {
        reason: String,
        /// None: relay judges it from the todos.
        outcome: Option<Outcome>,
        /// None: the reason is the summary.
        summary: Option<String>,
    },
    ScheduleNextHeartbeat {
        delay: Duration,
    },
    /// A stub: calls are not available yet, and the model is told so.
    PlaceCall,
    RequestHumanIntervention {
        reason: String,
        /// What exactly the agent asks the operator, if anything.
        question: Option<String>,
    },
}

impl ToolCall {
    pub fn name(&self) -> &'static str {
        match self {
            ToolCall::SendMessage { .. } => "send_message",
            ToolCall::MarkTodoItem { .. } => "mark_todo_item",
            ToolCall::EndConversation { .. } => "end_conversation",
            ToolCall::ScheduleNextHeartbeat { .. } => "schedule_next_heartbeat",
            ToolCall::PlaceCall => "place_call",
            ToolCall::RequestHumanIntervention { .. } => "request_human_intervention",
        }
    }

    /// Whether the turn should stop after this call succeeds.
    pub fn ends_turn(&self) -> bool {
        matches!(self, ToolCall::EndConversation { .. } | ToolCall::RequestHumanIntervention { .. })
    }
}

/// A refused tool call; the text goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// The conversation-scoped tool handle given to the agent for one turn.
#[derive(Debug, Clone)]
pub struct ConversationTools {
    pub(crate) actor: mpsc::UnboundedSender<Msg>,
    pub(crate) instance: Uuid,
    pub(crate) turn: u64,
}

impl ConversationTools {
    /// Runs one tool call; the `Ok` text is what the model sees.
    pub async fn call(&self, call: ToolCall) -> Result<String, ToolError> {
        let (reply, answer) = oneshot::channel();
        let gone = || ToolError("the conversation is no longer running".into());
        self.actor.send(Msg::Tool { id: self.instance, turn: self.turn, call, reply }).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// Adds one model call's tokens to the conversation's totals. Call it
    /// before running that call's tools: a turn that ends the conversation
    /// is not heard from afterwards.
    pub fn record_usage(&self, usage: TokenUsage) {
        let _ = self.actor.send(Msg::Usage { id: self.instance, usage });
    }
}
