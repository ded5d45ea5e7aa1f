//! What the channel tells the engine: a contact's message (routed to the
//! contact's actor, or kept as unrouted), a sent message refused later, and
//! a change in whether it can send.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;

use uuid::Uuid;

use super::actor::Msg;
use super::{Engine, Shared, contact_of};
use crate::api::{SendStatus, TranscriptMessage, UnroutedMessage};
use crate::channel::{Delivery, InboundMessage, InboundSink};
use crate::contact::Contact;
use crate::store::StoreError;
use crate::util::BoxFuture;

/// The engine as its channel's inbound sink.
pub(super) struct Inbound(pub(super) std::sync::Weak<Shared>);

impl InboundSink for Inbound {
    fn deliver(&self, message: InboundMessage) -> BoxFuture<'_, Delivery> {
        Box::pin(async move {
            match self.0.upgrade() {
                Some(shared) => Engine { shared }.deliver(message).await,
                None => Delivery::NoConversation,
            }
        })
    }

    fn delivery_failed(&self, message_id: String, error: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(shared) = self.0.upgrade() {
                shared.delivery_failed(&message_id, error);
            }
        })
    }

    fn channel_changed(&self) {
        if let Some(shared) = self.0.upgrade() {
            for handle in shared.actors.lock().expect("actors lock").values() {
                let _ = handle.tx.send(Msg::ChannelChanged);
            }
        }
    }
}

/// The channel ids of the last [`SentIndex::CAPACITY`] messages sent.
#[derive(Default)]
pub(super) struct SentIndex {
    by_channel_id: HashMap<String, (Uuid, Uuid)>,
    order: VecDeque<String>,
}

impl SentIndex {
    /// WhatsApp answers within seconds; this covers hours of sending.
    const CAPACITY: usize = 4096;

    pub(super) fn insert(&mut self, channel_id: &str, instance: Uuid, message: Uuid) {
        if self.order.len() == Self::CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.by_channel_id.remove(&oldest);
        }
        self.order.push_back(channel_id.to_string());
        self.by_channel_id.insert(channel_id.to_string(), (instance, message));
    }
}

impl Shared {
    /// A message no conversation takes is not answered, but it is kept
    /// where the operator can read it (`unrouted.jsonl`).
    pub(crate) fn keep_unrouted(&self, from: Contact, text: String) {
        tracing::info!(contact = %from, "message from a contact with no live conversation; kept in unrouted.jsonl");
        let message = UnroutedMessage { from: from.to_string(), text, timestamp: chrono::Utc::now() };
        match self.store.append_unrouted(&message) {
            Ok(()) => {
                self.unrouted.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => tracing::error!(%error, "cannot keep an unrouted message"),
        }
    }

    pub(crate) fn remember_sent(&self, channel_id: &str, instance: Uuid, message: Uuid) {
        self.sent.lock().expect("sent lock").insert(channel_id, instance, message);
    }

    /// The channel refused a message it had taken. The conversation's actor
    /// writes that down; with no actor (the conversation has ended) it is
    /// written here, under the actor map's lock so none starts meanwhile.
    fn delivery_failed(&self, channel_id: &str, error: String) {
        let Some((instance, message)) = self.sent.lock().expect("sent lock").by_channel_id.get(channel_id).copied()
        else {
            tracing::warn!(channel_id, %error, "the channel refused a message relay does not know");
            return;
        };
        tracing::warn!(%instance, channel_id, %error, "the channel refused a sent message");
        let Some(contact) = self.snapshot(instance).map(|i| contact_of(&i)) else { return };
        let actors = self.actors.lock().expect("actors lock");
        match actors.get(&contact) {
            Some(handle) => {
                let _ = handle.tx.send(Msg::DeliveryFailed { instance, message, error });
            }
            None => {
                if let Err(e) = self.mark_undelivered(instance, message, error) {
                    tracing::error!(%instance, error = %e, "cannot record a refused message");
                }
            }
        }
    }

    /// Writes the message again, failed with its delivery error (the later line wins).
    pub(crate) fn mark_undelivered(&self, instance: Uuid, message: Uuid, error: String) -> Result<(), StoreError> {
        let transcript = self.store.read_transcript(instance)?;
        match transcript.into_iter().find(|m| m.id == message) {
            Some(sent) => self.store.append_message(&TranscriptMessage {
                send_status: Some(SendStatus::Failed),
                delivery_error: Some(error),
                ..sent
            }),
            None => Ok(()),
        }
    }
}
