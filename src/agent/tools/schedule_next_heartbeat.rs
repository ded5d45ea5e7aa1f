//! `schedule_next_heartbeat`: when to follow up if the contact stays silent
//! after this turn (the engine clamps it to the configured bounds).

use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde_json::Value;

use super::Tool;
use crate::agent::ToolCall;

/// Choose when to follow up if the contact stays silent after this turn
/// (e.g. they said "ask me tomorrow").
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Seconds (a whole number), or a duration such as "90s", "30m", "2h".
    #[schemars(schema_with = "delay_schema")]
    pub delay: Value,
}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        let delay = match self.delay {
            Value::Number(n) => n.as_u64().map(Duration::from_secs),
            Value::String(s) => crate::duration::parse(&s).ok(),
            _ => None,
        };
        let delay = delay.ok_or("`delay` must be seconds (a whole number) or a duration such as \"2h\"".to_string())?;
        Ok(ToolCall::ScheduleNextHeartbeat { delay })
    }
}

fn delay_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["integer", "string"], "minimum": 0})
}
