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

    /// "+56912345678 asked on 2026-11-25 not to be contacted".
    pub fn refusal(&self) -> String {
        let who = match self.source {
            OptOutSource::Contact => "asked",
            OptOutSource::Operator => "was listed by the operator",
        };
        format!(
            "{} {who} on {} not to be contacted; create with --override-opt-out \"reason\" to write to them in \
             this one conversation anyway",
            self.contact,
            self.since.format("%Y-%m-%d"),
        )
    }
}
