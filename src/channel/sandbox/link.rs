//! The sandbox's own WhatsApp link, simulated: `relay sandbox offline`
//! takes relay away from WhatsApp (what contacts write is held, and relay
//! cannot send), `relay sandbox online` brings it back with a catch-up that
//! hands over what was held, as WhatsApp's offline queue does, or is cut
//! short (`--cut-short`): what was held is lost, and the conversations live
//! then are marked as maybe missing messages.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::SandboxChannel;
use crate::api::SandboxLinkResponse;
use crate::channel::catch_up::{BOUND, CatchUp};
use crate::channel::{InboundMessage, InboundOutcome};

/// relay's simulated link: whether it is away, since when, and what
/// contacts wrote meanwhile. In memory: a restart brings it back online.
#[derive(Default)]
pub(super) struct Link {
    pub(super) away_since: Mutex<Option<DateTime<Utc>>>,
    held: Mutex<Vec<InboundMessage>>,
    pub(super) catch_up: Arc<CatchUp>,
}

impl SandboxChannel {
    /// relay goes away from (simulated) WhatsApp.
    pub fn go_offline(&self) -> SandboxLinkResponse {
        {
            let mut away = self.link.away_since.lock().expect("link lock");
            if away.is_none() {
                *away = Some(crate::clock::now());
                self.link.catch_up.heard();
            }
        }
        self.link_state(0, 0)
    }

    /// Whether relay is away from WhatsApp now.
    pub fn is_offline(&self) -> bool {
        self.link.away_since.lock().expect("link lock").is_some()
    }

    /// A contact's message while relay is away: WhatsApp keeps it, with
    /// when it was written.
    pub fn hold(&self, message: InboundMessage) {
        let message = InboundMessage { written_at: Some(crate::clock::now()), ..message };
        self.link.held.lock().expect("link lock").push(message);
    }

    /// relay is back: the catch-up hands over what was held, oldest first,
    /// and ends; cut short, it hands over nothing and relay goes on without.
    pub async fn go_online(&self, cut_short: bool) -> SandboxLinkResponse {
        let away = self.link.away_since.lock().expect("link lock").take();
        let Some(since) = away else { return self.link_state(0, 0) };
        let held: Vec<InboundMessage> = std::mem::take(&mut *self.link.held.lock().expect("link lock"));
        let Some(sink) = self.inbound.get().cloned() else { return self.link_state(0, held.len()) };
        self.link.catch_up.in_touch_until(since);
        self.link.catch_up.start(sink.clone(), BOUND);
        sink.channel_changed();
        if cut_short {
            self.link.catch_up.cut_short_now();
            sink.channel_changed();
            return self.link_state(0, held.len());
        }
        let mut delivered = 0;
        for message in held {
            if !matches!(self.deliver(message).await, InboundOutcome::NotRecorded(_)) {
                delivered += 1;
            }
        }
        if self.link.catch_up.finish() {
            sink.channel_changed();
        }
        self.link_state(delivered, 0)
    }

    fn link_state(&self, delivered: usize, lost: usize) -> SandboxLinkResponse {
        SandboxLinkResponse {
            online: !self.is_offline(),
            held: self.link.held.lock().expect("link lock").len(),
            delivered,
            lost,
            missing: self.link.catch_up.missed(),
        }
    }
}
