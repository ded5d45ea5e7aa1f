//! What becomes of whatsapp-rust's events: a contact's message goes to the
//! engine once (then is marked read, if on arrival), with a way to fetch its
//! file; a server ack refusing a message relay sent, or a receipt, goes to
//! the engine as news of it; a connection or a new push name may make the
//! device say it is unavailable.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use whatsapp_rust::prelude::*;

use super::inbound::{self, Incoming, MediaRef, Routed, Sender};
use super::inbox::Inbox;
use super::seen::SeenId;
use super::{Link, jid};
use crate::api::SendStatus;
use crate::channel::catch_up::CatchUp;
use crate::channel::{InboundAct, InboundMessage, InboundOutcome, InboundSink, MessageRef, SentUpdate};
use crate::config::{Presence, ReadReceipts};
use crate::media::intake::{Fetch, InboundMedia};

/// What becomes of whatsapp-rust's events: incoming messages (then marked
/// read, if on arrival), and what is learned of messages relay sent.
pub(super) struct Arrivals {
    pub(super) link: Arc<dyn Link>,
    pub(super) read_receipts: ReadReceipts,
    pub(super) presence: Presence,
    /// The messages kept and taken (none: every message is new).
    pub(super) inbox: OnceLock<Arc<Inbox>>,
    /// WhatsApp may still hold messages that came while relay was away:
    /// from the start until its offline queue is handed over.
    pub(super) catch_up: Arc<CatchUp>,
}

impl Arrivals {
    pub(super) async fn handle(&self, inbound: &Arc<dyn InboundSink>, event: &Event) {
        let sink = inbound.as_ref();
        self.keep_in_touch(event);
        if let Some((caller, call_id)) = super::acts::call_from(event) {
            return self.called(sink, &caller, call_id).await;
        }
        match event {
            Event::Messages(batch) => {
                for message in batch.messages.iter() {
                    let incoming = match inbound::route(&message.message, &message.info) {
                        Routed::Take(incoming) => incoming,
                        Routed::Ignore(why) => {
                            tracing::debug!(why, "incoming WhatsApp message ignored");
                            continue;
                        }
                    };
                    let source = &message.info.source;
                    let key = SeenId::of(&source.chat, &source.sender, &message.info.id);
                    self.hand_on(sink, key, incoming).await;
                }
            }
            Event::Connected(_) => {
                // whatsapp-rust announced "available" just before `Connected`
                // (docs/whatsapp.md, "Presence").
                if self.presence == Presence::Quiet {
                    self.link.set_unavailable().await;
                }
                self.hand_on_kept(sink, true).await;
                // whatsapp-rust says `Connected` once the offline queue is in.
                self.caught_up(sink);
            }
            Event::OfflineSyncPreview(preview) if preview.messages > 0 => {
                tracing::info!(messages = preview.messages, "WhatsApp is handing over what came while relay was away");
                self.catch_up.start(inbound.clone(), crate::channel::catch_up::BOUND);
            }
            Event::OfflineSyncCompleted(_) => self.caught_up(sink),
            // It announces "available" again after a new push name, on a
            // task of its own started after this event: let it go first.
            Event::SelfPushNameUpdated(_) if self.presence == Presence::Quiet => {
                let link = self.link.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(AFTER_PUSH_NAME).await;
                    link.set_unavailable().await;
                });
            }
            _ => handle_update(sink, event).await,
        }
    }

    /// Hands a message to the engine unless it took it already; `false` if
    /// its sender matches no phone number.
    async fn hand_on(&self, sink: &dyn InboundSink, key: SeenId, incoming: Incoming) -> bool {
        let inbox = self.inbox.get();
        if inbox.is_some_and(|inbox| inbox.is_taken(&key)) {
            tracing::info!(id = %key.id, "a WhatsApp message delivered again; taken already");
            return true;
        }
        let Some(inbound) = message_of(&self.link, incoming).await else {
            tracing::warn!(sender = %key.sender, "a WhatsApp message from a LID relay cannot match to a phone number");
            return false;
        };
        // The operator's own message is not the contact's to mark read.
        let reference = inbound.reference.clone().filter(|_| !inbound.by_operator);
        let delivery = sink.deliver(inbound).await;
        // Not written down: it stays kept, and a repeat has its chance.
        if !matches!(delivery, InboundOutcome::NotRecorded(_))
            && let Some(inbox) = inbox
        {
            inbox.taken(key);
        }
        if let (InboundOutcome::Delivered(_), Some(reference)) = (delivery, reference) {
            self.arrived(reference);
        }
        true
    }

    /// Hands the engine the kept messages it never took, oldest first, then
    /// compacts the inbox. `connected`: the session can look LIDs up, so a
    /// sender still unmatched is dropped, as it would be live.
    pub(super) async fn hand_on_kept(&self, sink: &dyn InboundSink, connected: bool) {
        let Some(inbox) = self.inbox.get() else { return };
        let waiting = inbox.waiting();
        if !waiting.is_empty() {
            tracing::info!(count = waiting.len(), "handing on WhatsApp messages kept before the engine took them");
        }
        for kept in waiting {
            let key = kept.key.clone();
            let matched = match kept.incoming() {
                Ok(incoming) => self.hand_on(sink, key.clone(), incoming).await,
                Err(error) => {
                    tracing::warn!(%error, "a kept WhatsApp message cannot be read back; dropped");
                    inbox.forget(&key);
                    continue;
                }
            };
            if !matched && connected {
                inbox.forget(&key);
            }
        }
        inbox.compact();
    }

    /// Where a gap in touch with WhatsApp begins: the last live event before it.
    fn keep_in_touch(&self, event: &Event) {
        let live = matches!(event, Event::Messages(_) | Event::Receipt(_) | Event::ServerAck(_));
        if live && !self.catch_up.running() {
            self.catch_up.heard();
        }
    }

    /// The offline queue is in: held follow-ups and first messages go on.
    fn caught_up(&self, sink: &dyn InboundSink) {
        if self.catch_up.finish() {
            tracing::info!("WhatsApp handed over what came while relay was away");
            sink.channel_changed();
        }
    }

    /// A contact called: relay never answers (the operator's phone rings as
    /// usual), but their conversation notes it, and the agent is told.
    async fn called(&self, sink: &dyn InboundSink, caller: &Jid, call_id: String) {
        let contact = match jid::contact_of(caller) {
            Some(contact) => Some(contact),
            None if caller.is_lid() => {
                self.link.phone_of_lid(&caller.to_non_ad()).await.as_deref().and_then(jid::digits_to_contact)
            }
            None => None,
        };
        let Some(from) = contact else {
            tracing::warn!("a call from a WhatsApp address relay cannot match to a phone number; ignored");
            return;
        };
        let reference = MessageRef { chat: caller.to_non_ad().to_string(), id: call_id };
        let call =
            InboundMessage { reference: Some(reference), act: Some(InboundAct::Call), ..InboundMessage::new(from, "") };
        let _ = sink.deliver(call).await;
    }

    /// A message the conversation took: on arrival, it is marked read a
    /// few seconds later, as a person glancing at the phone would.
    fn arrived(&self, message: MessageRef) {
        if self.read_receipts != ReadReceipts::OnArrival {
            return;
        }
        let Ok(chat) = message.chat.parse::<Jid>() else { return };
        let link = self.link.clone();
        tokio::spawn(async move {
            tokio::time::sleep(read_delay()).await;
            link.mark_read(&chat, &[message.id]).await;
        });
    }
}

/// How long after a new push name relay says "unavailable" (whatsapp-rust's
/// own "available" goes out on a task it starts at that moment).
const AFTER_PUSH_NAME: Duration = Duration::from_secs(3);

/// Between 1 and 4 seconds, at random.
fn read_delay() -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    Duration::from_millis(1_000 + random % 3_001)
}

/// What the engine learns of a message relay sent: a server ack refusing
/// it, or a receipt.
async fn handle_update(sink: &dyn InboundSink, event: &Event) {
    match event {
        Event::ServerAck(ack) => {
            if let Some(code) = &ack.error
                && ack.class.as_deref().is_none_or(|c| c == "message")
            {
                let update = match code.as_str() {
                    // The reach-out lock: the engine holds every first contact.
                    "463" => SentUpdate::ReachOutLocked(nack_reason(code)),
                    _ => SentUpdate::Refused(nack_reason(code)),
                };
                sink.sent_update(ack.id.clone(), update).await;
            }
        }
        Event::Receipt(receipt) => {
            if let Some(status) = receipt_status(&receipt.r#type) {
                for id in &receipt.message_ids {
                    sink.sent_update(id.clone(), SentUpdate::Receipt { status, at: receipt.timestamp }).await;
                }
            }
        }
        _ => {}
    }
}

/// What a receipt says of a message relay sent, if anything. `Inactive` is
/// a delivery to a device that is not in use right now; `Sent` is what
/// whatsapp-rust makes of a delivery the contact's device could not take
/// (not a delivery); the `*Self`, `Sender`, `PeerMsg` and history kinds come
/// from the operator's own devices, and retries are whatsapp-rust's own
/// business (it sends again by itself).
fn receipt_status(kind: &whatsapp_rust::wacore::types::presence::ReceiptType) -> Option<SendStatus> {
    use whatsapp_rust::wacore::types::presence::ReceiptType;
    match kind {
        ReceiptType::Delivered | ReceiptType::Inactive => Some(SendStatus::Delivered),
        ReceiptType::Read => Some(SendStatus::Read),
        ReceiptType::Played => Some(SendStatus::Played),
        _ => None,
    }
}

/// The engine's message for `incoming`, or `None` if its sender matches no
/// phone number. Its file is not fetched here: the engine calls `fetch` later.
async fn message_of(link: &Arc<dyn Link>, incoming: Incoming) -> Option<InboundMessage> {
    let from = match incoming.sender {
        Sender::Phone(contact) => contact,
        Sender::Lid(lid) => link.phone_of_lid(&lid).await.as_deref().and_then(jid::digits_to_contact)?,
    };
    let reference = MessageRef { chat: incoming.chat.to_string(), id: incoming.id };
    let media = incoming.media.map(|media| {
        let inbound::Media { kind, declared, source } = *media;
        InboundMedia {
            kind,
            declared_mime: declared.mime,
            declared_bytes: declared.bytes,
            declared_sha256: declared.sha256,
            seconds: declared.seconds,
            file_name: declared.file_name,
            caption: declared.caption,
            fetch: fetch(link.clone(), source),
        }
    });
    let (by_operator, act, written_at) = (incoming.by_operator, incoming.act, incoming.written_at);
    Some(InboundMessage { from, text: incoming.text, reference: Some(reference), media, by_operator, act, written_at })
}

/// How the engine fetches `media`: through the link, each call a download
/// of its own (a retry downloads again).
fn fetch(link: Arc<dyn Link>, media: MediaRef) -> Fetch {
    Arc::new(move |max_bytes| {
        let (link, media) = (link.clone(), media.clone());
        Box::pin(async move { link.download(&media, max_bytes).await })
    })
}

/// WhatsApp's refusal codes, in words where they are known.
fn nack_reason(code: &str) -> String {
    let meaning = match code {
        "463" => "the contact has not messaged this number and WhatsApp limits first contact",
        "479" => "WhatsApp refused the message",
        "421" => "the contact's devices could not be reached",
        _ => "refused by WhatsApp",
    };
    format!("{meaning} (error {code})")
}
