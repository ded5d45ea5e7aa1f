//! Channels carry text between relay and contacts. The engine only sees the
//! [`Channel`] trait (outbound) and the [`InboundSink`] it hands each channel
//! (inbound), so WhatsApp and the sandbox are interchangeable.

pub mod catch_up;
pub mod sandbox;
pub mod whatsapp;

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::api::{ChannelStatus, MediaKind, SendStatus};
use crate::contact::Contact;
use crate::courtesy::ReachOutLock;
pub use crate::media::{Fetch, FetchError, InboundMedia};
use crate::util::BoxFuture;

pub use sandbox::SandboxChannel;

/// A message a contact sent to relay.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundMessage {
    pub from: Contact,
    pub text: String,
    /// The channel's own id of the message, to mark it read once answered.
    pub reference: Option<MessageRef>,
    /// A photo, voice note or file, fetched by the engine after the message
    /// is recorded (its caption is in `media`, not `text`).
    pub media: Option<InboundMedia>,
    /// Written by the operator on their own WhatsApp (the phone, WhatsApp
    /// Desktop) in `from`'s chat, not by the contact.
    pub by_operator: bool,
    /// What the message does to the chat besides writing `text`.
    pub act: Option<InboundAct>,
    /// When it was written, when the channel says (WhatsApp may hand it to
    /// relay later, after an absence); otherwise it is now.
    pub written_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// What a message does to the chat besides writing, by the channel's ids
/// of the messages it acts on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InboundAct {
    /// A reaction to message `to` (the emoji is the text); `removed` takes it back.
    Reaction { to: String, removed: bool },
    /// A message quoting message `to`.
    Reply { to: String },
    /// Message `of`, edited: `text` is its new text.
    Edit { of: String },
    /// Message `of`, deleted for everyone.
    Deletion { of: String },
    /// A call from the contact.
    Call,
}

impl InboundMessage {
    pub fn new(from: Contact, text: impl Into<String>) -> InboundMessage {
        InboundMessage {
            from,
            text: text.into(),
            reference: None,
            media: None,
            by_operator: false,
            act: None,
            written_at: None,
        }
    }

    /// A message that is `media` (with its caption, if any).
    pub fn with_media(from: Contact, media: InboundMedia) -> InboundMessage {
        InboundMessage { media: Some(media), ..InboundMessage::new(from, "") }
    }
}

/// A message as the channel knows it: its id, and the chat it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRef {
    pub chat: String,
    pub id: String,
}

/// Where an inbound message was routed: what became of it.
#[derive(Debug, Clone, PartialEq)]
pub enum InboundOutcome {
    /// Recorded in this conversation's transcript.
    Delivered(uuid::Uuid),
    /// The contact has no live conversation; kept in the unrouted log.
    NoConversation,
    /// The conversation was found but the message could not be written down.
    NotRecorded(String),
}

/// What the channel learned, after the send, of a message relay sent.
#[derive(Debug, Clone, PartialEq)]
pub enum SentUpdate {
    /// A receipt from the contact's phone: `Delivered`, `Read` or `Played`.
    Receipt { status: SendStatus, at: DateTime<Utc> },
    /// The channel refused it after taking it (WhatsApp's server ack
    /// carried an error): why.
    Refused(String),
    /// Refused because this number may not write first to new contacts
    /// now (WhatsApp's error 463, the reach-out lock): why.
    ReachOutLocked(String),
}

impl SentUpdate {
    /// Why the channel refused the message, if it did.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            SentUpdate::Refused(why) | SentUpdate::ReachOutLocked(why) => Some(why),
            SentUpdate::Receipt { .. } => None,
        }
    }
}

/// Where a channel hands what it learns (the engine).
pub trait InboundSink: Send + Sync + 'static {
    /// A contact wrote.
    fn deliver(&self, message: InboundMessage) -> BoxFuture<'_, InboundOutcome>;
    /// News of a message relay sent; `message_id` is the channel's id for it
    /// ([`Sent::message_id`]). Unknown ids are ignored: receipts also come
    /// for messages relay did not send (from the operator's own phone).
    fn sent_update(&self, message_id: String, update: SentUpdate) -> BoxFuture<'_, ()>;
    /// [`Channel::ready`] may have changed: held conversations may go on.
    fn channel_changed(&self);
    /// WhatsApp's reach-out lock may have changed (it said so): what relay
    /// knew of it is stale, and it asks again before the next first message.
    fn reach_out_changed(&self) {
        self.channel_changed();
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// The channel cannot send at all right now (not linked, logged out,
    /// banned): nothing was attempted, and conversations wait for it.
    #[error("the {channel} channel cannot send: {reason}")]
    Unavailable { channel: &'static str, reason: Blocked },
    /// This one message was refused; another may go through.
    #[error("the {channel} channel refused the message: {reason}")]
    Rejected { channel: &'static str, reason: String },
    /// Sending was tried and retried, and failed.
    #[error("the {channel} channel could not send the message: {reason}")]
    Failed { channel: &'static str, reason: String },
}

/// Why a channel sends nothing now, until someone acts, a ban ends or the
/// lock lifts: conversations hold rather than fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Blocked {
    #[error("WhatsApp is not linked: run `relay init` and scan the QR code")]
    NotLinked,
    #[error("WhatsApp logged this device out ({reason}): run `relay init` to link it again")]
    LoggedOut { reason: String },
    #[error(
        "WhatsApp has temporarily banned this number until {} ({reason}); relay sends nothing until then",
        .until.format("%Y-%m-%d %H:%M UTC")
    )]
    Banned { until: chrono::DateTime<chrono::Utc>, reason: String },
    #[error(
        "another WhatsApp Web session of this number took over: run `relay stop` and `relay start` to take it back"
    )]
    Replaced,
    /// The session stopped (relay is shutting down).
    #[error("the WhatsApp session has stopped")]
    Stopped,
    /// The sandbox's simulated link is down (`relay sandbox offline`).
    #[error("relay is offline from WhatsApp (simulated: `relay sandbox online` brings it back)")]
    SimulatedOffline,
    /// WhatsApp refuses first messages to new contacts (error 463) until then.
    #[error(
        "WhatsApp does not let this number write first to new contacts until {} (its reach-out lock); replies to \
         contacts who wrote still go out, and relay asks WhatsApp again then",
        .until.format("%Y-%m-%d %H:%M UTC")
    )]
    ReachOutLock { until: chrono::DateTime<chrono::Utc> },
}

/// Why WhatsApp could not be asked whether its reach-out lock holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    #[error("not connected")]
    NotConnected,
    /// The question went out and came back as an error (whatsapp-rust's words).
    #[error("WhatsApp did not answer: {0}")]
    Failed(String),
}

/// A message the channel has taken.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    /// The channel's id for it (WhatsApp's message id), when it has one.
    pub message_id: Option<String>,
}

/// A file relay sends a contact: one of the conversation's attachments,
/// its bytes read from the home.
#[derive(Clone, PartialEq, Eq)]
pub struct OutgoingMedia {
    /// [`MediaKind::Photo`] (a JPEG or PNG, shown as an image) or
    /// [`MediaKind::Document`] (anything else, as a file).
    pub kind: MediaKind,
    pub bytes: Vec<u8>,
    /// What the bytes are (relay sniffed them).
    pub mime: String,
    /// The name the contact sees.
    pub file_name: String,
    pub caption: Option<String>,
}

impl std::fmt::Debug for OutgoingMedia {
    // Not the bytes: a log line gets their count.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutgoingMedia")
            .field("kind", &self.kind)
            .field("bytes", &self.bytes.len())
            .field("mime", &self.mime)
            .field("file_name", &self.file_name)
            .field("caption", &self.caption)
            .finish()
    }
}

pub trait Channel: Send + Sync + 'static {
    /// Gives the channel the sink for what contacts send.
    fn attach(&self, inbound: Arc<dyn InboundSink>);

    /// "whatsapp", "sandbox": for messages and logs.
    fn name(&self) -> &'static str;

    fn status(&self) -> ChannelStatus;

    /// `Err(why)` while no send would be attempted (not linked, logged out,
    /// banned). Conversations hold rather than fail, and go on when
    /// [`InboundSink::channel_changed`] says so.
    fn ready(&self) -> Result<(), Blocked> {
        Ok(())
    }

    /// Sends `text` to `to`; returns once the channel has taken it. May take
    /// a while (pacing, waiting for a connection): callers do not block on it.
    fn send<'a>(&'a self, to: &'a Contact, text: &'a str) -> BoxFuture<'a, Result<Sent, ChannelError>>;

    /// Sends a file to `to` (with its caption); returns once the channel has
    /// taken it, as [`Channel::send`]. A channel that cannot send files
    /// refuses it, and the conversation is told so.
    fn send_media<'a>(
        &'a self,
        _to: &'a Contact,
        _media: &'a OutgoingMedia,
    ) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        let channel = self.name();
        Box::pin(
            async move { Err(ChannelError::Rejected { channel, reason: "this channel cannot send files".into() }) },
        )
    }

    /// Whether this number may not write first to new contacts now
    /// (WhatsApp's reach-out lock), asked before a first message to one.
    /// `Ok(None)`: no lock; `Err(why)` when it cannot be told.
    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<ReachOutLock>, crate::channel::AskError>> {
        Box::pin(async { Ok(None) })
    }

    /// Whether the channel is still taking what contacts sent while relay
    /// was away (WhatsApp's offline queue): a contact may have written, so
    /// follow-ups and first messages wait. Its end is told through
    /// [`InboundSink::channel_changed`].
    fn catching_up(&self) -> bool {
        false
    }

    /// The last catch-up that did not finish within its bound: the span in
    /// which contacts' messages may be missing ([`catch_up`]).
    fn missed_span(&self) -> Option<crate::api::MissedSpan> {
        None
    }

    /// Whether the channel reports receipts ([`InboundSink::sent_update`]):
    /// only then do follow-ups wait for a message to be delivered.
    fn reports_delivery(&self) -> bool {
        false
    }

    /// Tells the contact their messages were read (once the agent answered).
    fn mark_read(&self, _messages: Vec<MessageRef>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Stops cleanly (the WhatsApp session flushes its state).
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// The sandbox, when this is it (for the `relay sandbox` commands).
    fn as_sandbox(&self) -> Option<&SandboxChannel> {
        None
    }

    /// The WhatsApp channel, when this is it (for pairing).
    fn as_whatsapp(&self) -> Option<&whatsapp::WhatsappChannel> {
        None
    }
}
