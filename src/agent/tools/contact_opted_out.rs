//! `contact_opted_out`: the contact asked not to be written to. The engine
//! takes it only on the contact's own words, or hands it to a person.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::agent::ToolCall;
use crate::api::limits;

/// The contact asked not to be written to any more (to stop, unsubscribe,
/// be left alone). relay ends the conversation and never writes to them
/// again; send nothing more. Stop after calling it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What the contact asked, in a sentence (your words).
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        Ok(ToolCall::ContactOptedOut { reason: self.reason })
    }
}
