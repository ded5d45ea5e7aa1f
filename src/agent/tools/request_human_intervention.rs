//! `request_human_intervention`: the agent hands the conversation to the
//! operator, with a question whose answer comes back in a later turn.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::agent::ToolCall;
use crate::api::limits;

/// Ask the human operator for help: the contact needs something you cannot
/// give or decide. Put what you need to know in `question`; the operator's
/// answer comes to you (not to the contact) in a later turn. Stop after
/// calling it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What the operator must handle.
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
    /// The question to the operator, if you have one.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub question: Option<String>,
}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        Ok(ToolCall::RequestHumanIntervention { reason: self.reason, question: self.question })
    }
}
