//! The WhatsApp channel, through whatsapp-rust (one linked device).
//!
//! - [`session`]: the linked device and its connection (pairing, reconnects);
//! - [`state`]: the link's health, as `relay status` shows it;
//! - [`inbound`]: which incoming messages relay takes, their text and media;
//! - [`jid`]: phone numbers and WhatsApp addresses;
//! - [`pacing`]: typing time, gaps and the per-minute cap;
//! - [`qr`]: the pairing QR code in a terminal;
//! - [`seen`]: the contact messages already taken, so a repeat is dropped.
//!
//! This module joins them: sends wait for the connection (bounded), are
//! paced, retried, and recorded with WhatsApp's message id; incoming
//! messages are matched to contacts (LIDs included), handed to the engine
//! once (WhatsApp may deliver one again), with a way to fetch their file
//! that the engine runs later (never here, where events wait in line),
//! and marked read as `whatsapp.read_receipts` says; with a quiet
//! `whatsapp.presence`, the device says it is unavailable after connecting.

pub mod acts;
pub mod inbound;
pub mod jid;
pub mod pacing;
pub mod qr;
pub mod seen;
pub mod session;
pub mod state;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use whatsapp_rust::prelude::*;

use super::{
    Channel, ChannelError, Delivery, InboundAct, InboundMessage, InboundSink, MessageRef, OutgoingMedia, Sent,
    SentUpdate,
};
use crate::api::{ChannelStatus, PairingEvent, SendStatus};
use crate::config::{Presence, ReadReceipts, WhatsappSettings};
use crate::contact::Contact;
use crate::courtesy::ReachOutLock;
use crate::media::intake::{Fetch, FetchError, InboundMedia};
use crate::util::{Backoff, BoxFuture};
use inbound::{MediaRef, Routed, Sender};
use pacing::Pacer;
use session::Session;
use state::LinkState;

const CHANNEL: &str = "whatsapp";

/// What the channel needs from a WhatsApp session: the real one is
/// [`Session`]; tests use a fake.
pub trait Link: Send + Sync + 'static {
    fn state(&self) -> watch::Receiver<LinkState>;
    fn failed_dials(&self) -> u64;
    fn phone(&self) -> Option<String>;
    /// The client version WhatsApp last took ("2.3000.1023456789").
    fn version(&self) -> Option<String> {
        None
    }
    /// A fresh WhatsApp message id (kept across retries, so a retry cannot
    /// deliver twice).
    fn new_message_id(&self) -> Option<String>;
    /// Before the first message to a number: is it on WhatsApp? (Also
    /// learns its LID, so its replies can be matched.) `Err` if unknown.
    fn check_number<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, Result<bool, String>>;
    fn typing<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, ()>;
    /// Sends `message` under `id`; returns the id WhatsApp took it under.
    fn send_message<'a>(
        &'a self,
        to: &'a Jid,
        message: wa::Message,
        id: &'a str,
    ) -> BoxFuture<'a, Result<String, String>>;
    /// Uploads a file (encrypted, to WhatsApp's media servers) and makes the
    /// message that carries it: a photo as an image, anything else as a
    /// document with its name. Needs the connection.
    fn prepare_media<'a>(&'a self, media: &'a OutgoingMedia) -> BoxFuture<'a, Result<wa::Message, String>>;
    fn mark_read<'a>(&'a self, chat: &'a Jid, ids: &'a [String]) -> BoxFuture<'a, ()>;
    /// Downloads and decrypts a contact's file, refusing it once it is
    /// over `max_bytes`.
    fn download<'a>(&'a self, media: &'a MediaRef, max_bytes: u64) -> BoxFuture<'a, Result<Vec<u8>, FetchError>>;
    /// Tells WhatsApp this device is not online (`<presence type="unavailable">`).
    fn set_unavailable(&self) -> BoxFuture<'_, ()>;
    /// The phone number (digits) behind a LID, from the session's map.
    fn phone_of_lid<'a>(&'a self, lid: &'a Jid) -> BoxFuture<'a, Option<String>>;
    /// WhatsApp's reach-out lock on this account, if in force (see
    /// [`Channel::reach_out_lock`]).
    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<ReachOutLock>, String>>;
    fn pair(&self, phone: Option<String>, force: bool) -> mpsc::UnboundedReceiver<PairingEvent>;
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

pub struct WhatsappChannel {
    link: Arc<dyn Link>,
    settings: WhatsappSettings,
    pacer: Mutex<Pacer>,
    /// Numbers already checked this run (see [`Link::check_number`]).
    checked: Mutex<HashSet<String>>,
    sink: OnceLock<Arc<dyn InboundSink>>,
    /// What becomes of whatsapp-rust's events (shared with the event task).
    arrivals: Arc<Arrivals>,
    /// whatsapp-rust's events for this channel, until `attach` takes them.
    events: Mutex<Option<mpsc::UnboundedReceiver<Arc<Event>>>>,
}

impl WhatsappChannel {
    /// The channel of the home's WhatsApp session, until `stop` is
    /// cancelled (see [`Channel::shutdown`]).
    pub fn open(
        home: &crate::home::Home,
        settings: WhatsappSettings,
        stop: tokio_util::sync::CancellationToken,
    ) -> WhatsappChannel {
        let (session, events) = Session::start_with_stop(home.whatsapp_auth_dir(), session::Endpoint::from_env(), stop);
        WhatsappChannel::with_link(session, events, settings).remembering(home.whatsapp_inbound_ids_file())
    }

    /// Keeps the ids of the contact messages taken in `path`, so one
    /// WhatsApp delivers again is dropped, after a restart too.
    pub fn remembering(self, path: std::path::PathBuf) -> WhatsappChannel {
        *self.arrivals.seen.lock().expect("seen lock") = Some(seen::Seen::open(path));
        self
    }

    pub fn with_link(
        link: Arc<dyn Link>,
        events: mpsc::UnboundedReceiver<Arc<Event>>,
        settings: WhatsappSettings,
    ) -> WhatsappChannel {
        let arrivals = Arc::new(Arrivals {
            link: link.clone(),
            read_receipts: settings.read_receipts(),
            presence: settings.presence,
            seen: Mutex::new(None),
        });
        WhatsappChannel {
            arrivals,
            link,
            pacer: Mutex::new(Pacer::new(settings.pacing.clone())),
            settings,
            checked: Mutex::new(HashSet::new()),
            sink: OnceLock::new(),
            events: Mutex::new(Some(events)),
        }
    }

    pub fn pair(&self, phone: Option<String>, force: bool) -> mpsc::UnboundedReceiver<PairingEvent> {
        self.link.pair(phone, force)
    }

    /// Handles one whatsapp-rust event (as the session's event task does).
    pub async fn handle_event(&self, event: &Event) {
        if let Some(sink) = self.sink.get() {
            self.arrivals.handle(sink.as_ref(), event).await;
        }
    }

    /// Sends one message or file: paced, waiting for the connection
    /// (bounded), with retries under one message id. A file is uploaded
    /// once, at the first attempt that has a connection, and that message
    /// is what every later attempt sends.
    async fn deliver(&self, to: &Contact, outgoing: Outgoing<'_>) -> Result<Sent, ChannelError> {
        let mut state = self.link.state();
        let blocked = state.borrow().blocked();
        if let Some(reason) = blocked {
            return Err(unavailable(reason));
        }
        let jid = jid::jid_of(to);

        let settings = &self.settings;
        let connect_deadline = Instant::now() + Duration::from_secs(settings.connect_wait_secs);
        let mut message_id = None;
        let mut prepared: Option<wa::Message> = None;
        let mut slot = None;
        let mut last_error = String::new();
        let mut tried = 0;
        let mut backoff = Backoff::new(Duration::from_millis(settings.retry_backoff_ms), Duration::MAX);
        for attempt in 1..=settings.send_attempts {
            if attempt > 1 {
                tokio::time::sleep(backoff.next_wait()).await;
            }
            let waited = tokio::time::timeout_at(connect_deadline, async {
                state.wait_for(|s| s.is_connected() || s.blocked().is_some()).await.map(|s| s.blocked())
            })
            .await;
            match waited {
                Err(_) => {
                    last_error = format!(
                        "WhatsApp was not connected for {}",
                        crate::duration::format(Duration::from_secs(settings.connect_wait_secs))
                    );
                    break;
                }
                Ok(Err(_)) => return Err(unavailable("the WhatsApp session has stopped".into())),
                Ok(Ok(Some(reason))) => return Err(unavailable(reason)),
                Ok(Ok(None)) => {}
            }
            self.check_once(&jid, to).await?;
            tried = attempt;
            let Some(id) = message_id.clone().or_else(|| self.link.new_message_id()) else {
                last_error = "the WhatsApp session is not ready".into();
                continue;
            };
            message_id = Some(id.clone());
            let message = match (&prepared, outgoing) {
                (Some(message), _) => message.clone(),
                (None, Outgoing::Text(text)) => wa::Message::text(text),
                (None, Outgoing::Media(media)) => match self.link.prepare_media(media).await {
                    Ok(message) => prepared.insert(message).clone(),
                    Err(error) => {
                        tracing::warn!(attempt, %error, "WhatsApp upload failed");
                        last_error = error;
                        continue;
                    }
                },
            };
            // Paced from when it can go out: messages held by an outage
            // leave at the pace, not in a burst when the link comes back.
            // A person types the words (a file's caption), not the file.
            let slot = *slot.get_or_insert_with(|| {
                let mut pacer = self.pacer.lock().expect("pacer lock");
                pacer.reserve(&jid.to_string(), outgoing.words().chars().count(), Instant::now())
            });
            let typing = slot.send_at - slot.typing_from;
            tokio::time::sleep_until(slot.typing_from).await;
            self.link.typing(&jid).await;
            tokio::time::sleep_until(slot.send_at.max(Instant::now() + typing)).await;
            match self.link.send_message(&jid, message, &id).await {
                Ok(sent_id) => return Ok(Sent { message_id: Some(sent_id) }),
                Err(error) => {
                    tracing::warn!(attempt, %error, "WhatsApp send failed");
                    last_error = error;
                }
            }
        }
        Err(ChannelError::Failed {
            channel: CHANNEL,
            reason: match tried {
                0 => format!("not sent: {last_error}"),
                1 => format!("not sent after 1 attempt: {last_error}"),
                n => format!("not sent after {n} attempts: {last_error}"),
            },
        })
    }

    async fn check_once(&self, jid: &Jid, to: &Contact) -> Result<(), ChannelError> {
        let key = to.to_string();
        if self.checked.lock().expect("checked lock").contains(&key) {
            return Ok(());
        }
        match self.link.check_number(jid).await {
            Ok(true) => {
                self.checked.lock().expect("checked lock").insert(key);
                Ok(())
            }
            Ok(false) => Err(ChannelError::Failed { channel: CHANNEL, reason: format!("{to} is not on WhatsApp") }),
            // Unknown: the send itself will tell.
            Err(error) => {
                tracing::debug!(%error, "cannot check the number before sending");
                Ok(())
            }
        }
    }
}

/// What [`WhatsappChannel::deliver`] sends.
#[derive(Clone, Copy)]
enum Outgoing<'a> {
    Text(&'a str),
    Media(&'a OutgoingMedia),
}

impl Outgoing<'_> {
    /// What the contact reads: the text, or the file's caption.
    fn words(&self) -> &str {
        match self {
            Outgoing::Text(text) => text,
            Outgoing::Media(media) => media.caption.as_deref().unwrap_or_default(),
        }
    }
}

/// What becomes of whatsapp-rust's events: incoming messages (then marked
/// read, if on arrival), and what is learned of messages relay sent.
struct Arrivals {
    link: Arc<dyn Link>,
    read_receipts: ReadReceipts,
    presence: Presence,
    /// The messages taken already (none kept: every message is new).
    seen: Mutex<Option<seen::Seen>>,
}

impl Arrivals {
    async fn handle(&self, sink: &dyn InboundSink, event: &Event) {
        if let Some((caller, call_id)) = acts::call_from(event) {
            return self.called(sink, &caller, call_id).await;
        }
        match event {
            Event::Messages(batch) => {
                for message in batch.messages.iter() {
                    let Some(inbound) = take(&self.link, &message.message, &message.info).await else {
                        continue;
                    };
                    let source = &message.info.source;
                    let key = seen::SeenId::of(&source.chat, &source.sender, &message.info.id);
                    if self.seen.lock().expect("seen lock").as_ref().is_some_and(|seen| seen.contains(&key)) {
                        tracing::info!(id = %key.id, "a WhatsApp message delivered again; taken already");
                        continue;
                    }
                    // The operator's own message is not the contact's to mark read.
                    let reference = inbound.reference.clone().filter(|_| !inbound.by_operator);
                    let delivery = sink.deliver(inbound).await;
                    // Not written down: let a repeat have its chance.
                    if !matches!(delivery, Delivery::NotRecorded(_))
                        && let Some(seen) = self.seen.lock().expect("seen lock").as_mut()
                    {
                        seen.record(key);
                    }
                    if let (Delivery::Delivered(_), Some(reference)) = (delivery, reference) {
                        self.arrived(reference);
                    }
                }
            }
            // whatsapp-rust announced "available" just before `Connected`
            // (docs/whatsapp.md, "Presence").
            Event::Connected(_) if self.presence == Presence::Quiet => self.link.set_unavailable().await,
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

/// An incoming message as relay's, or `None` if relay ignores it. Its file
/// is not fetched here: the engine calls its `fetch` later.
async fn take(link: &Arc<dyn Link>, message: &wa::Message, info: &MessageInfo) -> Option<InboundMessage> {
    let incoming = match inbound::route(message, info) {
        Routed::Take(incoming) => incoming,
        Routed::Ignore(why) => {
            tracing::debug!(why, "incoming WhatsApp message ignored");
            return None;
        }
    };
    let from = match incoming.sender {
        Sender::Phone(contact) => contact,
        Sender::Lid(lid) => match link.phone_of_lid(&lid).await.as_deref().and_then(jid::digits_to_contact) {
            Some(contact) => contact,
            None => {
                tracing::warn!(%lid, "a message from a WhatsApp LID relay cannot match to a phone number; ignored");
                return None;
            }
        },
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
    let (by_operator, act) = (incoming.by_operator, incoming.act);
    Some(InboundMessage { from, text: incoming.text, reference: Some(reference), media, by_operator, act })
}

/// How the engine fetches `media`: through the link, each call a download
/// of its own (a retry downloads again).
fn fetch(link: Arc<dyn Link>, media: MediaRef) -> Fetch {
    Arc::new(move |max_bytes| {
        let (link, media) = (link.clone(), media.clone());
        Box::pin(async move { link.download(&media, max_bytes).await })
    })
}

fn unavailable(reason: String) -> ChannelError {
    ChannelError::Unavailable { channel: CHANNEL, reason }
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

impl Channel for WhatsappChannel {
    fn attach(&self, inbound: Arc<dyn InboundSink>) {
        let _ = self.sink.set(inbound.clone());
        // Changes of the link wake the engine (held conversations go on).
        let mut state = self.link.state();
        let sink = inbound.clone();
        tokio::spawn(async move {
            while state.changed().await.is_ok() {
                sink.channel_changed();
            }
        });
        if let Some(mut events) = self.events.lock().expect("events lock").take() {
            let arrivals = self.arrivals.clone();
            tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    arrivals.handle(inbound.as_ref(), &event).await;
                }
            });
        }
    }

    fn name(&self) -> &'static str {
        "whatsapp"
    }

    fn status(&self) -> ChannelStatus {
        let state = self.link.state().borrow().clone();
        ChannelStatus { version: self.link.version(), ..state.status(self.link.failed_dials(), self.link.phone()) }
    }

    fn ready(&self) -> Result<(), String> {
        match self.link.state().borrow().blocked() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn send<'a>(&'a self, to: &'a Contact, text: &'a str) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        Box::pin(self.deliver(to, Outgoing::Text(text)))
    }

    fn send_media<'a>(
        &'a self,
        to: &'a Contact,
        media: &'a OutgoingMedia,
    ) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        Box::pin(self.deliver(to, Outgoing::Media(media)))
    }

    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<ReachOutLock>, String>> {
        self.link.reach_out_lock()
    }

    fn mark_read(&self, messages: Vec<MessageRef>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // On arrival they were marked already; never is never.
            if self.settings.read_receipts() != ReadReceipts::AfterTurn {
                return;
            }
            let mut by_chat: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for message in messages {
                by_chat.entry(message.chat).or_default().push(message.id);
            }
            for (chat, ids) in by_chat {
                match chat.parse::<Jid>() {
                    Ok(chat) => self.link.mark_read(&chat, &ids).await,
                    Err(error) => tracing::warn!(%chat, %error, "cannot mark messages read"),
                }
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        self.link.shutdown()
    }

    fn as_whatsapp(&self) -> Option<&WhatsappChannel> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
