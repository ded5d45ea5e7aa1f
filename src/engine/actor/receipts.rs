//! The actor's side of what became of a message relay sent: each piece of
//! news written down ([`conversation::message_status`]), a send awaited on
//! the contact's phone, and the delivery timeout.

use uuid::Uuid;

use super::Actor;
use crate::api::TranscriptMessage;
use crate::channel::SentUpdate;
use crate::engine::conversation;
use crate::engine::delivery::status_event;

impl Actor {
    /// News of a message this actor's conversation sent, written down before
    /// this returns.
    pub(super) fn sent_update(&mut self, instance: Uuid, message: Uuid, update: SentUpdate) {
        // Here, not where the update arrives: one that came before its send
        // was recorded reaches only this.
        if matches!(update, SentUpdate::ReachOutLocked(_)) {
            self.first_message_refused(instance);
        }
        self.shared.learn_from(&self.contact, &update);
        let next = match self.shared.apply_sent_update(instance, message, &update) {
            Ok(Some(next)) => next,
            Ok(None) => return,
            Err(error) => {
                tracing::error!(%instance, %error, "cannot record what became of a sent message");
                return;
            }
        };
        if let Ok(index) = self.index(instance) {
            let step = conversation::message_status(&self.convs[index], &next, crate::clock::now());
            if let Err(error) = self.run_step(instance, step) {
                tracing::error!(%instance, %error, "cannot record a delivery");
            }
        }
        self.shared.emit(instance, status_event(&next, false));
    }

    /// The channel took `message`: until a device of the contact has it,
    /// follow-ups wait, and the timeout runs.
    pub(super) fn await_delivery(&mut self, message: &TranscriptMessage) {
        let id = message.instance_id;
        let Ok(index) = self.index(id) else { return };
        let timeout = self.shared.settings.delivery_timeout;
        let step = conversation::awaiting_delivery(&self.convs[index], message.id, timeout, crate::clock::now());
        if let Err(error) = self.run_step(id, step) {
            tracing::error!(instance = %id, %error, "cannot record a message awaiting delivery");
        }
    }

    /// `delivery.timeout` passed for conversation `id`'s latest message
    /// ([`conversation::delivery_overdue`]); its status event says so.
    pub(super) fn delivery_due(&mut self, id: Uuid) {
        let Ok(index) = self.index(id) else { return };
        let words = crate::duration::format(self.shared.settings.delivery_timeout);
        let Some(step) = conversation::delivery_overdue(&self.convs[index], &words, crate::clock::now()) else {
            return;
        };
        tracing::warn!(instance = %id, "a message was not delivered within delivery.timeout");
        let message_id = self.convs[index].awaiting_delivery.as_ref().map(|a| a.message_id);
        let result =
            step.map_err(|source| super::transitions::refused(id, source)).and_then(|step| self.run_step(id, step));
        if let Err(error) = result {
            tracing::error!(instance = %id, %error, "cannot record an undelivered message");
        }
        let transcript = self.shared.store.read_transcript(id).unwrap_or_default();
        if let Some(message) = transcript.iter().find(|m| Some(m.id) == message_id) {
            self.shared.emit(id, status_event(message, true));
        }
    }
}
