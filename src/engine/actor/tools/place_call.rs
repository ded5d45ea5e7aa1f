//! `place_call`: the one stub. No call is placed; the transcript and the
//! model are told so.

use uuid::Uuid;

use super::refused;
use crate::agent::ToolError;
use crate::api::Role;
use crate::engine::actor::Actor;

impl Actor {
    pub(super) fn place_call(&mut self, id: Uuid) -> Result<String, ToolError> {
        tracing::info!(instance = %id, "the agent asked to place a call; calls are not available");
        let note = "The agent tried to place a call; calls are not available yet.".to_string();
        self.record(id, Role::System, note).map_err(refused)?;
        Ok("Calls are not available yet: no call was placed. Continue by message.".into())
    }
}
