//! The WhatsApp channel, through whatsapp-rust (one linked device).
//!
//! - [`session`]: the linked device and its connection (pairing, reconnects);
//! - `arrivals`: what becomes of whatsapp-rust's events;
//! - [`state`]: the link's health, as `relay status` shows it;
//! - [`inbound`]: which incoming messages relay takes, their text and media;
//! - [`jid`]: phone numbers and WhatsApp addresses;
//! - [`pacing`]: typing time, gaps and the per-minute cap;
//! - [`qr`]: the pairing QR code in a terminal;
//! - [`seen`]: the contact messages already taken, so a repeat is dropped;
//! - [`inbox`]: the messages kept before WhatsApp forgets them, until taken.
//!
//! This module joins them: sends wait for the connection (bounded), are
//! paced, retried, and recorded with WhatsApp's message id; incoming
//! messages are kept before WhatsApp is told they arrived, matched to
//! contacts (LIDs included), handed to the engine once (WhatsApp may
//! deliver one again), with a way to fetch their file
//! that the engine runs later (never here, where events wait in line),
//! and marked read as `whatsapp.read_receipts` says; with a quiet
//! `whatsapp.presence`, the device says it is unavailable after connecting.

pub mod acts;
mod arrivals;
pub mod inbound;
pub mod inbox;
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

use super::catch_up::CatchUp;
use super::{Channel, ChannelError, InboundSink, MessageRef, OutgoingMedia, Sent};
use crate::api::{ChannelStatus, PairingEvent};
use crate::config::{ReadReceipts, WhatsappSettings};
use crate::contact::Contact;
use crate::courtesy::ReachOutLock;
use crate::media::intake::FetchError;
use crate::util::{Backoff, BoxFuture};
use arrivals::Arrivals;
use inbound::MediaRef;
use pacing::Pacer;
use session::Session;
use state::LinkState;

const CHANNEL: &str = "whatsapp";

/// What the WhatsApp link could not do, for the channel to say in its
/// own words (a send's reason for failing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("not connected")]
    NotConnected,
    /// WhatsApp did not answer the question it was asked.
    #[error("no answer")]
    NoAnswer,
    /// The file did not reach WhatsApp's media servers.
    #[error("cannot upload the file: {0}")]
    Upload(String),
    /// WhatsApp, or the client library, refused: in its words.
    #[error("{0}")]
    Refused(String),
}

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
    fn check_number<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, Result<bool, LinkError>>;
    fn typing<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, ()>;
    /// Sends `message` under `id`; returns the id WhatsApp took it under.
    fn send_message<'a>(
        &'a self,
        to: &'a Jid,
        message: wa::Message,
        id: &'a str,
    ) -> BoxFuture<'a, Result<String, LinkError>>;
    /// Uploads a file (encrypted, to WhatsApp's media servers) and makes the
    /// message that carries it: a photo as an image, anything else as a
    /// document with its name. Needs the connection.
    fn prepare_media<'a>(&'a self, media: &'a OutgoingMedia) -> BoxFuture<'a, Result<wa::Message, LinkError>>;
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
    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<ReachOutLock>, crate::channel::AskError>>;
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
        let inbox = inbox::Inbox::open(home.whatsapp_inbound_ids_file(), home.whatsapp_inbox_file());
        let hook = Some(inbox::Hook(inbox.clone()));
        let endpoint = session::Endpoint::from_env();
        let (session, events) = Session::start_with_stop(home.whatsapp_auth_dir(), endpoint, stop, hook);
        WhatsappChannel::with_link(session, events, settings).keeping(inbox)
    }

    /// Hands the engine the messages `inbox` kept and it never took, and
    /// drops a message it took already, after a restart too.
    pub fn keeping(self, inbox: Arc<inbox::Inbox>) -> WhatsappChannel {
        let _ = self.arrivals.inbox.set(inbox);
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
            inbox: OnceLock::new(),
            catch_up: Arc::new(CatchUp::default()),
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
            self.arrivals.handle(sink, event).await;
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
            if !connected_by(&mut state, connect_deadline).await? {
                last_error = format!(
                    "WhatsApp was not connected for {}",
                    crate::duration::format(Duration::from_secs(settings.connect_wait_secs))
                );
                break;
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
                        last_error = error.to_string();
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
                    last_error = error.to_string();
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

/// Waits for the link to be up until `deadline`: false if it was not by
/// then, refused if it is blocked (logged out, banned) or has stopped.
async fn connected_by(state: &mut watch::Receiver<LinkState>, deadline: Instant) -> Result<bool, ChannelError> {
    let waited = tokio::time::timeout_at(deadline, async {
        state.wait_for(|s| s.is_connected() || s.blocked().is_some()).await.map(|s| s.blocked())
    })
    .await;
    match waited {
        Err(_) => Ok(false),
        Ok(Err(_)) => Err(unavailable(crate::channel::Blocked::Stopped)),
        Ok(Ok(Some(reason))) => Err(unavailable(reason)),
        Ok(Ok(None)) => Ok(true),
    }
}

fn unavailable(reason: crate::channel::Blocked) -> ChannelError {
    ChannelError::Unavailable { channel: CHANNEL, reason }
}

impl Channel for WhatsappChannel {
    fn attach(&self, inbound: Arc<dyn InboundSink>) {
        let _ = self.sink.set(inbound.clone());
        // What came while relay was away comes first (its bound starts with
        // WhatsApp's preview of it).
        self.arrivals.catch_up.begin();
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
                // What the engine never took comes before anything new.
                arrivals.hand_on_kept(inbound.as_ref(), false).await;
                while let Some(event) = events.recv().await {
                    arrivals.handle(&inbound, &event).await;
                }
            });
        }
    }

    fn name(&self) -> &'static str {
        "whatsapp"
    }

    fn status(&self) -> ChannelStatus {
        let state = self.link.state().borrow().clone();
        let status = state.status(self.link.failed_dials(), self.link.phone());
        let (catching_up, missing) = (self.catching_up(), self.missed_span());
        ChannelStatus { version: self.link.version(), catching_up, missing, ..status }
    }

    /// Until the offline queue is in, unless the link is blocked (then the
    /// conversations say that instead).
    fn catching_up(&self) -> bool {
        self.arrivals.catch_up.running() && self.ready().is_ok()
    }

    fn missed_span(&self) -> Option<crate::api::MissedSpan> {
        self.arrivals.catch_up.missed()
    }

    fn ready(&self) -> Result<(), crate::channel::Blocked> {
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

    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<ReachOutLock>, crate::channel::AskError>> {
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
