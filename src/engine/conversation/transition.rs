//! A change of state: the event checked against the table
//! ([`crate::fsm`]), and what every change of state brings with it.

use chrono::{DateTime, Utc};

use super::{Effect, Step};
use crate::api::{EventData, State, StateTransition};
use crate::engine::{budget, heartbeat, report};
use crate::fsm::{self, Event, InvalidTransition, Target};
use crate::store::ConversationRecord;

/// Applies `event` to `current` at `now`, if the table allows it: the new
/// state and `previous_state`, the heartbeat and budget fields, `change`,
/// the report of an ending, and a history entry. Once it is on disk, the
/// change is published (unless the state stays).
pub fn transition(
    current: &ConversationRecord,
    event: Event,
    reason: Option<String>,
    now: DateTime<Utc>,
    change: impl FnOnce(&mut ConversationRecord),
) -> Result<Step, InvalidTransition> {
    let (from, previous) = (current.state, current.previous_state);
    let target = fsm::next(from, event, previous)?;
    let to = fsm::resolve(from, target, previous);
    let mut next = current.clone();
    next.state = to;
    if to == State::Paused {
        next.previous_state = Some(from);
    } else if from == State::Paused {
        next.previous_state = None;
    }
    heartbeat::on_transition(&mut next, from, to, now);
    budget::on_transition(&mut next, from, to, event);
    if !matches!(to, State::NeedsHumanIntervention | State::Paused) {
        // Why a person was needed holds only while one is (and while paused
        // from there); the history keeps it.
        next.intervention_reason = None;
    }
    change(&mut next);
    if from == State::NeedsHumanIntervention && to != State::Paused {
        // Not answered: the operator resumed or wrote to the contact.
        set_question_aside(&mut next);
    }
    if to.is_terminal() {
        report::on_end(&mut next, event, reason.as_deref());
        // Nothing is awaited of an ended conversation.
        next.awaiting_delivery = None;
    }
    next.updated_at = now;
    if target == Target::Stay {
        return Ok(Step::new(next, Vec::new()));
    }
    next.history.push(entry(from, to, event, reason.clone(), now));
    let trigger = event.as_str().to_string();
    let published = Effect::Publish(EventData::Transition { from, to, trigger, reason });
    Ok(Step::new(next, vec![published]))
}

/// Leaving NEEDS_HUMAN_INTERVENTION other than by an answer: the question
/// stays on record, unanswered.
fn set_question_aside(record: &mut ConversationRecord) {
    if let Some(question) = record.pending_question.take() {
        record.earlier_questions.push(question);
    }
}

/// The history entry of a change from `from` to `to`.
pub(in crate::engine) fn entry(
    from: State,
    to: State,
    event: Event,
    reason: Option<String>,
    at: DateTime<Utc>,
) -> StateTransition {
    StateTransition { from_state: Some(from), to_state: to, trigger: event.into(), timestamp: at, reason }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::api::HeartbeatConfig;

    fn record(state: State, previous: Option<State>) -> ConversationRecord {
        let mut record =
            ConversationRecord::new("o".into(), "+56912345678".into(), Vec::new(), HeartbeatConfig::default());
        (record.state, record.previous_state) = (state, previous);
        record
    }

    proptest! {
        /// Whatever the state and the event: the table decides, and a
        /// transition it allows is recorded once, with the state it names.
        #[test]
        fn a_transition_is_what_the_table_says_and_is_recorded_once(
            state in prop::sample::select(State::ALL.to_vec()),
            previous in prop::option::of(prop::sample::select(State::ALL.to_vec())),
            event in prop::sample::select(Event::ALL.to_vec()),
            seconds in 0i64..10_000_000,
        ) {
            let current = record(state, previous);
            let now = current.created_at + chrono::Duration::seconds(seconds);
            let done = transition(&current, event, Some("why".into()), now, |_| {});
            let Ok(target) = fsm::next(state, event, previous) else {
                prop_assert!(done.is_err());
                return Ok(());
            };
            let Step { next, effects, .. } = done.unwrap();
            let to = fsm::resolve(state, target, previous);
            prop_assert_eq!(next.state, to);
            prop_assert_eq!(next.updated_at, now);
            let recorded = next.history.len() - current.history.len();
            prop_assert_eq!(recorded, usize::from(target != Target::Stay));
            prop_assert_eq!(effects.len(), usize::from(target != Target::Stay));
            if to == State::Paused && target != Target::Stay {
                prop_assert_eq!(next.previous_state, Some(state));
            }
            if state == State::Paused && to != State::Paused {
                prop_assert_eq!(next.previous_state, None);
            }
            if to.is_terminal() {
                prop_assert!(next.awaiting_delivery.is_none() && next.outcome.is_some());
            }
        }
    }
}
