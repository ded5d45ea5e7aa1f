//! What the core returns: the record as it must become, and what must
//! happen once that is on disk, in order.

use chrono::{DateTime, Utc};

use crate::api::{EventData, Role};
use crate::store::ConversationRecord;
pub use crate::store::record_file::Durability;

/// One change to a conversation: `next` is written first (durable, unless
/// `durability` says it may wait for the next write), then the `effects`
/// run in their order.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub next: ConversationRecord,
    pub effects: Vec<Effect>,
    pub durability: Durability,
}

/// Something that happens once a change is on disk.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Publish an event to the conversation's event log and watchers.
    Publish(EventData),
    /// Add a line to the transcript (relay's own notes).
    Note(Role, String),
    /// Stop the conversation's running turn now; it re-runs from disk if
    /// the conversation goes on.
    StopTurn,
    /// Let the running turn finish on its own; anything it still tries is
    /// refused.
    LetTurnFinish,
}

impl Step {
    /// `current` changed by `change` at `now`, with no change of state and
    /// nothing to run after.
    pub fn change(
        current: &ConversationRecord,
        now: DateTime<Utc>,
        change: impl FnOnce(&mut ConversationRecord),
    ) -> Step {
        let mut next = current.clone();
        change(&mut next);
        next.updated_at = now;
        Step::new(next, Vec::new())
    }

    /// `next`, durable before `effects` run.
    pub fn new(next: ConversationRecord, effects: Vec<Effect>) -> Step {
        Step { next, effects, durability: Durability::Now }
    }

    /// The effects that follow `self`'s, then `more`.
    pub fn then(mut self, more: impl IntoIterator<Item = Effect>) -> Step {
        self.effects.extend(more);
        self
    }
}
