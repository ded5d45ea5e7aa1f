//! The messages of a conversation (`transcripts/<id>.jsonl`), and where
//! each message relay sends stands.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Written by the conversation agent.
    Agent,
    /// Written by the contact.
    Contact,
    /// Written by relay itself (notes on what happened).
    System,
    /// Written by the operator with `relay send`.
    Manual,
}

/// Where a message relay sends stands. It is written `pending` before the
/// channel gets the message and rewritten (same id, a later line) once the
/// channel answers, so a crash in between is never mistaken for a send that
/// did not happen, nor repeated blindly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendStatus {
    /// Handed to the channel; its answer is not in yet.
    Pending,
    /// The channel took it.
    Sent,
    /// relay stopped (a crash, a kill) while the channel had it: it may or
    /// may not have reached the contact. Never sent again by relay itself.
    Unconfirmed,
    /// Not sent, or refused by the channel later; `delivery_error` says why.
    Failed,
}

/// One line of `transcripts/<id>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TranscriptMessage {
    pub id: Uuid,
    pub instance_id: Uuid,
    pub role: Role,
    pub content: String,
    pub timestamp: DateTime<Utc>,
    /// For messages relay sends (agent, manual): where the send stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_status: Option<SendStatus>,
    /// The channel's id for the message (WhatsApp's message id), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_message_id: Option<String>,
    /// Why a message relay sends failed: the channel could not send it, or
    /// refused it after taking it (e.g. WhatsApp's server answered with an
    /// error code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_error: Option<String>,
}

/// A message from a contact with no live conversation: kept, not answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UnroutedMessage {
    pub from: String,
    pub text: String,
    pub timestamp: DateTime<Utc>,
}

impl TranscriptMessage {
    /// A message written now.
    pub fn new(instance_id: Uuid, role: Role, content: String) -> TranscriptMessage {
        TranscriptMessage {
            id: Uuid::new_v4(),
            instance_id,
            role,
            content,
            timestamp: Utc::now(),
            send_status: None,
            channel_message_id: None,
            delivery_error: None,
        }
    }

    /// A message relay is about to hand to the channel.
    pub fn outgoing(instance_id: Uuid, role: Role, content: String) -> TranscriptMessage {
        TranscriptMessage {
            send_status: Some(SendStatus::Pending),
            ..TranscriptMessage::new(instance_id, role, content)
        }
    }
}
