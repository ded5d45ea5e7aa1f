//! The home's record of a conversation (`instances/<id>.json`), which is
//! also the engine's state of it in memory: the instance a caller sees,
//! and relay's own bookkeeping beside it, which stays out of the API. The
//! file is flat: the instance's fields and these side by side, as every
//! version of relay has written it.

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};

use crate::api::{ConversationInstance, HeartbeatConfig, TodoItem};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationRecord {
    /// What a caller sees (`GET /instances/{id}`).
    #[serde(flatten)]
    pub instance: ConversationInstance,
    /// The line saying that an automated assistant writes
    /// (`courtesy.disclosure`), put before the agent's first message;
    /// null once sent, or when disclosure is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_disclosure: Option<String>,
    /// Time that was left on the heartbeat when the conversation was paused.
    #[serde(default)]
    pub paused_heartbeat_remaining_ms: Option<u64>,
    /// A delay the agent chose with `schedule_next_heartbeat`, used for the
    /// next wait instead of `heartbeat_config.interval_ms`.
    #[serde(default)]
    pub scheduled_heartbeat_ms: Option<u64>,
    /// Contact messages that arrived since the agent (or the operator) last
    /// handled the conversation; a turn starts for them as soon as it may.
    #[serde(default)]
    pub unanswered_contact_messages: u32,
    /// Photos, voice notes and files the contact sent in this conversation:
    /// the next is `m<n+1>` (its `media.reference`).
    #[serde(default)]
    pub media_received: u32,
}

impl ConversationRecord {
    /// A new conversation, CREATED now, with its creation in the history.
    pub fn new(
        objective: String,
        target_contact: String,
        todos: Vec<TodoItem>,
        heartbeat_config: HeartbeatConfig,
    ) -> Self {
        ConversationRecord::from(ConversationInstance::new(objective, target_contact, todos, heartbeat_config))
    }
}

impl From<ConversationInstance> for ConversationRecord {
    /// An instance with no bookkeeping yet.
    fn from(instance: ConversationInstance) -> Self {
        ConversationRecord {
            instance,
            pending_disclosure: None,
            paused_heartbeat_remaining_ms: None,
            scheduled_heartbeat_ms: None,
            unanswered_contact_messages: 0,
            media_received: 0,
        }
    }
}

/// The record reads as its instance: `record.state` is `record.instance.state`.
impl Deref for ConversationRecord {
    type Target = ConversationInstance;

    fn deref(&self) -> &ConversationInstance {
        &self.instance
    }
}

impl DerefMut for ConversationRecord {
    fn deref_mut(&mut self) -> &mut ConversationInstance {
        &mut self.instance
    }
}
