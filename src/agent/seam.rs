//! The seam between a turn and its conversation: the agent declares what it
//! acts through ([`ToolSink`], wrapped as [`ConversationTools`]), the engine
//! implements it (as `channel` declares `InboundSink`). A sink is bound to
//! one conversation and one turn: nothing a [`ToolCall`] can express names a
//! recipient, and once the turn is over every call is refused.

use std::sync::Arc;
use std::time::Duration;

use super::tools::ToolName;
use crate::api::{Outcome, TodoStatus, TokenUsage};
use crate::util::BoxFuture;

/// One tool call, already parsed and typed.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    SendMessage {
        text: String,
    },
    /// One of this conversation's attachments, by the id relay listed.
    SendAttachment {
        attachment_id: String,
        caption: Option<String>,
    },
    MarkTodoItem {
        todo_id: String,
        status: TodoStatus,
        /// What was learned (the todo's `answer`); None keeps the old one.
        answer: Option<String>,
        /// The answer as a typed value, for a todo with an `answer_schema`.
        value: Option<serde_json::Value>,
        /// The contact's own words the answer rests on, as the model copied them.
        quote: Option<String>,
        /// The contact's file the answer is (`m2`: a photo of the meter).
        media: Option<String>,
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
    /// The contact asked not to be contacted: relay stops writing to them.
    ContactOptedOut {
        reason: String,
    },
}

impl ToolCall {
    /// The tool this call is of.
    pub fn tool(&self) -> ToolName {
        match self {
            ToolCall::SendMessage { .. } => ToolName::SendMessage,
            ToolCall::SendAttachment { .. } => ToolName::SendAttachment,
            ToolCall::MarkTodoItem { .. } => ToolName::MarkTodoItem,
            ToolCall::EndConversation { .. } => ToolName::EndConversation,
            ToolCall::ScheduleNextHeartbeat { .. } => ToolName::ScheduleNextHeartbeat,
            ToolCall::PlaceCall => ToolName::PlaceCall,
            ToolCall::RequestHumanIntervention { .. } => ToolName::RequestHumanIntervention,
            ToolCall::ContactOptedOut { .. } => ToolName::ContactOptedOut,
        }
    }

    /// Whether the call writes to the contact ([`ToolName::sends`]).
    pub fn sends(&self) -> bool {
        self.tool().sends()
    }

    /// Whether the turn should stop after this call succeeds.
    pub fn ends_turn(&self) -> bool {
        self.tool().ends_turn()
    }
}

/// A refused tool call; the text goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// What one turn's tools are, seen from the agent: the engine implements it.
pub trait ToolSink: Send + Sync {
    /// Runs one tool call; the `Ok` text is what the model sees.
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<String, ToolError>>;

    /// Adds one model call's tokens to the conversation's totals.
    fn record_usage(&self, usage: TokenUsage);
}

/// The conversation-scoped tool handle given to the agent for one turn.
#[derive(Clone)]
pub struct ConversationTools(Arc<dyn ToolSink>);

impl ConversationTools {
    pub fn new(sink: impl ToolSink + 'static) -> ConversationTools {
        ConversationTools(Arc::new(sink))
    }

    /// Runs one tool call; the `Ok` text is what the model sees.
    pub async fn call(&self, call: ToolCall) -> Result<String, ToolError> {
        self.0.call(call).await
    }

    /// Adds one model call's tokens to the conversation's totals. Call it
    /// before running that call's tools: a turn that ends the conversation
    /// is not heard from afterwards.
    pub fn record_usage(&self, usage: TokenUsage) {
        self.0.record_usage(usage)
    }
}

impl std::fmt::Debug for ConversationTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConversationTools")
    }
}
