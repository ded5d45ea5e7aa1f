//! Did the person get it? What became of each message relay sent after the
//! channel took it: receipts from the contact's phone move it forward
//! (`sent` → `delivered` → `read` → `played`), a late refusal fails it, and
//! a message no device has received within `delivery.timeout` is flagged.
//!
//! - [`SentIndex`]: the channel's ids of recent messages, to find the
//!   message a receipt names. It is kept in `sent-ids.jsonl` too, so
//!   receipts that come after a restart (a phone that was off for a day)
//!   still find theirs. A receipt that comes before relay has recorded the
//!   send (the sandbox delivers at once) is held until it has.
//! - [`updated`]: the one rule for what an update does to a message.
//! - [`note`]: what it does to the conversation (`first_delivered_at`,
//!   `last_read_at`, `awaiting_delivery`), while it is live: an ended one
//!   never changes, and its receipts go to its transcript and the events.
//! - What the timeout does (a conversation whose messages never arrived
//!   goes to a person; follow-ups wait for delivery) is
//!   [`super::conversation::delivery_overdue`].

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Shared;
use super::actor::Msg;
use crate::api::{EventData, SendStatus, TranscriptMessage};
use crate::channel::SentUpdate;
use crate::contact::Contact;
use crate::store::ConversationRecord;
use crate::store::{Journal, Store, StoreError};

/// One line of `sent-ids.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SentId {
    channel_message_id: String,
    instance_id: Uuid,
    message_id: Uuid,
}

/// The channel ids of the last [`SentIndex::CAPACITY`] messages sent, and
/// updates that came before their send was recorded.
pub(super) struct SentIndex {
    journal: Journal,
    by_channel_id: HashMap<String, (Uuid, Uuid)>,
    order: VecDeque<String>,
    early: VecDeque<(String, SentUpdate)>,
}

impl SentIndex {
    /// Receipts come within seconds, or when a phone comes back online:
    /// this covers thousands of messages.
    const CAPACITY: usize = 4096;
    /// Updates held for sends not recorded yet (they are, within moments).
    const EARLY: usize = 256;

    /// Whether relay sent the message with this channel id.
    pub(super) fn holds(&self, channel_id: &str) -> bool {
        self.by_channel_id.contains_key(channel_id)
    }

    /// The index as `sent-ids.jsonl` left it, compacted if it has grown.
    pub(super) fn load(store: &Store) -> Result<SentIndex, StoreError> {
        let journal = store.sent_ids();
        let lines: Vec<SentId> = journal.load()?;
        let keep = &lines[lines.len().saturating_sub(Self::CAPACITY)..];
        if lines.len() > 2 * Self::CAPACITY {
            journal.rewrite(keep)?;
        }
        let mut index =
            SentIndex { journal, by_channel_id: HashMap::new(), order: VecDeque::new(), early: VecDeque::new() };
        for line in keep {
            index.remember(&line.channel_message_id, line.instance_id, line.message_id);
        }
        Ok(index)
    }

    fn remember(&mut self, channel_id: &str, instance: Uuid, message: Uuid) {
        if self.order.len() == Self::CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.by_channel_id.remove(&oldest);
        }
        self.order.push_back(channel_id.to_string());
        self.by_channel_id.insert(channel_id.to_string(), (instance, message));
    }

    /// Records a send the channel took (durably, so a receipt after a
    /// restart finds it), and hands back the updates that came first.
    fn insert(&mut self, channel_id: &str, instance: Uuid, message: Uuid) -> Vec<SentUpdate> {
        if !self.by_channel_id.contains_key(channel_id) {
            let line =
                SentId { channel_message_id: channel_id.to_string(), instance_id: instance, message_id: message };
            if let Err(error) = self.journal.append(&line) {
                // Only receipts after a restart are lost: the message is sent.
                tracing::warn!(%instance, %error, "cannot keep a sent message's channel id");
            }
            self.remember(channel_id, instance, message);
        }
        let (early, later): (Vec<_>, Vec<_>) = self.early.drain(..).partition(|(id, _)| id == channel_id);
        self.early = later.into();
        early.into_iter().map(|(_, update)| update).collect()
    }

    fn hold(&mut self, channel_id: String, update: SentUpdate) {
        if self.early.len() == Self::EARLY {
            self.early.pop_front();
        }
        self.early.push_back((channel_id, update));
    }
}

/// `message` after `update`, if the update changes it: a receipt moves it
/// forward only (see [`SendStatus::after_receipt`]) and stamps when it
/// first arrived and was first read; a refusal fails a message no device
/// has received.
pub(crate) fn updated(message: &TranscriptMessage, update: &SentUpdate) -> Option<TranscriptMessage> {
    let status = message.send_status?;
    match update {
        SentUpdate::Receipt { status: receipt, at } => {
            let next = status.after_receipt(*receipt)?;
            let mut message = message.clone();
            message.send_status = Some(next);
            message.delivered_at.get_or_insert(*at);
            if matches!(next, SendStatus::Read | SendStatus::Played) {
                message.read_at.get_or_insert(*at);
            }
            Some(message)
        }
        SentUpdate::Refused(error) | SentUpdate::ReachOutLocked(error) => {
            let refusable = matches!(status, SendStatus::Pending | SendStatus::Sent | SendStatus::Unconfirmed);
            refusable.then(|| TranscriptMessage {
                send_status: Some(SendStatus::Failed),
                delivery_error: Some(error.clone()),
                ..message.clone()
            })
        }
    }
}

/// What a message's new status tells about its conversation.
pub(crate) fn note(instance: &mut ConversationRecord, message: &TranscriptMessage) {
    if let Some(at) = message.delivered_at {
        instance.first_delivered_at = Some(instance.first_delivered_at.map_or(at, |first| first.min(at)));
        if instance.awaiting_delivery.as_ref().is_some_and(|a| a.message_id == message.id) {
            instance.awaiting_delivery = None;
        }
    }
    if let Some(at) = message.read_at {
        instance.last_read_at = Some(instance.last_read_at.map_or(at, |last| last.max(at)));
    }
}

/// The event of a message's new status.
/// (When the phone said so is in the message's `delivered_at` and `read_at`.)
pub(crate) fn status_event(message: &TranscriptMessage, overdue: bool) -> EventData {
    EventData::MessageStatus {
        message_id: message.id,
        send_status: message.send_status.unwrap_or(SendStatus::Sent),
        overdue,
        delivery_error: message.delivery_error.clone(),
    }
}

impl Shared {
    /// Remembers a send the channel took, and applies what came for it
    /// before (called by its actor, which owns the conversation).
    pub(crate) fn remember_sent(&self, channel_id: &str, instance: Uuid, message: Uuid) -> Vec<SentUpdate> {
        self.sent.lock().expect("sent lock").insert(channel_id, instance, message)
    }

    /// News of a message from the channel: to the conversation's actor; with
    /// no actor (the conversation has ended) it is written here, under the
    /// actor map's lock so none starts meanwhile. Returns once it is on disk
    /// (or found to change nothing), so a channel that answers someone
    /// ("delivered") after this has told the truth, even if relay is killed
    /// the next instant.
    pub(super) async fn sent_update(&self, channel_id: &str, update: SentUpdate) {
        let found = {
            let mut index = self.sent.lock().expect("sent lock");
            let found = index.by_channel_id.get(channel_id).copied();
            if found.is_none() {
                index.hold(channel_id.to_string(), update.clone());
            }
            found
        };
        let Some((instance, message)) = found else {
            tracing::debug!(channel_id, "news of a message relay has not recorded (yet)");
            return;
        };
        let contact = self.read_view(|view| view.get(instance).map(|e| Contact::stored(e.contact())));
        let Some(contact) = contact else { return };
        let recorded = {
            let actors = self.actors.lock().expect("actors lock");
            match actors.get(&contact) {
                Some(handle) => {
                    let (done, recorded) = tokio::sync::oneshot::channel();
                    let _ = handle.tx.send(Box::new(Msg::SentUpdate { instance, message, update, done }));
                    Some(recorded)
                }
                None => {
                    self.learn_from(&contact, &update);
                    if let Err(error) = self.settle_ended(instance, message, &update) {
                        tracing::error!(%instance, %error, "cannot record what became of a sent message");
                    }
                    None
                }
            }
        };
        if let Some(recorded) = recorded {
            // An actor that stops first (shutdown) drops `done`: nothing to wait for.
            let _ = recorded.await;
        }
    }

    /// What an update tells of the contact and the account, whichever
    /// conversation it is for: a receipt comes from the contact's phone (it
    /// has a message: the contact is not new); a 463 is WhatsApp's lock,
    /// which holds every first contact.
    pub(super) fn learn_from(&self, contact: &crate::contact::Contact, update: &SentUpdate) {
        match update {
            SentUpdate::Receipt { .. } => self.reached(contact),
            SentUpdate::ReachOutLocked(_) if self.first_contacts.read(|b| b.is_new(contact.as_str())) => {
                self.reach_out_refused()
            }
            _ => {}
        }
    }

    /// Writes `message` again after `update` (the later line wins), if the
    /// update changes it; returns its new form.
    pub(crate) fn apply_sent_update(
        &self,
        instance: Uuid,
        message: Uuid,
        update: &SentUpdate,
    ) -> Result<Option<TranscriptMessage>, StoreError> {
        let transcript = self.store.read_transcript(instance)?;
        let Some(next) = transcript.iter().find(|m| m.id == message).and_then(|m| updated(m, update)) else {
            return Ok(None);
        };
        self.store.append_message(&next)?;
        if let Some(error) = update.refusal() {
            tracing::warn!(%instance, %error, "the channel refused a sent message");
        }
        Ok(Some(next))
    }

    /// An update for an ended conversation (the contact read the last
    /// message after the conversation completed): no actor owns it. The
    /// transcript and the event log take it; the conversation itself, ended,
    /// stays as it was when it ended.
    fn settle_ended(&self, instance: Uuid, message: Uuid, update: &SentUpdate) -> Result<(), StoreError> {
        if let Some(next) = self.apply_sent_update(instance, message, update)? {
            self.emit(instance, status_event(&next, false));
        }
        Ok(())
    }
}
