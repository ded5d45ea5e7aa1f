//! The agent's tools as requests to the conversation's actor: the engine's
//! side of the seam the agent declares ([`crate::agent::ToolSink`]).

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::{Marked, Msg};
use crate::agent::{Agent, ToolCall, ToolError, ToolSink, Verdict};
use crate::api::TokenUsage;
use crate::util::BoxFuture;

/// One turn's tools: every call goes to the actor that owns the
/// conversation, tagged with the turn, so a call from a turn that is over
/// is refused there.
pub(crate) struct ActorTools {
    pub(crate) actor: mpsc::UnboundedSender<Box<Msg>>,
    pub(crate) instance: Uuid,
    /// The turn's number: a call from an earlier turn is refused.
    pub(crate) turn: u64,
    /// Confirms a value relay cannot read by rule (`agent::verify`).
    pub(crate) agent: Arc<dyn Agent>,
}

impl ActorTools {
    fn gone() -> ToolError {
        ToolError("the conversation is no longer running".into())
    }

    /// `mark_todo_item`: a value relay cannot read from the contact's words
    /// by rule goes to a model for a second look (outside the actor, which
    /// goes on meanwhile), then the call is made again with its verdict. The
    /// actor checks everything again then: the turn may be over.
    async fn mark(&self, call: ToolCall) -> Result<String, ToolError> {
        let ask = |verified: bool| {
            let (reply, answer) = oneshot::channel();
            let msg = Msg::Mark { id: self.instance, turn: self.turn, call: call.clone(), verified, reply };
            self.actor.send(Box::new(msg)).map(|_| answer).map_err(|_| Self::gone())
        };
        let verification = match ask(false)?.await.map_err(|_| Self::gone())?? {
            Marked::Done(said) => return Ok(said),
            Marked::Verify(verification) => verification,
        };
        let (verdict, usage) = self.agent.verify(*verification).await.map_err(|error| {
            ToolError(format!("not marked: relay could not check the value ({error}); try again later"))
        })?;
        self.record_usage(usage);
        let ToolCall::MarkTodoItem { todo_id, value, .. } = &call else { unreachable!("a mark") };
        let value = value.as_ref().map_or_else(String::new, |v| format!(" {v}"));
        match verdict {
            Verdict::Confirmed => {}
            Verdict::Refused { reading } => {
                return Err(ToolError(format!(
                    "todo {todo_id} is not marked: a second look at the contact's words does not find the \
                     value{value} in them (its reading: {reading:?}). Record what they said, or ask them"
                )));
            }
            Verdict::Unclear => {
                return Err(ToolError(format!(
                    "todo {todo_id} is not marked: relay's check of the value{value} failed (its answer could not be \
                     read), not the contact's words: mark it again"
                )));
            }
        }
        match ask(true)?.await.map_err(|_| Self::gone())?? {
            Marked::Done(said) => Ok(said),
            Marked::Verify(_) => Err(ToolError("not marked: the value could not be confirmed".into())),
        }
    }
}

impl ToolSink for ActorTools {
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            if matches!(call, ToolCall::MarkTodoItem { .. }) {
                return self.mark(call).await;
            }
            let (reply, answer) = oneshot::channel();
            self.actor
                .send(Box::new(Msg::Tool { id: self.instance, turn: self.turn, call, reply }))
                .map_err(|_| Self::gone())?;
            answer.await.map_err(|_| Self::gone())?
        })
    }

    fn record_usage(&self, usage: TokenUsage) {
        let _ = self.actor.send(Box::new(Msg::Usage { id: self.instance, usage }));
    }
}
