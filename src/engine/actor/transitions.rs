//! Every change to a conversation goes through here: a transition (worked
//! out by [`conversation::transition`]), or a plain update, each written to
//! disk and published to the engine's view before it returns.

use std::sync::Arc;

use uuid::Uuid;

use super::Actor;
use crate::api::{EventData, Role, State, TranscriptMessage};
use crate::engine::EngineError;
use crate::engine::conversation::{self, Effect, Step};
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
        let committed = self.commit(self.index(id)?, step.next)?;
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
        let mut next = (*self.convs[index]).clone();
        change(&mut next);
        next.updated_at = crate::clock::now();
        self.commit(index, next).map(drop)
    }

    fn commit(&mut self, index: usize, next: ConversationRecord) -> Result<ConversationRecord, EngineError> {
        self.shared.store.save_instance(&next)?;
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
