//! The sandbox channel: simulated contacts inside the daemon, for trying
//! relay and for tests. `relay sandbox say` plays a contact writing in;
//! `relay sandbox outbox` shows what relay sent. Nothing leaves the machine.
//! The outbox is kept in `sandbox-outbox.jsonl` so it survives restarts.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::Utc;

use super::{Channel, ChannelError, Delivery, InboundMessage, InboundSink, Sent};
use crate::api::{ChannelStatus, OutboxEntry};
use crate::contact::Contact;
use crate::store::{self, StoreError, atomic};
use crate::util::BoxFuture;

pub struct SandboxChannel {
    outbox_file: PathBuf,
    outbox: Mutex<Vec<OutboxEntry>>,
    inbound: OnceLock<Arc<dyn InboundSink>>,
}

impl SandboxChannel {
    pub fn open(outbox_file: PathBuf) -> Result<SandboxChannel, StoreError> {
        let outbox = store::read_jsonl(&outbox_file)?;
        Ok(SandboxChannel { outbox_file, outbox: Mutex::new(outbox), inbound: OnceLock::new() })
    }

    /// A simulated contact writes to relay, exactly as a WhatsApp message would arrive.
    pub async fn say(&self, from: Contact, text: String) -> Delivery {
        match self.inbound.get() {
            Some(sink) => sink.deliver(InboundMessage::new(from, text)).await,
            None => Delivery::NoConversation,
        }
    }

    /// What relay sent, oldest first, optionally to one contact only.
    pub fn outbox(&self, contact: Option<&Contact>) -> Vec<OutboxEntry> {
        let outbox = self.outbox.lock().expect("outbox lock");
        outbox.iter().filter(|e| contact.is_none_or(|c| e.contact == c.as_str())).cloned().collect()
    }
}

impl Channel for SandboxChannel {
    fn attach(&self, inbound: Arc<dyn InboundSink>) {
        let _ = self.inbound.set(inbound);
    }

    fn name(&self) -> &'static str {
        "sandbox"
    }

    fn status(&self) -> ChannelStatus {
        ChannelStatus {
            kind: "sandbox".into(),
            state: "connected (simulated contacts)".into(),
            connected: true,
            detail: None,
            phone: None,
        }
    }

    fn send<'a>(&'a self, to: &'a Contact, text: &'a str) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        Box::pin(async move {
            let entry = OutboxEntry { contact: to.to_string(), text: text.to_string(), timestamp: Utc::now() };
            let line = serde_json::to_vec(&entry).expect("outbox entries serialise");
            // The lock orders file and memory alike.
            let mut outbox = self.outbox.lock().expect("outbox lock");
            atomic::append_line(&self.outbox_file, &line)
                .map_err(|e| ChannelError::Rejected { channel: "sandbox", reason: e.to_string() })?;
            outbox.push(entry);
            Ok(Sent::default())
        })
    }

    fn as_sandbox(&self) -> Option<&SandboxChannel> {
        Some(self)
    }
}
