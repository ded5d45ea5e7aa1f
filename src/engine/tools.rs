//! The agent's tools as requests to the conversation's actor: the engine's
//! side of the seam the agent declares ([`crate::agent::ToolSink`]).

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::actor::Msg;
use crate::agent::{ToolCall, ToolError, ToolSink};
use crate::api::TokenUsage;
use crate::util::BoxFuture;

/// One turn's tools: every call goes to the actor that owns the
/// conversation, tagged with the turn, so a call from a turn that is over
/// is refused there.
pub(crate) struct ActorTools {
    pub(crate) actor: mpsc::UnboundedSender<Msg>,
    pub(crate) instance: Uuid,
    /// The turn's number: a call from an earlier turn is refused.
    pub(crate) turn: u64,
}

impl ToolSink for ActorTools {
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let gone = || ToolError("the conversation is no longer running".into());
            self.actor.send(Msg::Tool { id: self.instance, turn: self.turn, call, reply }).map_err(|_| gone())?;
            answer.await.map_err(|_| gone())?
        })
    }

    fn record_usage(&self, usage: TokenUsage) {
        let _ = self.actor.send(Msg::Usage { id: self.instance, usage });
    }
}
