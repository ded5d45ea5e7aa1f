//! The channel of a daemon configured for WhatsApp while this build has no
//! WhatsApp link yet: it reports "not linked" and refuses every send, so the
//! daemon still serves every command and loses nothing.

use std::sync::Arc;

use super::{Channel, ChannelError, InboundSink, Sent};
use crate::api::ChannelStatus;
use crate::contact::Contact;
use crate::util::BoxFuture;

pub struct NotLinked;

const REASON: &str = "WhatsApp is not linked (WhatsApp pairing is not in this build yet; use `relay init --channel sandbox` to try relay)";

impl Channel for NotLinked {
    fn attach(&self, _inbound: Arc<dyn InboundSink>) {}

    fn status(&self) -> ChannelStatus {
        ChannelStatus {
            kind: "whatsapp".into(),
            state: "not linked".into(),
            connected: false,
            detail: None,
            phone: None,
        }
    }

    fn send<'a>(&'a self, _to: &'a Contact, _text: &'a str) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        Box::pin(async { Err(ChannelError::Unavailable { channel: "whatsapp", reason: REASON.into() }) })
    }
}
