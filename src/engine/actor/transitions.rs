//! Every change to a conversation goes through here: a transition (worked
//! out by [`conversation::transition`]), or a plain update, each written to
//! disk and published to the engine's view before it returns.

use std::sync::Arc;

use uuid::Uuid;

use super::Actor;
use crate::api::{EventData, Role, State, TokenUsage, TranscriptMessage};
use crate::engine::EngineError;
use crate::engine::conversation::{self, Durability, Effect, Step};
use crate::fsm::{self, Event, InvalidTransition, Target};
use crate::store::ConversationRecord;

impl Actor {
    /// Applies `event` to conversation `id` if the table allows it: the new
    /// state, `previous_state`, heartbeat fields, `change`, and a history
    /// entry, all written to disk before this returns.
    pub(in crate::engine) fn transition(
        &mut self,
        id: Uuid,
        event: Event,
        reason: Option<String>,
        change: impl FnOnce(&mut ConversationRecord),
    ) -> Result<ConversationRecord, EngineError> {
        let index = self.index(id)?;
        let now = crate::clock::now();
        let step = conversation::transition(&self.convs[index], event, reason, now, change)
            .map_err(|source| refused(id, source))?;
        self.run_step(id, step)
    }

    /// Writes `step`'s record (to disk, then the engine's view), then runs
    /// its effects in their order.
    pub(in crate::engine) fn run_step(&mut self, id: Uuid, step: Step) -> Result<ConversationRecord, EngineError> {
        let mut next = step.next;
        self.fold_usage(&mut next);
        let committed = self.commit(self.index(id)?, next, step.durability)?;
        for effect in step.effects {
            match effect {
                Effect::Publish(data) => {
                    if let EventData::Transition { from, to, trigger, .. } = &data {
                        tracing::info!(instance = %id, from = %from, to = %to, trigger = %trigger, "transition");
                    }
                    self.shared.emit(id, data);
                }
                Effect::Note(role, text) => {
                    if let Err(error) = self.record(id, role, text) {
                        tracing::warn!(instance = %id, %error, "cannot write relay's note in the transcript");
                    }
                }
                Effect::StopTurn => self.abort_turn_of(id),
                Effect::LetTurnFinish => self.detach_turn(),
            }
        }
        Ok(committed)
    }

    /// Changes conversation `id` without a transition (todos, counters).
    pub(in crate::engine) fn update(
        &mut self,
        id: Uuid,
        change: impl FnOnce(&mut ConversationRecord),
    ) -> Result<(), EngineError> {
        let index = self.index(id)?;
        self.run_step(id, Step::change(&self.convs[index], crate::clock::now(), change)).map(drop)
    }

    /// A model call's token usage for conversation `id`. It is written with
    /// the conversation's next change, not on its own: a turn makes two or
    /// more calls and always ends with a change (its end, a pause, a
    /// failure), so an instance file replaced per call (two fsyncs, in the
    /// middle of the turn) bought nothing but the usage of a turn cut by a
    /// crash, which runs again anyway. A stop writes what is left.
    pub(super) fn record_usage(&mut self, id: Uuid, usage: TokenUsage) {
        if self.index(id).is_err() {
            tracing::warn!(instance = %id, "token usage for a conversation that is not live; not recorded");
            return;
        }
        match self.unsaved_usage.iter_mut().find(|(of, _)| *of == id) {
            Some((_, unsaved)) => *unsaved += usage,
            None => self.unsaved_usage.push((id, usage)),
        }
    }

    /// The usage of the conversation at `index`, with what is not yet on disk.
    pub(super) fn usage_of(&self, index: usize) -> TokenUsage {
        let conv = &self.convs[index];
        let mut usage = conv.usage;
        if let Some((_, unsaved)) = self.unsaved_usage.iter().find(|(of, _)| *of == conv.id) {
            usage += *unsaved;
        }
        usage
    }

    /// Adds the usage not yet on disk to `next`, which is about to be written.
    fn fold_usage(&mut self, next: &mut ConversationRecord) {
        if let Some(at) = self.unsaved_usage.iter().position(|(of, _)| *of == next.id) {
            next.usage += self.unsaved_usage.swap_remove(at).1;
            super::release_if_empty(&mut self.unsaved_usage);
        }
    }

    /// Writes the usage not yet on disk (at a stop).
    pub(super) fn save_usage(&mut self) {
        for (id, usage) in std::mem::take(&mut self.unsaved_usage) {
            if let Err(error) = self.update(id, |i| i.usage += usage) {
                tracing::warn!(instance = %id, %error, "cannot record token usage");
            }
        }
    }

    fn commit(
        &mut self,
        index: usize,
        next: ConversationRecord,
        durability: Durability,
    ) -> Result<ConversationRecord, EngineError> {
        self.shared.store.write_instance(&next, durability)?;
        let next = Arc::new(next);
        self.shared.publish(&next);
        if next.state.is_terminal() {
            self.convs.remove(index);
        } else {
            self.convs[index] = next.clone();
        }
        Ok(Arc::unwrap_or_clone(next))
    }

    pub(in crate::engine) fn index(&self, id: Uuid) -> Result<usize, EngineError> {
        self.convs.iter().position(|c| c.id == id).ok_or_else(|| EngineError::NotFound(id.to_string()))
    }

    /// The latest persisted form of `instance` (it may have moved on).
    pub(super) fn current(&self, instance: ConversationRecord) -> ConversationRecord {
        self.shared.snapshot(instance.id).map(|i| (*i).clone()).unwrap_or(instance)
    }

    pub(super) fn record(&self, id: Uuid, role: Role, content: String) -> Result<TranscriptMessage, EngineError> {
        let message = TranscriptMessage::new(id, role, content);
        self.record_message(&message)?;
        Ok(message)
    }

    pub(super) fn record_message(&self, message: &TranscriptMessage) -> Result<(), EngineError> {
        self.shared.store.append_message(message)?;
        Ok(())
    }
}

/// What the table says `event` does to conversation `id` in `state`; a
/// refusal is logged.
pub(super) fn allowed(id: Uuid, state: State, event: Event, previous: Option<State>) -> Result<Target, EngineError> {
    fsm::next(state, event, previous).map_err(|source| refused(id, source))
}

/// A change the table refuses, logged.
pub(super) fn refused(id: Uuid, source: InvalidTransition) -> EngineError {
    tracing::warn!(instance = %id, state = %source.state, event = %source.event, "invalid transition refused");
    EngineError::Transition { id, source }
}
