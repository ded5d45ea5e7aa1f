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
/// did not happen, nor repeated blindly. Receipts from the contact's phone
/// move it on, forward only: `sent` → `delivered` → `read` → `played`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendStatus {
    /// Handed to the channel; its answer is not in yet.
    Pending,
    /// The channel took it (WhatsApp's server has it); no device of the
    /// contact has said it arrived.
    Sent,
    /// A device of the contact received it.
    Delivered,
    /// The contact opened it.
    Read,
    /// The contact played it (a voice note).
    Played,
    /// relay stopped (a crash, a kill) while the channel had it: it may or
    /// may not have reached the contact. Never sent again by relay itself.
    Unconfirmed,
    /// Not sent, or refused by the channel later; `delivery_error` says why.
    Failed,
}

impl SendStatus {
    /// What a receipt saying `receipt` (`delivered`, `read` or `played`)
    /// makes of a message in this status, if it moves it at all. Receipts
    /// come per device, repeated and out of order (read before delivered):
    /// only a step forward counts. A receipt proves an `unconfirmed` or
    /// `pending` message arrived; nothing revives a `failed` one.
    pub fn after_receipt(self, receipt: SendStatus) -> Option<SendStatus> {
        use SendStatus::*;
        let rank = |status: SendStatus| match status {
            Pending | Unconfirmed | Sent => 0,
            Delivered => 1,
            Read => 2,
            Played => 3,
            Failed => u8::MAX,
        };
        let is_receipt = matches!(receipt, Delivered | Read | Played);
        (is_receipt && self != Failed && rank(receipt) > rank(self)).then_some(receipt)
    }

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            SendStatus::Pending => "pending",
            SendStatus::Sent => "sent",
            SendStatus::Delivered => "delivered",
            SendStatus::Read => "read",
            SendStatus::Played => "played",
            SendStatus::Unconfirmed => "unconfirmed",
            SendStatus::Failed => "failed",
        }
    }
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
    /// When a device of the contact first said it received the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<DateTime<Utc>>,
    /// When the contact first read (or played) it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<DateTime<Utc>>,
    /// The voice note, photo or file the message carries; `content` then
    /// holds its label (what the model reads). Boxed: most messages have
    /// none, and a transcript in memory need not carry its room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<Box<super::MediaInfo>>,
    /// The operator wrote it on their own WhatsApp (the phone, WhatsApp
    /// Desktop), not through relay (`role: manual`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_relay: bool,
    /// What the contact's message did besides writing: reacted to, replied
    /// to, edited or deleted a message of the chat, or called. `content`
    /// holds their own words only (a reaction's emoji, an edit's new text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<Box<ContactAct>>,
    /// The contact later edited or deleted this message: its words are no
    /// longer what they say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<Withdrawal>,
    /// A contact's message that reached relay late (after an absence): when
    /// they wrote it, as WhatsApp says. `timestamp` is when relay got it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at: Option<DateTime<Utc>>,
}

/// What a contact's message did to the chat besides writing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ContactAct {
    pub kind: ActKind,
    /// The chat's message it acts on (this transcript's id), when relay has
    /// it: the message reacted or replied to, edited or deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Uuid>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActKind {
    /// A reaction; the emoji is the message's `content`.
    Reaction,
    /// A reaction taken back.
    ReactionRemoved,
    /// A reply that quotes `message_id`.
    Reply,
    /// `message_id`, edited: `content` is its new text.
    Edit,
    /// `message_id`, deleted for everyone.
    Deletion,
    /// A voice or video call from the contact (relay never answers one:
    /// the operator's phone rings as usual).
    Call,
}

/// How a contact took back one of their messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Withdrawal {
    Edited,
    Deleted,
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
            timestamp: crate::clock::now(),
            send_status: None,
            channel_message_id: None,
            delivery_error: None,
            delivered_at: None,
            read_at: None,
            media: None,
            outside_relay: false,
            act: None,
            withdrawn: None,
            written_at: None,
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::SendStatus::{self, *};

    const ALL: [SendStatus; 7] = [Pending, Sent, Delivered, Read, Played, Unconfirmed, Failed];

    #[test]
    fn every_status_is_on_the_wire_as_its_name() {
        for status in ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), serde_json::json!(status.as_str()));
        }
    }

    proptest! {
        /// Any sequence of receipts, in any order and repeated, leaves a
        /// message at the furthest step any of them reached, never behind it,
        /// and a failed message failed.
        #[test]
        fn receipts_only_move_a_message_forward(
            start in proptest::sample::select(ALL.to_vec()),
            receipts in proptest::collection::vec(proptest::sample::select(ALL.to_vec()), 0..12),
        ) {
            let step = |s: SendStatus| [Delivered, Read, Played].iter().position(|r| *r == s);
            let mut status = start;
            for receipt in &receipts {
                if let Some(next) = status.after_receipt(*receipt) {
                    prop_assert!(step(next) > step(status));
                    status = next;
                }
            }
            let furthest = receipts.iter().filter_map(|r| step(*r)).max();
            match start {
                Failed => prop_assert_eq!(status, Failed),
                _ => prop_assert_eq!(step(status), furthest.max(step(start))),
            }
        }
    }
}
