//! What the agent's tools do to its conversation: one file per tool, each
//! with its rules as plain functions and the actor's part beside them.
//! The arguments, schema and parsing of each are in `agent::tools`. The two
//! tools that write to the contact share relay's send ([`super::sends`]).
//! A tool acts only for the turn running now.

mod contact_opted_out;
mod end_conversation;
pub(super) mod mark_todo_item;
mod place_call;
mod request_human_intervention;
mod schedule_next_heartbeat;

use uuid::Uuid;

use super::Actor;
use crate::agent::{ToolCall, ToolError};
use crate::api::Evidence;
use crate::engine::EngineError;

impl Actor {
    /// Tools may only act for the turn that is running now.
    pub(in crate::engine::actor) fn check_turn(&self, id: Uuid, turn: u64) -> Result<(), ToolError> {
        let mine = self.is_running(id, turn);
        if !mine || self.index(id).is_err() {
            return Err(ToolError(
                "this turn is over (the conversation was paused, cancelled or ended): do nothing more".into(),
            ));
        }
        Ok(())
    }

    /// Every tool but the sends and `mark_todo_item`, which have messages
    /// of their own (see [`super::Msg`]).
    pub(in crate::engine::actor) fn tool(&mut self, id: Uuid, turn: u64, call: ToolCall) -> Result<String, ToolError> {
        self.check_turn(id, turn)?;
        tracing::debug!(instance = %id, tool = %call.tool(), "tool call");
        match call {
            ToolCall::SendMessage { .. } | ToolCall::SendAttachment { .. } | ToolCall::MarkTodoItem { .. } => {
                unreachable!("handled by start_agent_send and mark_todo")
            }
            ToolCall::EndConversation { reason, outcome, summary } => {
                self.end_conversation(id, reason, outcome, summary)
            }
            ToolCall::ScheduleNextHeartbeat { delay } => self.schedule_next_heartbeat(id, delay),
            ToolCall::PlaceCall => self.place_call(id),
            ToolCall::RequestHumanIntervention { reason, question } => {
                self.request_human_intervention(id, reason, question)
            }
            ToolCall::ContactOptedOut { reason } => self.contact_opted_out(id, reason),
        }
    }
}

/// An engine refusal, as the model reads it.
fn refused(error: EngineError) -> ToolError {
    ToolError(error.to_string())
}

/// The contact's words an answer could rest on, for a refusal: shown
/// theirs, a model records them rather than quoting its own sentence again.
/// Each message is cut to a few hundred characters; the words are the
/// contact's, as in the prompt.
pub(super) fn their_words(answered: &[Evidence]) -> Option<String> {
    const SHOWN: usize = 300;
    let said: Vec<String> = answered
        .iter()
        .map(|m| m.untrusted_contact_text.trim())
        .filter(|text| !text.is_empty())
        .map(|text| format!("{:?}", text.chars().take(SHOWN).collect::<String>()))
        .collect();
    (!said.is_empty()).then(|| said.join(", then "))
}
