//! `send_message`: a message to the conversation's contact, the only person
//! the agent can write to. What it does is a send, which the engine's actor runs.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::agent::ToolCall;
use crate::api::limits;

/// Send a WhatsApp message to the contact of this conversation (the only
/// person you can write to). Keep it brief and natural, in the contact's
/// language.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The message.
    #[schemars(length(min = 1, max = limits::MAX_MESSAGE_CHARS))]
    pub text: String,
}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        Ok(ToolCall::SendMessage { text: self.text })
    }
}
