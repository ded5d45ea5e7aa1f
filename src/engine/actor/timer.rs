//! The contact's one timer: kept in step with the waiting conversation's
//! persisted deadline ([`heartbeat::due`]), it fires a follow-up, a
//! delivery timeout, or a look again at what held a message.

use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use super::Actor;
use crate::api::State;
use crate::engine::heartbeat::{Due, due};
use crate::engine::{EngineError, conversation};
use chrono::{DateTime, Utc};

/// The armed timer: the persisted wall-clock deadline and the monotonic
/// instant it maps to (computed once, so other events do not shift it).
pub(super) struct Timer {
    instance: Uuid,
    due: Due,
    at: DateTime<Utc>,
    deadline: Instant,
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
            Some((Due::DeliveryTimeout, id)) => {
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
        let fired = self.index(id).and_then(|index| {
            let step = conversation::follow_up_due(&self.convs[index], crate::clock::now())
                .map_err(|source| super::transitions::refused(id, source))?;
            self.run_step(id, step)
        });
        match fired {
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
