//! When follow-ups are due. A deadline (`next_heartbeat_at`) exists only
//! while a conversation waits for a reply; it is persisted with the state, so
//! a restarted daemon re-arms it (a deadline already past fires at once).
//!
//! Here are the deadline's rules (armed, disarmed, paused, clamped) and what
//! a conversation's timer waits for ([`due`]); the actor's timer fires it.
//! While relay's latest message has not reached the contact's phone, the
//! timer waits for its delivery timeout instead ([`super::delivery`]).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::api::{State, WaitReason};
use crate::store::ConversationRecord;

/// Keeps the heartbeat fields right across a transition `from -> to`:
/// entering WAITING_FOR_REPLY arms the timer (with the time left if we come
/// back from PAUSED, else the agent's scheduled delay, else the interval);
/// leaving it disarms the timer, remembering the time left when pausing.
pub fn on_transition(instance: &mut ConversationRecord, from: State, to: State, now: DateTime<Utc>) {
    if from == to {
        return;
    }
    // What held the next message held it in the state left.
    instance.waiting_for = None;
    instance.next_send_at = None;
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
        arm(instance, now + chrono::Duration::milliseconds(delay_ms as i64));
    } else if from == State::WaitingForReply {
        if to == State::Paused {
            instance.paused_heartbeat_remaining_ms = Some(remaining_ms(instance, now));
        }
        instance.next_heartbeat_at = None;
    }
}

/// Re-arms a fresh interval (an operator message restarts the wait).
pub fn rearm(instance: &mut ConversationRecord, now: DateTime<Utc>) {
    arm(instance, now + chrono::Duration::milliseconds(instance.heartbeat_config.interval_ms as i64));
}

/// Arms the heartbeat for `due`, or for the end of the contact's quiet
/// hours if `due` falls in them (and says so: `waiting_for`).
fn arm(instance: &mut ConversationRecord, due: DateTime<Utc>) {
    let open = instance.contact_time.as_ref().map_or(due, |t| t.open_at(due));
    instance.next_heartbeat_at = Some(open);
    let moved = open > due;
    instance.waiting_for = moved.then_some(WaitReason::QuietHours);
    instance.next_send_at = moved.then_some(open);
}

pub fn remaining_ms(instance: &ConversationRecord, now: DateTime<Utc>) -> u64 {
    instance.next_heartbeat_at.map(|at| (at - now).num_milliseconds().max(0) as u64).unwrap_or(0)
}

/// The agent's `schedule_next_heartbeat` delay, clamped to the configured
/// bounds (`(min, max)`).
pub fn clamp(delay: Duration, (min, max): (Duration, Duration)) -> Duration {
    delay.clamp(min, max.max(min))
}

/// What a conversation's timer waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// The heartbeat: a follow-up.
    Heartbeat,
    /// `delivery.timeout` for relay's latest message (see [`super::delivery`]).
    DeliveryTimeout,
    /// The end of what holds a first message or a follow-up (quiet hours,
    /// WhatsApp's reach-out lock, the day's cap): look again.
    Hold,
}

/// What the waiting conversation's timer waits for: while relay's latest
/// message is not delivered, its timeout, and no follow-up (the heartbeat
/// is held until it is delivered, then fires if it is past).
pub fn due(instance: &ConversationRecord) -> Option<(Due, DateTime<Utc>)> {
    if matches!(instance.state, State::Created | State::HeartbeatScheduled) {
        return instance.next_send_at.map(|at| (Due::Hold, at));
    }
    match &instance.awaiting_delivery {
        Some(awaiting) if awaiting.overdue => None,
        Some(awaiting) => Some((Due::DeliveryTimeout, awaiting.due_at)),
        None => instance.next_heartbeat_at.map(|at| (Due::Heartbeat, at)),
    }
}
