//! Channels carry text between relay and contacts. The engine only sees the
//! [`Channel`] trait (outbound) and the [`InboundSink`] it hands each channel
//! (inbound), so WhatsApp and the sandbox are interchangeable.

pub mod sandbox;
pub mod unavailable;

use std::sync::Arc;

use crate::api::ChannelStatus;
use crate::contact::Contact;
use crate::util::BoxFuture;

pub use sandbox::SandboxChannel;

/// A message a contact sent to relay.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundMessage {
    pub from: Contact,
    pub text: String,
}

/// What became of an inbound message.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// Recorded in this conversation's transcript.
    Delivered(uuid::Uuid),
    /// The contact has no live conversation; logged and ignored.
    NoConversation,
    /// The conversation was found but the message could not be written down.
    NotRecorded(String),
}

/// Where a channel hands the messages it receives (the engine).
pub trait InboundSink: Send + Sync + 'static {
    fn deliver(&self, message: InboundMessage) -> BoxFuture<'_, Delivery>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// The channel cannot send at all right now (not linked, logged out).
    #[error("the {channel} channel cannot send: {reason}")]
    Unavailable { channel: &'static str, reason: String },
    /// This one message was refused.
    #[error("the {channel} channel refused the message: {reason}")]
    Rejected { channel: &'static str, reason: String },
}

pub trait Channel: Send + Sync + 'static {
    /// Gives the channel the sink for what contacts send.
    fn attach(&self, inbound: Arc<dyn InboundSink>);

    fn status(&self) -> ChannelStatus;

    /// Sends `text` to `to`; returns once the channel has taken it.
    fn send<'a>(&'a self, to: &'a Contact, text: &'a str) -> BoxFuture<'a, Result<(), ChannelError>>;

    /// The sandbox, when this is it (for the `relay sandbox` commands).
    fn as_sandbox(&self) -> Option<&SandboxChannel> {
        None
    }
}
