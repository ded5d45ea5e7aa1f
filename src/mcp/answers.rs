//! What tools answer beyond the API's own types: a named list, a wait's
//! outcome, a page with its cursor.

use super::*;

/// How many events `list_events` returns at most: enough for a whole
/// ordinary conversation, small enough for an agent's context.
pub(super) const EVENTS_PER_CALL: usize = 200;

/// `list_conversations`' answer: structured content is an object, so the
/// list is named.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Conversations {
    /// Newest first.
    pub conversations: Vec<ConversationInstance>,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How many conversations follow this page.
    pub remaining: usize,
}

/// `list_opt_outs`' answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OptOuts {
    /// The do-not-contact list.
    pub opt_outs: Vec<OptOut>,
}

/// `wait_for_conversation`'s answer: where the conversation stands, and
/// all of it only once it reached what was waited for (an agent that waits
/// again and again does not fill its context with the same conversation).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Waited {
    /// True when the conversation reached what was waited for; false when
    /// timeout_seconds passed first.
    pub reached: bool,
    pub id: uuid::Uuid,
    pub state: State,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    /// The conversation in full, when reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<ConversationInstance>,
}

/// `get_transcript`'s answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Transcript {
    /// Oldest first.
    pub messages: Vec<TranscriptMessage>,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How many messages follow this page.
    pub remaining: usize,
}

/// `list_events`' answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Events {
    /// Oldest first.
    pub events: Vec<ConversationEvent>,
    /// True when there are events after the last one here.
    pub more: bool,
}
