//! The event log: what happened, in order, across all conversations.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{Question, Role, SendStatus, TodoStatus};
use crate::fsm::State;

/// One event of the event log (`GET /events`, `relay events`, webhooks).
/// `seq` increases by one with every event, across all conversations, and
/// survives restarts: resume with `after=<last seq seen>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ConversationEvent {
    pub seq: u64,
    pub at: DateTime<Utc>,
    pub instance_id: Uuid,
    #[serde(flatten)]
    pub data: EventData,
}

/// What happened. The contact's own words are only ever in
/// `untrusted_contact_text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventData {
    /// A conversation was created (CREATED or QUEUED).
    Created { state: State, target_contact: String },
    /// The conversation moved from one state to another.
    Transition {
        from: State,
        to: State,
        /// The event that moved it (`heartbeat_fires`, `pause`, ...).
        trigger: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The contact wrote.
    MessageIn { message_id: Uuid, untrusted_contact_text: String },
    /// relay wrote to the contact (the agent, or the operator with `relay send`),
    /// once the channel answered: `sent` or `failed`.
    MessageOut {
        message_id: Uuid,
        role: Role,
        text: String,
        send_status: SendStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery_error: Option<String>,
    },
    /// What became of a message relay sent, after the channel took it: a
    /// receipt from the contact's phone (`delivered`, `read`, `played`), a
    /// late refusal (`failed`), or `overdue`: not delivered within
    /// `delivery.timeout`.
    MessageStatus {
        message_id: Uuid,
        send_status: SendStatus,
        at: DateTime<Utc>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        overdue: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery_error: Option<String>,
    },
    /// The agent updated a todo.
    Todo {
        todo_id: String,
        status: TodoStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
    },
    /// The agent asked the operator something.
    Question { question: Question },
    /// The operator answered it.
    Answer { question_id: String, answer: String },
}

impl EventData {
    /// The name of the event's type, as in `type` and `--events` filters.
    pub fn kind(&self) -> &'static str {
        match self {
            EventData::Created { .. } => "created",
            EventData::Transition { .. } => "transition",
            EventData::MessageIn { .. } => "message_in",
            EventData::MessageOut { .. } => "message_out",
            EventData::MessageStatus { .. } => "message_status",
            EventData::Todo { .. } => "todo",
            EventData::Question { .. } => "question",
            EventData::Answer { .. } => "answer",
        }
    }

    pub const KINDS: [&'static str; 8] =
        ["created", "transition", "message_in", "message_out", "message_status", "todo", "question", "answer"];
}

/// Query of `GET /events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Only events after this sequence number (default 0: from the start).
    /// For Server-Sent Events, a `Last-Event-ID` header does the same.
    pub after: Option<u64>,
    /// Only the events of this conversation (id or unique prefix).
    pub instance: Option<String>,
    /// Keep the stream open and send new events as they happen (default
    /// false: send what is stored, then end).
    pub follow: Option<bool>,
}
