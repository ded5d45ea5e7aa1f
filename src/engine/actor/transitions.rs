//! Every change to a conversation goes through here: a transition checked
//! against the state machine table ([`crate::fsm`]), or a plain update, each
//! written to disk and published to the engine's view before it returns.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Actor;
use crate::api::{ConversationInstance, EventData, Role, State, StateTransition, TokenUsage, TranscriptMessage};
use crate::engine::{EngineError, budget, heartbeat, report};
use crate::fsm::{self, Event, Target};

impl Actor {
    /// Applies `event` to conversation `id` if the table allows it: the new
    /// state, `previous_state`, heartbeat fields, `change`, and a history
    /// entry, all written to disk before this returns.
    pub(in crate::engine) fn transition(
        &mut self,
        id: Uuid,
        event: Event,
        reason: Option<String>,
        change: impl FnOnce(&mut ConversationInstance),
    ) -> Result<ConversationInstance, EngineError> {
        let index = self.index(id)?;
        let mut next = (*self.convs[index]).clone();
        let now = crate::clock::now();
        let done = apply(&mut next, event, reason, change, now)?;
        self.fold_usage(&mut next);
        next.updated_at = now;
        let committed = self.commit(index, next)?;
        self.announce(id, done);
        Ok(committed)
    }

    /// Applies `first` then `then` (each an event and its change, as
    /// [`Actor::transition`] does) and writes the result once: for two
    /// transitions where nothing happens between them, so the first has no
    /// effect to be durable before. A contact's reply when there is no reply
    /// window (WAITING_FOR_REPLY, WAITING_FOR_AGENT, ACTIVE): one instance
    /// replace instead of two, and the turn starts one replace sooner. The
    /// history and the events are those of the two transitions, in order.
    /// If the table refuses either, nothing changes.
    pub(in crate::engine) fn transition_twice(
        &mut self,
        id: Uuid,
        first: (Event, impl FnOnce(&mut ConversationInstance)),
        then: (Event, impl FnOnce(&mut ConversationInstance)),
    ) -> Result<ConversationInstance, EngineError> {
        let index = self.index(id)?;
        let mut next = (*self.convs[index]).clone();
        let now = crate::clock::now();
        let one = apply(&mut next, first.0, None, first.1, now)?;
        let two = apply(&mut next, then.0, None, then.1, now)?;
        self.fold_usage(&mut next);
        next.updated_at = now;
        let committed = self.commit(index, next)?;
        self.announce(id, one);
        self.announce(id, two);
        Ok(committed)
    }

    /// The event of a transition written to disk (none if the state stayed).
    fn announce(&self, id: Uuid, done: Option<EventData>) {
        if let Some(event) = done {
            self.shared.emit(id, event);
        }
    }

    /// Changes conversation `id` without a transition (todos, counters).
    pub(in crate::engine) fn update(
        &mut self,
        id: Uuid,
        change: impl FnOnce(&mut ConversationInstance),
    ) -> Result<(), EngineError> {
        let index = self.index(id)?;
        let mut next = (*self.convs[index]).clone();
        self.fold_usage(&mut next);
        change(&mut next);
        next.updated_at = crate::clock::now();
        self.commit(index, next).map(drop)
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
    fn fold_usage(&mut self, next: &mut ConversationInstance) {
        if let Some(at) = self.unsaved_usage.iter().position(|(of, _)| *of == next.id) {
            next.usage += self.unsaved_usage.swap_remove(at).1;
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

    fn commit(&mut self, index: usize, next: ConversationInstance) -> Result<ConversationInstance, EngineError> {
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
    pub(super) fn current(&self, instance: ConversationInstance) -> ConversationInstance {
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

/// Applies `event` to `next` (in memory) if the table allows it: the new
/// state, `previous_state`, heartbeat fields, `change`, and a history entry.
/// Returns the event to emit once it is on disk (none if the state stays).
fn apply(
    next: &mut ConversationInstance,
    event: Event,
    reason: Option<String>,
    change: impl FnOnce(&mut ConversationInstance),
    now: DateTime<Utc>,
) -> Result<Option<EventData>, EngineError> {
    let (id, from, previous) = (next.id, next.state, next.previous_state);
    let target = allowed(id, from, event, previous)?;
    let to = fsm::resolve(from, target, previous);
    next.state = to;
    if to == State::Paused {
        next.previous_state = Some(from);
    } else if from == State::Paused {
        next.previous_state = None;
    }
    heartbeat::on_transition(next, from, to, now);
    budget::on_transition(next, from, to, event);
    if !matches!(to, State::NeedsHumanIntervention | State::Paused) {
        // Why a person was needed holds only while one is (and while
        // paused from there); the history keeps it.
        next.intervention_reason = None;
    }
    change(next);
    if from == State::NeedsHumanIntervention && to != State::Paused {
        // Not answered (the operator resumed or wrote to the contact).
        set_question_aside(next);
    }
    if to.is_terminal() {
        report::on_end(next, event, reason.as_deref());
        // Nothing is awaited of an ended conversation.
        next.awaiting_delivery = None;
    }
    if target == Target::Stay {
        return Ok(None);
    }
    next.history.push(entry(from, to, event, reason.clone(), now));
    tracing::info!(instance = %id, from = %from, to = %to, trigger = %event, "transition");
    Ok(Some(EventData::Transition { from, to, trigger: event.as_str().to_string(), reason }))
}

/// Leaving NEEDS_HUMAN_INTERVENTION other than by an answer (resume, send):
/// the question stays on record, unanswered.
fn set_question_aside(instance: &mut ConversationInstance) {
    if let Some(question) = instance.pending_question.take() {
        instance.earlier_questions.push(question);
    }
}

/// What the table says `event` does to conversation `id` in `state`; a
/// refusal is logged.
pub(super) fn allowed(id: Uuid, state: State, event: Event, previous: Option<State>) -> Result<Target, EngineError> {
    fsm::next(state, event, previous).map_err(|source| {
        tracing::warn!(instance = %id, state = %state, event = %event, "invalid transition refused");
        EngineError::Transition { id, source }
    })
}

pub(super) fn entry(
    from: State,
    to: State,
    event: Event,
    reason: Option<String>,
    at: DateTime<Utc>,
) -> StateTransition {
    StateTransition { from_state: Some(from), to_state: to, trigger: event.as_str().into(), timestamp: at, reason }
}
