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
    /// The contact wrote. A photo, voice note or file has `media` as it is
    /// when it comes (`pending`); a `media` event follows once it is in.
    MessageIn {
        message_id: Uuid,
        untrusted_contact_text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media: Option<Box<super::MediaInfo>>,
        /// A reaction, reply, edit, deletion or call, and the message it acts on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        act: Option<Box<super::ContactAct>>,
    },
    /// A contact's file changed: fetched and kept (`stored`, with the
    /// transcript of a voice note), not fetched (`failed`, `too_large`), or
    /// removed after `media.keep` (`pruned`). The message now reads
    /// `untrusted_contact_text`.
    Media { message_id: Uuid, untrusted_contact_text: String, media: Box<super::MediaInfo> },
    /// relay wrote to the contact (the agent, or the operator with `relay send`),
    /// once the channel answered: `sent` or `failed`. Or the operator wrote
    /// to them on their own WhatsApp (`outside_relay`: the phone, WhatsApp
    /// Desktop), and the conversation is theirs until resumed.
    MessageOut {
        message_id: Uuid,
        role: Role,
        text: String,
        send_status: SendStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery_error: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        outside_relay: bool,
    },
    /// What became of a message relay sent, after the channel took it: a
    /// receipt from the contact's phone (`delivered`, `read`, `played`), a
    /// late refusal (`failed`), or `overdue`: not delivered within
    /// `delivery.timeout`.
    MessageStatus {
        message_id: Uuid,
        send_status: SendStatus,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        overdue: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery_error: Option<String>,
    },
    /// The agent updated a todo.
    /// The todo as it now is: its typed value, how that was established
    /// (`check`), and the evidence it rests on (`changed` when the contact
    /// later edited or deleted it).
    Todo {
        todo_id: String,
        status: TodoStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(value_type = Option<serde_json::Value>)]
        value: Option<serde_json::Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        check: Option<super::ValueCheck>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        evidence: Vec<super::Evidence>,
    },
    /// The agent asked the operator something.
    Question { question: Question },
    /// The operator answered it.
    Answer { question_id: String, answer: String },
    /// relay hit an internal error (a bug) while handling the conversation
    /// and restored it from disk; `reason` says what comes next (it goes on,
    /// or, the second time, a person is asked).
    Recovered { reason: String },
}

impl EventData {
    /// The `todo` event of `todo` as it now is.
    pub fn todo(todo: &super::TodoItem) -> EventData {
        EventData::Todo {
            todo_id: todo.id.clone(),
            status: todo.status,
            answer: todo.answer.clone(),
            value: todo.value.clone(),
            check: todo.check,
            evidence: todo.evidence.clone(),
        }
    }

    /// The name of the event's type, as in `type` and `--events` filters.
    pub fn kind(&self) -> &'static str {
        match self {
            EventData::Created { .. } => "created",
            EventData::Transition { .. } => "transition",
            EventData::MessageIn { .. } => "message_in",
            EventData::Media { .. } => "media",
            EventData::MessageOut { .. } => "message_out",
            EventData::MessageStatus { .. } => "message_status",
            EventData::Todo { .. } => "todo",
            EventData::Question { .. } => "question",
            EventData::Answer { .. } => "answer",
            EventData::Recovered { .. } => "recovered",
        }
    }

    pub const KINDS: [&'static str; 10] = [
        "created",
        "transition",
        "message_in",
        "media",
        "message_out",
        "message_status",
        "todo",
        "question",
        "answer",
        "recovered",
    ];
}

/// Query of `GET /events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An event is its envelope (`seq`, `at`, `instance_id`) and its data,
    /// flattened into one object: a data field named like an envelope field
    /// makes the log unreadable. Every kind goes there and back.
    #[test]
    fn every_kind_of_event_reads_back_as_written() {
        let id = Uuid::nil();
        let question = Question {
            id: "q1".into(),
            reason: "r".into(),
            question: None,
            asked_at: crate::clock::now(),
            answer: None,
            answered_at: None,
        };
        let data = [
            EventData::Created { state: State::Created, target_contact: "+56912345678".into() },
            EventData::Transition { from: State::Created, to: State::Active, trigger: "t".into(), reason: None },
            EventData::MessageIn { message_id: id, untrusted_contact_text: "hi".into(), media: None, act: None },
            EventData::Media {
                message_id: id,
                untrusted_contact_text: "[photo m1, not shown to you] the meter".into(),
                media: Box::new(crate::api::MediaInfo::new(
                    crate::api::MediaKind::Photo,
                    crate::api::MediaStatus::Stored,
                    "m1",
                )),
            },
            EventData::MessageOut {
                message_id: id,
                role: Role::Agent,
                text: "hi".into(),
                send_status: SendStatus::Sent,
                delivery_error: None,
                outside_relay: false,
            },
            EventData::MessageStatus {
                message_id: id,
                send_status: SendStatus::Failed,
                overdue: true,
                delivery_error: Some("463".into()),
            },
            EventData::Todo {
                todo_id: "1".into(),
                status: TodoStatus::Completed,
                answer: Some("Friday".into()),
                value: None,
                check: None,
                evidence: Vec::new(),
            },
            EventData::Question { question },
            EventData::Answer { question_id: "q1".into(), answer: "yes".into() },
            EventData::Recovered { reason: "restored from disk".into() },
        ];
        let kinds: Vec<&str> = data.iter().map(EventData::kind).collect();
        assert_eq!(kinds, EventData::KINDS, "one of each kind");
        for data in data {
            let event = ConversationEvent { seq: 7, at: crate::clock::now(), instance_id: id, data };
            let line = serde_json::to_string(&event).unwrap();
            assert_eq!(serde_json::from_str::<ConversationEvent>(&line).unwrap(), event, "{line}");
        }
    }
}
