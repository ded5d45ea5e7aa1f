//! What the channel tells the engine: a contact's message (routed to the
//! contact's actor, or kept as unrouted), news of a sent message (handled in
//! [`super::delivery`]), and a change in whether it can send.

use std::sync::atomic::Ordering;

use super::{Engine, Shared};
use crate::api::UnroutedMessage;
use crate::channel::{InboundMessage, InboundOutcome, InboundSink, SentUpdate};
use crate::util::BoxFuture;

/// The engine as its channel's inbound sink.
pub(super) struct Inbound(pub(super) std::sync::Weak<Shared>);

impl InboundSink for Inbound {
    fn deliver(&self, message: InboundMessage) -> BoxFuture<'_, InboundOutcome> {
        Box::pin(async move {
            match self.0.upgrade() {
                Some(shared) => Engine { shared }.deliver(message).await,
                None => InboundOutcome::NoConversation,
            }
        })
    }

    fn sent_update(&self, message_id: String, update: SentUpdate) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(shared) = self.0.upgrade() {
                shared.sent_update(&message_id, update).await;
            }
        })
    }

    fn channel_changed(&self) {
        if let Some(shared) = self.0.upgrade() {
            shared.wake_all();
        }
    }

    fn reach_out_changed(&self) {
        if let Some(shared) = self.0.upgrade() {
            shared.forget_reach_out();
        }
    }
}

impl Shared {
    /// A message no conversation takes is not answered, but it is kept
    /// where the operator can read it (`unrouted.jsonl`).
    /// A file is not fetched (there is no conversation to keep it in): what
    /// it was and its caption are kept. A message that is only an opt-out
    /// word puts the number on the do-not-contact list all the same (STOP
    /// counts wherever it comes); returns whether it did.
    pub(crate) fn keep_unrouted(&self, message: InboundMessage) -> bool {
        let InboundMessage { from, text, media, .. } = message;
        tracing::info!(contact = %from, "message from a contact with no live conversation; kept in unrouted.jsonl");
        let words = media.as_ref().map_or(text.as_str(), |m| m.caption.as_deref().unwrap_or_default());
        let opts_out = crate::courtesy::is_opt_out(words, &self.settings.courtesy.opt_out_words);
        let text = match media {
            Some(media) => crate::media::label::unrouted(media.kind, media.caption.as_deref()),
            None => text,
        };
        let message = UnroutedMessage { from: from.to_string(), text, timestamp: crate::clock::now() };
        match self.store.append_unrouted(&message) {
            Ok(()) => {
                self.unrouted.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => tracing::error!(%error, "cannot keep an unrouted message"),
        }
        if opts_out {
            self.opted_out_between(&from);
        }
        opts_out
    }

    /// `contact` wrote an opt-out word when no conversation was live: the
    /// number goes on the do-not-contact list.
    fn opted_out_between(&self, contact: &crate::contact::Contact) {
        let reason = "the contact's message was an opt-out word (no conversation was live)".to_string();
        let entry =
            crate::courtesy::OptOut::new(contact.to_string(), crate::courtesy::OptOutSource::Contact, reason, None);
        match self.opt_outs.add(entry) {
            Ok(_) => tracing::info!(contact = %contact, "the number is on the do-not-contact list"),
            Err(error) => tracing::error!(contact = %contact, %error, "cannot record an opt-out"),
        }
    }
}
