//! What callers send to act on conversations (create, send, answer, list,
//! wait), and the answers that are not a conversation itself.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::ConversationInstance;
use crate::fsm::State;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTodo {
    /// What the agent must find out or agree (trimmed; not empty).
    #[schema(min_length = 1, max_length = 500)]
    pub text: String,
    /// What the answer is, when the caller wants a typed `value` back (a
    /// small JSON Schema: see `AnswerSchema`); absent, the answer is words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_schema: Option<super::AnswerSchema>,
}

impl NewTodo {
    /// A todo whose answer is words.
    pub fn new(text: impl Into<String>) -> NewTodo {
        NewTodo { text: text.into(), answer_schema: None }
    }
}

/// Optional overrides of the heartbeat defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatOverrides {
    /// How long a silence lasts before a follow-up (milliseconds; 1 s to 30 days).
    #[schema(minimum = 1_000, maximum = 2_592_000_000_u64)]
    pub interval_ms: Option<u64>,
    #[schema(maximum = 100)]
    pub max_followups: Option<u32>,
}

/// Optional limits of a conversation; each left out takes the `budget`
/// section of config.json (no limit unless set there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetRequest {
    /// Agent turns at most (first message, replies, follow-ups); at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub max_turns: Option<u32>,
    /// Model tokens at most, input and output together; at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub max_tokens: Option<u64>,
    /// The conversation ends this long after it is created (milliseconds;
    /// more than 0, at most 365 days). Not with `expires_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 31_536_000_000_u64)]
    pub expires_in_ms: Option<u64>,
    /// The conversation ends at this instant (RFC 3339, in the future).
    /// Not with `expires_in_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInstanceRequest {
    /// What the conversation is for (trimmed; not empty).
    #[schema(min_length = 1, max_length = 4000)]
    pub objective: String,
    /// A phone number in international format: `+` and the digits, with
    /// spaces, dashes, dots or brackets between them (the pattern), and
    /// possible in its country (a known country code, a length used there,
    /// which no pattern says); normalised to E.164.
    #[schema(min_length = 1)]
    pub target_contact: String,
    #[schema(min_items = 1, max_items = 50)]
    pub todos: Vec<NewTodo>,
    #[serde(default)]
    pub heartbeat_config: Option<HeartbeatOverrides>,
    /// The contact's IANA time zone ("America/Santiago"); left out, the
    /// zone of the number's country, or `courtesy.default_tz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Quiet hours in the contact's time ("22:00-08:00", or "off"); left
    /// out, `courtesy.quiet_hours`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_hours: Option<String>,
    /// Write to a number on the do-not-contact list anyway, for this reason
    /// (recorded in the conversation and the list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 1000)]
    pub override_opt_out: Option<String>,
    /// Turns, tokens and a deadline; left out, config.json's `budget`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetRequest>,
    /// Facts relay's agent may use but must never write to the contact
    /// (an account's notes, an internal reference). Before any message the
    /// agent writes is sent, relay refuses it if it repeats one (see
    /// docs/conversation-agent.md). Each trimmed, not empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 20)]
    pub private_context: Vec<String>,
    /// Files the agent may send the contact (`send_attachment`), each staged
    /// first with `POST /media`; at most 10.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 10)]
    pub attachments: Vec<super::NewAttachment>,
    /// Start later: the first message waits until this time, then for what
    /// holds any first message (quiet hours, the reach-out lock, the cap).
    /// A time with its offset ("2026-12-01T10:00:00-03:00", "2026-12-01
    /// 10:00 UTC"), a time on the contact's clock, read in their zone
    /// ("2026-12-01 10:00", "tomorrow 10:00", "today 3pm"), or how long
    /// from now ("in 2h"); not past, at most 30 days ahead. The response's
    /// `start` says how it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100)]
    pub start_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CreateInstanceResponse {
    pub id: Uuid,
    /// CREATED, or QUEUED when the contact already has a live conversation.
    pub state: State,
    /// With `start_at`: when the conversation starts, and in which zone the
    /// time was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<super::StartTime>,
}

impl CreateInstanceResponse {
    /// The answer to the request that created `instance`.
    pub fn of(instance: &ConversationInstance) -> CreateInstanceResponse {
        CreateInstanceResponse { id: instance.id, state: instance.state, start: super::StartTime::of(instance) }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageRequest {
    /// Trimmed; not empty. Give this or `file`, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 4096)]
    pub message: Option<String>,
    /// A file to send instead of a message: one staged with `POST /media`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<SendFile>,
}

impl SendMessageRequest {
    /// A text message.
    pub fn text(message: impl Into<String>) -> SendMessageRequest {
        SendMessageRequest { message: Some(message.into()), file: None }
    }
}

/// The file of `relay send --file`: it becomes the conversation's next
/// attachment, and goes to the contact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendFile {
    pub upload_id: Uuid,
    /// The name the contact sees; left out (or nothing left once cleaned:
    /// controls, separators and spaces around go), `a2.pdf` and so on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100)]
    pub name: Option<String>,
    /// Written under the file (at most 1,024 characters; blank: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1024)]
    pub caption: Option<String>,
}

/// Query of `GET /instances`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only instances in these states, comma-separated: state names (e.g.
    /// `WAITING_FOR_REPLY,PAUSED`; any case, `-` for `_` is taken too) and
    /// `terminal` (COMPLETED, ABANDONED, FAILED).
    #[param(value_type = Option<String>, example = "NEEDS_HUMAN_INTERVENTION,PAUSED")]
    pub state: Option<String>,
    /// Only instances for this contact (a phone number in international
    /// format, as `target_contact` takes it; compared as E.164).
    pub contact: Option<String>,
    /// How many instances a page holds: 1 to 1000, 100 by default.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Where the page starts: the `cursor` of the previous page's `Link:
    /// <...>; rel="next"` header. Pages are newest first.
    pub cursor: Option<String>,
}

/// Query of `GET /instances/{id}/transcript`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TranscriptQuery {
    /// How many messages a page holds: 1 to 1000, 100 by default.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Where the page starts: the `cursor` of the previous page's `Link:
    /// <...>; rel="next"` header (a message's id). Pages are oldest first.
    pub cursor: Option<String>,
}

/// Query of `GET /instances/{id}/wait`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// What to wait for, comma-separated: state names (`COMPLETED,PAUSED`),
    /// `terminal` (any of COMPLETED, ABANDONED, FAILED) or `change` (any
    /// change after the request arrives). Default: `terminal,NEEDS_HUMAN_INTERVENTION`,
    /// i.e. until the conversation ends or needs you.
    pub until: Option<String>,
    /// How long to wait at most, in milliseconds (default 50,000; at most 3,600,000).
    #[param(maximum = 3_600_000)]
    pub timeout_ms: Option<u64>,
}

/// `GET /instances/{id}/wait`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WaitResponse {
    /// True when the conversation reached what was waited for; false when
    /// the wait timed out first.
    pub reached: bool,
    /// The conversation as it is now.
    pub instance: ConversationInstance,
}

/// `POST /instances/{id}/answer`: the operator answers the agent's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// Trimmed; not empty.
    #[schema(min_length = 1, max_length = 1000)]
    pub answer: String,
}
