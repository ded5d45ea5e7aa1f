//! `schedule_next_heartbeat`: the agent chooses when to follow up if the
//! contact stays silent after this turn, within the configured bounds.

use std::time::Duration;

use uuid::Uuid;

use super::refused;
use crate::agent::ToolError;
use crate::engine::actor::Actor;
use crate::engine::heartbeat;

impl Actor {
    pub(super) fn schedule_next_heartbeat(&mut self, id: Uuid, delay: Duration) -> Result<String, ToolError> {
        let delay = heartbeat::clamp(delay, self.shared.settings.scheduled_heartbeat_bounds);
        self.update(id, |i| i.scheduled_heartbeat_ms = Some(delay.as_millis() as u64)).map_err(refused)?;
        if let Some(running) = self.turn.as_mut() {
            running.scheduled = true;
        }
        Ok(format!(
            "if the contact stays silent, the next follow-up is due {} after this turn",
            crate::duration::format(delay)
        ))
    }
}
