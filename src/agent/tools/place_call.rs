//! `place_call`: the one stub. It places no call and tells the model so.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::agent::ToolCall;

/// Calls are not available yet: this tool places no call and only tells
/// you so.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        Ok(ToolCall::PlaceCall)
    }
}
