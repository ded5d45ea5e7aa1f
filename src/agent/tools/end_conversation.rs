//! `end_conversation`: the agent ends the conversation, with the outcome and
//! summary the person who started it reads.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::agent::ToolCall;
use crate::api::{Outcome, limits};

/// End this conversation, when the objective is achieved or cannot be. Stop
/// after calling it. What you write is what the person who started this
/// conversation reads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Why the conversation ends, in a sentence.
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
    /// achieved: the objective is met; partially_achieved: some of it;
    /// declined: the contact said no; failed: it cannot be done. Left out,
    /// relay judges it from the todos.
    #[serde(default)]
    pub outcome: Option<OutcomeArg>,
    /// What was achieved or learned, in a sentence or two, for the person who
    /// asked. Left out, the reason is the summary.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub summary: Option<String>,
}

/// The outcomes the agent may choose ([`Outcome::AGENT_CHOICES`]).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeArg {
    Achieved,
    PartiallyAchieved,
    Declined,
    Failed,
}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        let Args { reason, outcome, summary } = self;
        let outcome = outcome.map(|o| match o {
            OutcomeArg::Achieved => Outcome::Achieved,
            OutcomeArg::PartiallyAchieved => Outcome::PartiallyAchieved,
            OutcomeArg::Declined => Outcome::Declined,
            OutcomeArg::Failed => Outcome::Failed,
        });
        Ok(ToolCall::EndConversation { reason, outcome, summary })
    }
}
