//! The do-not-contact list's entries: numbers that asked relay not to write
//! to them, kept across conversations (the file is
//! `store::OptOutList`'s). The engine checks the list when a
//! conversation is created and before every message relay sends; an
//! operator can override it for one conversation, which is recorded in the
//! entry and in the conversation.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// Who put a number on the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OptOutSource {
    /// The contact asked, in a conversation.
    Contact,
    /// The operator (`relay optout add`).
    Operator,
}

/// One conversation created for a listed number on the operator's word.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OptOutOverride {
    pub instance_id: Uuid,
    pub at: DateTime<Utc>,
    /// The operator's reason (`--override-opt-out`).
    pub reason: String,
}

/// A number relay does not write to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OptOut {
    /// E.164.
    pub contact: String,
    /// When it was listed.
    pub since: DateTime<Utc>,
    pub source: OptOutSource,
    /// Why: the operator's words, or relay's account of the contact's
    /// request (never the contact's own text).
    pub reason: String,
    /// The conversation in which the contact asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<Uuid>,
    /// Conversations created anyway, on the operator's word.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<OptOutOverride>,
}

impl OptOut {
    /// `contact` listed now, by `source`, for `reason`; `instance_id`: the
    /// conversation it was asked in, if any.
    pub fn new(contact: String, source: OptOutSource, reason: String, instance_id: Option<Uuid>) -> OptOut {
        OptOut { contact, since: crate::clock::now(), source, reason, instance_id, overrides: Vec::new() }
    }

    /// "+56912345678 asked on 2026-11-25 not to be contacted", and that
    /// writing anyway is a person's call, with the override in the API's
    /// words (a front end rewords them: [`Surface::reword`]).
    pub fn refusal(&self) -> String {
        let who = match self.source {
            OptOutSource::Contact => "asked",
            OptOutSource::Operator => "was listed by the operator",
        };
        format!(
            "{} {who} on {} not to be contacted. Writing to them anyway is a person's decision (the operator's), \
             not an agent's: only on their word does {} write to them, in this one conversation",
            self.contact,
            self.since.format("%Y-%m-%d"),
            Surface::Http.override_words(),
        )
    }
}

/// Where a refusal is read: the daemon's API, `relay`'s command line or
/// its MCP tools. Each names the override of the list in its own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Http,
    Cli,
    Mcp,
}

impl Surface {
    fn override_words(self) -> &'static str {
        match self {
            Surface::Http => "a request with \"override_opt_out\": \"<their reason>\"",
            Surface::Cli => "`relay create --override-opt-out \"<their reason>\"`",
            Surface::Mcp => "create_conversation with override_opt_out: \"<their reason>\"",
        }
    }

    /// A refusal in this surface's words: the daemon names the override as
    /// its API takes it; the command line and MCP, as their callers do.
    pub fn reword(self, refusal: &str) -> String {
        refusal.replace(Surface::Http.override_words(), self.override_words())
    }
}
