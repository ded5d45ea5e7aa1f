//! Linking a device: a pair request for the supervisor, and the codes and
//! the outcome for whoever asked (`relay init`, `POST /whatsapp/pair`).

use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use super::Session;
use crate::api::PairingEvent;
use crate::channel::whatsapp::state::LinkState;

pub(super) struct PairOrder {
    pub(super) phone: Option<String>,
    /// Drop the current session first.
    pub(super) fresh: bool,
}

impl Session {
    /// Links a device: the events (codes, then the outcome) come on the
    /// receiver. With a session already linked, says so unless `force`.
    pub fn pair(&self, phone: Option<String>, force: bool) -> mpsc::UnboundedReceiver<PairingEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let state = self.state.borrow().clone();
        let linked = matches!(
            state,
            LinkState::Connecting
                | LinkState::Connected
                | LinkState::Reconnecting { .. }
                | LinkState::TemporarilyBanned { .. }
        ) && self.phone().is_some();
        if linked && !force {
            let _ = tx.send(PairingEvent::AlreadyLinked { phone: self.phone() });
            return rx;
        }
        // A logged-out or replaced session cannot be reused: start afresh.
        let fresh = force || matches!(state, LinkState::LoggedOut { .. } | LinkState::Replaced);
        *self.pairing.lock().expect("pairing lock") = Some(tx);
        // The bot already pairing shows its next code here, unless it is
        // being dropped: then a new one is ordered.
        if state == LinkState::Pairing && !fresh && phone.is_none() && !self.drop_pairing.load(Ordering::SeqCst) {
            return rx;
        }
        *self.order.lock().expect("order lock") = Some(PairOrder { phone, fresh });
        self.wake.notify_one();
        rx
    }

    pub(super) fn tell_pairing(&self, event: PairingEvent) {
        let done = matches!(
            event,
            PairingEvent::Linked { .. } | PairingEvent::AlreadyLinked { .. } | PairingEvent::Failed { .. }
        );
        let mut pairing = self.pairing.lock().expect("pairing lock");
        let gone = pairing.as_ref().is_some_and(|tx| tx.send(event).is_err());
        if done || gone {
            *pairing = None;
        }
        // Nobody is looking at the codes any more: stop showing them.
        if gone && *self.state.borrow() == LinkState::Pairing {
            drop(pairing);
            self.drop_pairing.store(true, Ordering::SeqCst);
            self.wake.notify_one();
        }
    }

    pub(super) fn pairing_failed(&self, reason: &str) {
        tracing::warn!(reason, "WhatsApp pairing failed");
        self.tell_pairing(PairingEvent::Failed { reason: reason.to_string() });
        if *self.state.borrow() == LinkState::Pairing {
            self.drop_pairing.store(true, Ordering::SeqCst);
            self.wake.notify_one();
        }
    }
}
