//! Each conversation's limits: turns, tokens and a deadline (`--max-turns`,
//! `--max-tokens`, `--expires-in` / `--expires-at`, or config.json's
//! `budget`). When one runs out the conversation ends, ABANDONED, with
//! `ended_by: budget` or `expired` and the limit named, instead of going on
//! (and following up) forever.
//!
//! The rules live here; the actor applies them in `actor/budget.rs`.
//!
//! - A turn is what `relay eval` counts: each entry into ACTIVE (the first
//!   message, a reply, a go after the operator's answer or resume) or
//!   HEARTBEAT_SCHEDULED (a follow-up), kept in `turns_taken`. Two entries
//!   are not turns: a return from PAUSED re-runs the turn that was paused
//!   (counting it again would charge one turn twice), and the operator's
//!   `relay send` from NEEDS_HUMAN_INTERVENTION passes through ACTIVE
//!   without the agent.
//! - Both budgets are checked where the next turn would start, never in
//!   the middle of one (nor of a send): the conversation waits for the
//!   contact as usual, and ends when a reply or a follow-up would need a
//!   turn the budget has not got. So a contact's answer to the last
//!   allowed message is still recorded (`last_contact_message`). A turn's
//!   tokens cannot be known before it runs: a turn starts only while fewer
//!   than `max_tokens` were used, and the last one may go past.
//! - The deadline is a wall-clock instant, persisted in the instance like
//!   the heartbeat, so a restart keeps it (one already past ends the
//!   conversation at once). It ends the conversation in any state but
//!   terminal, QUEUED and PAUSED included; a turn or a send under way is
//!   let finish first.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::api::{Budget, BudgetLimit, BudgetRequest, State};
use crate::config::{BudgetSettings, MAX_EXPIRES_IN};
use crate::fsm::Event;
use crate::store::ConversationRecord;

/// The budget a create request asks for, the config's defaults filling
/// what it leaves out; or why it cannot be had. `now` is the creation time.
pub fn of_request(asked: BudgetRequest, defaults: &BudgetSettings, now: DateTime<Utc>) -> Result<Budget, String> {
    if asked.expires_in_ms.is_some() && asked.expires_at.is_some() {
        return Err("give the deadline as expires_in_ms or as expires_at, not both".into());
    }
    let max_turns = asked.max_turns.or(defaults.max_turns);
    if max_turns == Some(0) {
        return Err("max_turns must be at least 1 (a conversation with no turn would never write)".into());
    }
    let max_tokens = asked.max_tokens.or(defaults.max_tokens);
    if max_tokens == Some(0) {
        return Err("max_tokens must be at least 1".into());
    }
    let expires_at = match (asked.expires_in_ms, asked.expires_at) {
        (Some(ms), _) => {
            let expires_in = Duration::from_millis(ms);
            expires_in_problem(expires_in).map_or(Ok(()), |problem| Err(format!("expires_in_ms {problem}")))?;
            Some(now + chrono::Duration::from_std(expires_in).expect("at most a year"))
        }
        (None, Some(at)) => {
            if let Some(problem) = expires_at_problem(at, now) {
                return Err(format!("expires_at {problem}"));
            }
            Some(at)
        }
        (None, None) => defaults.expires_in.map(|d| now + chrono::Duration::from_std(d).expect("checked at start")),
    };
    Ok(Budget { max_turns, max_tokens, expires_at, reached: None })
}

/// What is wrong with a deadline `expires_in` from now, if anything, in
/// words that follow the name the caller used (`--expires-in`, ...).
pub fn expires_in_problem(expires_in: Duration) -> Option<String> {
    if expires_in.is_zero() {
        return Some("must be longer than 0s (e.g. 3d, 12h)".into());
    }
    (expires_in > MAX_EXPIRES_IN)
        .then(|| format!("must be at most 365d (it is {})", crate::duration::format(expires_in)))
}

/// What is wrong with a deadline at `at`, if anything (see [`expires_in_problem`]).
pub fn expires_at_problem(at: DateTime<Utc>, now: DateTime<Utc>) -> Option<String> {
    if at <= now {
        return Some(format!("{} has already passed (it is {} now)", rfc3339(at), rfc3339(now)));
    }
    let max = chrono::Duration::from_std(MAX_EXPIRES_IN).expect("a year");
    (at - now > max).then(|| format!("{} is more than 365 days away", rfc3339(at)))
}

/// A deadline written as a time (RFC 3339), as `--expires-at` and MCP's
/// `expires_at` take it; whether it is in the future is [`expires_at_problem`]'s.
pub fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| format!("'{text}' is not a time: use RFC 3339, e.g. 2026-03-01T18:00:00-03:00"))
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Keeps `turns_taken` across a transition `from -> to` by `event` (see the
/// module's notes on what a turn is).
pub fn on_transition(instance: &mut ConversationRecord, from: State, to: State, event: Event) {
    let starts_turn = matches!(to, State::Active | State::HeartbeatScheduled)
        && from != to
        && from != State::Paused
        && event != Event::ManualSend;
    if starts_turn {
        instance.turns_taken = instance.turns_taken.saturating_add(1);
    }
}

/// Which budget, if any, forbids the next turn of `instance`, and the
/// reason in words. `counted`: the turn about to run has been counted
/// already (the conversation entered ACTIVE or HEARTBEAT_SCHEDULED for it);
/// otherwise it is the one entering them would start.
pub fn spent(instance: &ConversationRecord, counted: bool) -> Option<(BudgetLimit, String)> {
    let budget = &instance.budget;
    if let Some(max) = budget.max_turns {
        let allowed = if counted { instance.turns_taken <= max } else { instance.turns_taken < max };
        if !allowed {
            let turns = if max == 1 { "1 turn".to_string() } else { format!("{max} turns") };
            return Some((BudgetLimit::MaxTurns, format!("the conversation reached its budget of {turns}")));
        }
    }
    if let Some(max) = budget.max_tokens {
        let used = instance.usage.total_tokens();
        if used >= max {
            return Some((
                BudgetLimit::MaxTokens,
                format!("the conversation reached its budget of {max} tokens ({used} used)"),
            ));
        }
    }
    None
}

/// Whether the deadline of `instance` has passed at `now`, and the reason in words.
pub fn expired(instance: &ConversationRecord, now: DateTime<Utc>) -> Option<String> {
    let at = instance.budget.expires_at.filter(|at| *at <= now)?;
    Some(format!("the conversation reached its deadline ({})", rfc3339(at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_request_takes_the_defaults_it_leaves_out_and_its_own_over_them() {
        let now = at("2026-01-15T12:00:00Z");
        let defaults = BudgetSettings {
            max_turns: Some(10),
            max_tokens: Some(5_000),
            expires_in: Some(Duration::from_secs(86_400)),
        };
        let taken = of_request(BudgetRequest::default(), &defaults, now).unwrap();
        assert_eq!(
            taken,
            Budget {
                max_turns: Some(10),
                max_tokens: Some(5_000),
                expires_at: Some(at("2026-01-16T12:00:00Z")),
                reached: None
            }
        );
        let own =
            BudgetRequest { max_turns: Some(3), expires_at: Some(at("2026-01-18T12:00:00Z")), ..Default::default() };
        let taken = of_request(own, &defaults, now).unwrap();
        assert_eq!((taken.max_turns, taken.expires_at), (Some(3), Some(at("2026-01-18T12:00:00Z"))));
        assert_eq!(of_request(BudgetRequest::default(), &BudgetSettings::default(), now).unwrap(), Budget::default());
    }

    #[test]
    fn wrong_budgets_are_refused_naming_the_field() {
        let now = at("2026-01-15T12:00:00Z");
        let refused = |asked: BudgetRequest| of_request(asked, &BudgetSettings::default(), now).unwrap_err();
        assert!(refused(BudgetRequest { max_turns: Some(0), ..Default::default() }).starts_with("max_turns must"));
        assert!(refused(BudgetRequest { max_tokens: Some(0), ..Default::default() }).starts_with("max_tokens must"));
        let zero = refused(BudgetRequest { expires_in_ms: Some(0), ..Default::default() });
        assert_eq!(zero, "expires_in_ms must be longer than 0s (e.g. 3d, 12h)");
        let past = refused(BudgetRequest { expires_at: Some(at("2026-01-15T11:00:00Z")), ..Default::default() });
        assert_eq!(past, "expires_at 2026-01-15T11:00:00Z has already passed (it is 2026-01-15T12:00:00Z now)");
        let both = BudgetRequest {
            expires_in_ms: Some(1_000),
            expires_at: Some(at("2026-01-16T12:00:00Z")),
            ..Default::default()
        };
        assert!(refused(both).contains("not both"));
    }

    proptest::proptest! {
        /// Any deadline from 1 ms to 365 days ahead is taken, and lands
        /// exactly that far after the creation; any other is refused.
        #[test]
        fn a_deadline_is_taken_only_within_its_bounds(ms in proptest::prop_oneof![0u64..1_000, 0u64..40_000_000_000, 0u64..u64::MAX]) {
            let now = at("2026-01-15T12:00:00Z");
            let asked = BudgetRequest { expires_in_ms: Some(ms), ..Default::default() };
            let within = ms > 0 && Duration::from_millis(ms) <= MAX_EXPIRES_IN;
            match of_request(asked, &BudgetSettings::default(), now) {
                Ok(budget) => {
                    proptest::prop_assert!(within, "{} ms taken", ms);
                    proptest::prop_assert_eq!(budget.expires_at, Some(now + chrono::Duration::milliseconds(ms as i64)));
                }
                Err(_) => proptest::prop_assert!(!within, "{} ms refused", ms),
            }
        }
    }

    #[test]
    fn a_turn_is_an_entry_into_active_or_heartbeat_scheduled_but_a_resume_or_an_operator_send() {
        let mut i = ConversationRecord::new("o".into(), "+56912345678".into(), vec![], Default::default());
        on_transition(&mut i, State::Created, State::Active, Event::AgentSendsFirstMessage);
        on_transition(&mut i, State::WaitingForReply, State::HeartbeatScheduled, Event::HeartbeatFires);
        on_transition(&mut i, State::WaitingForAgent, State::Active, Event::AgentProcessesReply);
        on_transition(&mut i, State::NeedsHumanIntervention, State::Active, Event::OperatorAnswers);
        assert_eq!(i.turns_taken, 4);
        on_transition(&mut i, State::Paused, State::Active, Event::Resume);
        on_transition(&mut i, State::NeedsHumanIntervention, State::Active, Event::ManualSend);
        on_transition(&mut i, State::Active, State::Active, Event::ManualSend);
        on_transition(&mut i, State::Active, State::WaitingForReply, Event::MessageSent);
        assert_eq!(i.turns_taken, 4);
    }

    #[test]
    fn the_next_turn_is_refused_once_a_budget_is_spent_naming_it() {
        let mut i = ConversationRecord::new("o".into(), "+56912345678".into(), vec![], Default::default());
        i.budget.max_turns = Some(2);
        i.turns_taken = 1;
        assert_eq!(spent(&i, false), None);
        i.turns_taken = 2;
        assert_eq!(spent(&i, true), None, "the second turn, counted, may run");
        let (limit, reason) = spent(&i, false).unwrap();
        assert_eq!((limit, reason.as_str()), (BudgetLimit::MaxTurns, "the conversation reached its budget of 2 turns"));
        i.budget = Budget { max_tokens: Some(300), ..Default::default() };
        i.usage.input_tokens = 200;
        i.usage.output_tokens = 99;
        assert_eq!(spent(&i, false), None);
        i.usage.output_tokens = 120;
        let (limit, reason) = spent(&i, true).unwrap();
        assert_eq!(
            (limit, reason.as_str()),
            (BudgetLimit::MaxTokens, "the conversation reached its budget of 300 tokens (320 used)")
        );
    }
}
