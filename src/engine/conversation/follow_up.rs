//! The heartbeat's timer firing, and a limit running out.

use chrono::{DateTime, Utc};

use super::{Step, transition};
use crate::api::BudgetLimit;
use crate::engine::budget;
use crate::fsm::{Event, InvalidTransition};
use crate::store::ConversationRecord;

/// The contact said nothing for the heartbeat's interval: a follow-up is due
/// (`heartbeat_fires`; what follows is the actor's `drive`). A follow-up is
/// a turn, so one the budget has not got ends the conversation instead; once
/// the follow-ups are all sent no turn would run, and the conversation is
/// abandoned for silence as usual.
pub fn follow_up_due(current: &ConversationRecord, now: DateTime<Utc>) -> Result<Step, InvalidTransition> {
    let owed = current.follow_up_count < current.heartbeat_config.max_followups;
    match budget::spent(current, false).filter(|_| owed) {
        Some((limit, reason)) => budget_ran_out(current, limit, reason, now),
        None => transition(current, Event::HeartbeatFires, None, now, |_| {}),
    }
}

/// `limit` ran out (`reason` names it): ABANDONED, `ended_by: budget` or
/// `expired` (see `report::on_end`).
pub fn budget_ran_out(
    current: &ConversationRecord,
    limit: BudgetLimit,
    reason: String,
    now: DateTime<Utc>,
) -> Result<Step, InvalidTransition> {
    let event = if limit == BudgetLimit::ExpiresAt { Event::Expired } else { Event::BudgetExhausted };
    transition(current, event, Some(reason), now, |record| record.budget.reached = Some(limit))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::api::{Budget, HeartbeatConfig, State};

    fn waiting(follow_ups: u32, max_followups: u32, turns_taken: u32, max_turns: Option<u32>) -> ConversationRecord {
        let heartbeat = HeartbeatConfig { interval_ms: 60_000, max_followups };
        let mut record = ConversationRecord::new("o".into(), "+56912345678".into(), Vec::new(), heartbeat);
        record.state = State::WaitingForReply;
        (record.follow_up_count, record.turns_taken) = (follow_ups, turns_taken);
        record.budget = Budget { max_turns, ..Budget::default() };
        record
    }

    proptest! {
        /// A follow-up owed with no turn left in the budget ends the
        /// conversation for its budget; otherwise the heartbeat fires.
        #[test]
        fn a_follow_up_is_a_turn_the_budget_must_have(
            follow_ups in 0u32..5, max_followups in 0u32..5, turns_taken in 0u32..5, max_turns in prop::option::of(0u32..5),
        ) {
            let current = waiting(follow_ups, max_followups, turns_taken, max_turns);
            let step = follow_up_due(&current, Utc::now()).unwrap();
            let out_of_turns = max_turns.is_some_and(|max| turns_taken >= max);
            let trigger = step.next.history.last().unwrap().trigger;
            if follow_ups < max_followups && out_of_turns {
                prop_assert_eq!(step.next.state, State::Abandoned);
                prop_assert_eq!(step.next.budget.reached, Some(BudgetLimit::MaxTurns));
                prop_assert_eq!(trigger, crate::fsm::Trigger::Event(Event::BudgetExhausted));
            } else {
                prop_assert_eq!(trigger, crate::fsm::Trigger::Event(Event::HeartbeatFires));
            }
        }
    }
}
