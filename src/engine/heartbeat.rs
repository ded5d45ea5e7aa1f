//! When follow-ups are due. A deadline (`next_heartbeat_at`) exists only
//! while a conversation waits for a reply; it is persisted with the state, so
//! a restarted daemon re-arms it (a deadline already past fires at once).
//!
//! Here are the deadline's rules (armed, disarmed, paused, clamped) and the
//! actor's timer: kept in step with the live conversation's deadline, it
//! fires `heartbeat_fires` (what follows is in [`super::actor`]'s `drive`).
//! While relay's latest message has not reached the contact's phone, the
//! same timer waits for its delivery timeout instead ([`super::delivery`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use uuid::Uuid;

use super::EngineError;
use super::actor::Actor;
use crate::api::{State, WaitReason};
use crate::fsm::Event;
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

/// What the actor's timer waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Due {
    /// The heartbeat: a follow-up.
    Heartbeat,
    /// `delivery.timeout` for relay's latest message (see [`super::delivery`]).
    InboundOutcome,
    /// The end of what holds a first message or a follow-up (quiet hours,
    /// WhatsApp's reach-out lock, the day's cap): look again.
    Hold,
}

/// The armed timer: the persisted wall-clock deadline and the monotonic
/// instant it maps to (computed once, so other events do not shift it).
pub(super) struct Timer {
    instance: Uuid,
    due: Due,
    at: DateTime<Utc>,
    deadline: Instant,
}

/// What the waiting conversation's timer waits for: while relay's latest
/// message is not delivered, its timeout, and no follow-up (the heartbeat
/// is held until it is delivered, then fires if it is past).
fn due(instance: &ConversationRecord) -> Option<(Due, DateTime<Utc>)> {
    if matches!(instance.state, State::Created | State::HeartbeatScheduled) {
        return instance.next_send_at.map(|at| (Due::Hold, at));
    }
    match &instance.awaiting_delivery {
        Some(awaiting) if awaiting.overdue => None,
        Some(awaiting) => Some((Due::InboundOutcome, awaiting.due_at)),
        None => instance.next_heartbeat_at.map(|at| (Due::Heartbeat, at)),
    }
}

impl Actor {
    /// Keeps the timer in step with the live conversation's persisted deadlines.
    pub(super) fn sync_timer(&mut self) -> Option<Instant> {
        let armed = self
            .convs
            .iter()
            .find(|c| {
                c.state == State::WaitingForReply
                    || (matches!(c.state, State::Created | State::HeartbeatScheduled) && c.next_send_at.is_some())
            })
            .and_then(|c| due(c).map(|(due, at)| (c.id, due, at)));
        let Some((instance, due, at)) = armed else {
            self.timer = None;
            return None;
        };
        if let Some(timer) = self.timer.as_ref().filter(|t| t.instance == instance && t.due == due && t.at == at) {
            return Some(timer.deadline);
        }
        let wait = (at - crate::clock::now()).to_std().unwrap_or(Duration::ZERO);
        let deadline = Instant::now() + wait;
        self.timer = Some(Timer { instance, due, at, deadline });
        Some(deadline)
    }

    pub(super) fn timer_fired(&mut self) {
        match self.timer.as_ref().map(|t| (t.due, t.instance)) {
            Some((Due::Heartbeat, _)) => self.heartbeat_fired(),
            Some((Due::InboundOutcome, id)) => {
                self.timer = None;
                self.delivery_due(id);
            }
            // drive() looks again at what holds it.
            Some((Due::Hold, _)) => self.timer = None,
            None => {}
        }
    }

    fn heartbeat_fired(&mut self) {
        let Some(timer) = self.timer.take() else { return };
        let id = timer.instance;
        let lateness_ms = (crate::clock::now() - timer.at).num_milliseconds();
        tracing::debug!(instance = %id, lateness_ms, "heartbeat fired");
        // A follow-up is a turn: one the budget has not got is never
        // started (but when the follow-ups are all sent no turn would run,
        // and the conversation is abandoned for silence as before).
        let spent = self.convs.iter().find(|c| c.id == id).and_then(|c| {
            (c.follow_up_count < c.heartbeat_config.max_followups).then(|| super::budget::spent(c, false)).flatten()
        });
        if let Some((limit, reason)) = spent {
            if let Err(error) = self.end_for_budget(id, limit, reason) {
                tracing::error!(instance = %id, %error, "cannot end a conversation whose budget is spent");
            }
            return;
        }
        match self.transition(id, Event::HeartbeatFires, None, |_| {}) {
            // drive() writes the follow-up, or abandons once max_followups were sent.
            Ok(instance) => tracing::info!(instance = %id, follow_ups_sent = instance.follow_up_count, "heartbeat"),
            Err(error @ EngineError::Store(_)) => {
                // Try again in a second rather than spin on a failing disk.
                tracing::error!(instance = %id, %error, "cannot record the heartbeat; retrying in 1s");
                self.timer = Some(Timer { deadline: Instant::now() + Duration::from_secs(1), ..timer });
            }
            Err(error) => tracing::warn!(instance = %id, %error, "heartbeat discarded"),
        }
    }
}
