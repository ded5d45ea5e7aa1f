//! When follow-ups are due. A deadline (`next_heartbeat_at`) exists only
//! while a conversation waits for a reply; it is persisted with the state, so
//! a restarted daemon re-arms it (a deadline already past fires at once).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::api::{ConversationInstance, State};

/// Keeps the heartbeat fields right across a transition `from -> to`:
/// entering WAITING_FOR_REPLY arms the timer (with the time left if we come
/// back from PAUSED, else the agent's scheduled delay, else the interval);
/// leaving it disarms the timer, remembering the time left when pausing.
pub fn on_transition(instance: &mut ConversationInstance, from: State, to: State, now: DateTime<Utc>) {
    if from == to {
        return;
    }
    let remaining_when_paused = instance.paused_heartbeat_remaining_ms.take();
    if to == State::NeedsHumanIntervention {
        // The agent's chosen delay was for its own next wait, not a human's.
        instance.scheduled_heartbeat_ms = None;
    }
    if to == State::WaitingForReply {
        let delay_ms = match from {
            State::Paused => remaining_when_paused,
            _ => instance.scheduled_heartbeat_ms.take(),
        }
        .unwrap_or(instance.heartbeat_config.interval_ms);
        instance.next_heartbeat_at = Some(now + chrono::Duration::milliseconds(delay_ms as i64));
    } else if from == State::WaitingForReply {
        if to == State::Paused {
            instance.paused_heartbeat_remaining_ms = Some(remaining_ms(instance, now));
        }
        instance.next_heartbeat_at = None;
    }
}

/// Re-arms a fresh interval (an operator message restarts the wait).
pub fn rearm(instance: &mut ConversationInstance, now: DateTime<Utc>) {
    instance.next_heartbeat_at =
        Some(now + chrono::Duration::milliseconds(instance.heartbeat_config.interval_ms as i64));
}

pub fn remaining_ms(instance: &ConversationInstance, now: DateTime<Utc>) -> u64 {
    instance.next_heartbeat_at.map(|at| (at - now).num_milliseconds().max(0) as u64).unwrap_or(0)
}

/// The agent's `schedule_next_heartbeat` delay, clamped to the configured
/// bounds (`(min, max)`).
pub fn clamp(delay: Duration, (min, max): (Duration, Duration)) -> Duration {
    delay.clamp(min, max.max(min))
}
