//! The actor's side of each conversation's limits (the rules are in
//! [`crate::engine::budget`]): ending a conversation whose budget is spent,
//! and the deadline, which ends a conversation in any state.

use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use super::Actor;
use crate::api::BudgetLimit;
use crate::engine::{EngineError, budget, conversation};
use crate::store::ConversationRecord;

impl Actor {
    /// Ends conversation `id` because `limit` ran out
    /// ([`conversation::budget_ran_out`]).
    pub(in crate::engine) fn end_for_budget(
        &mut self,
        id: Uuid,
        limit: BudgetLimit,
        reason: String,
    ) -> Result<ConversationRecord, EngineError> {
        tracing::info!(instance = %id, limit = limit.as_str(), "the conversation's budget ran out");
        let index = self.index(id)?;
        let step = conversation::budget_ran_out(&self.convs[index], limit, reason, crate::clock::now())
            .map_err(|source| super::transitions::refused(id, source))?;
        self.run_step(id, step)
    }

    /// Whether conversation `id` has a turn or a send under way: its
    /// deadline waits for them, so nothing is cut off in the middle.
    fn busy(&self, id: Uuid) -> bool {
        self.turn.as_ref().is_some_and(|t| t.instance == id) || self.sending.contains(&id)
    }

    /// Ends every conversation of this contact whose deadline has passed
    /// (but for those busy: they end once they are not).
    pub(super) fn expire_overdue(&mut self) {
        let now = crate::clock::now();
        let overdue: Vec<(Uuid, String)> = self
            .convs
            .iter()
            .filter(|c| !self.busy(c.id))
            .filter_map(|c| budget::expired(c, now).map(|reason| (c.id, reason)))
            .collect();
        for (id, reason) in overdue {
            if let Err(error) = self.end_for_budget(id, BudgetLimit::ExpiresAt, reason) {
                tracing::error!(instance = %id, %error, "cannot end a conversation past its deadline");
            }
        }
    }

    /// When the next deadline of a conversation that is not busy passes, on
    /// tokio's clock (the actor's loop wakes then, and `drive` ends it).
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        let at = self.convs.iter().filter(|c| !self.busy(c.id)).filter_map(|c| c.budget.expires_at).min()?;
        let wait = (at - crate::clock::now()).to_std().unwrap_or(Duration::ZERO);
        Some(Instant::now() + wait)
    }
}
