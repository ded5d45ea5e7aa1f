//! What whatsapp-rust reports: the link's state moves, pairing codes and
//! outcomes go to whoever links; messages, acks, receipts, calls,
//! connections, push name changes and the offline catch-up's start and end
//! to the channel.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use whatsapp_rust::prelude::*;

use super::{Session, secure_files, version};
use crate::api::PairingEvent;
use crate::channel::whatsapp::jid;
use crate::channel::whatsapp::state::LinkState;

/// The version the client announced on this connection (whatsapp-rust
/// keeps it in the device; `wacore-0.7.0/src/store/device.rs` 285-288).
fn announced(client: &Client) -> version::Version {
    let device = client.persistence_manager().get_device_snapshot();
    (device.app_version_primary, device.app_version_secondary, device.app_version_tertiary)
}

impl Session {
    pub(super) fn on_event(&self, event: Arc<Event>, client: &Arc<Client>) {
        // Bound first: the read guard must be gone before `set` writes.
        let next = self.state.borrow().after(&event, crate::clock::now());
        if let Some(next) = next {
            tracing::info!(state = ?next, "WhatsApp link");
            if next.is_connected() {
                self.failed_dials.store(0, Ordering::Relaxed);
                self.dials_at_connect.store(u64::from(client.stats().reconnect_errors), Ordering::Relaxed);
                *self.phone.lock().expect("phone lock") =
                    client.pn().as_ref().and_then(jid::contact_of).map(|c| c.to_string());
            }
            self.set(next);
        }
        match &*event {
            Event::PairingQrCode(qr) => {
                self.tell_pairing(PairingEvent::Qr { code: qr.code.clone(), expires_in_secs: qr.timeout.as_secs() })
            }
            Event::PairingCode(code) => self.tell_pairing(PairingEvent::PairCode {
                code: code.code.clone(),
                expires_in_secs: code.timeout.as_secs(),
            }),
            Event::PairSuccess(success) => {
                let phone = jid::contact_of(&success.id).map(|c| c.to_string());
                *self.phone.lock().expect("phone lock") = phone.clone();
                secure_files(&self.auth_dir);
                tracing::info!(phone = phone.as_deref().unwrap_or("?"), "WhatsApp linked");
                self.tell_pairing(PairingEvent::Linked { phone });
            }
            Event::PairingQrCodesExhausted(_) => self.pairing_failed(
                "the QR codes ran out before one was scanned: run `relay init` again when the phone is at hand",
            ),
            Event::PairError(e) => self.pairing_failed(&format!("WhatsApp refused the link: {}", e.error)),
            Event::PairingCodeError(e) => {
                let wait = e.backoff.map(|b| format!(" (wait {} before retrying)", crate::duration::format(b)));
                self.pairing_failed(&format!("no pairing code: {}{}", e.error, wait.unwrap_or_default()));
            }
            Event::Connected(_) => {
                {
                    let mut versions = self.version.lock().expect("version lock");
                    versions.last_working = Some(announced(client));
                    versions.rejected = None;
                }
                // The channel says "unavailable" now, if presence is quiet.
                let _ = self.events.send(event.clone());
            }
            Event::ClientOutdated(_) => {
                let refused = announced(client);
                self.version.lock().expect("version lock").rejected = Some(refused);
                self.set(LinkState::Outdated {
                    version: version::shown(refused),
                    plan: "fetching the current version".into(),
                });
            }
            Event::Messages(_)
            | Event::ServerAck(_)
            | Event::Receipt(_)
            | Event::SelfPushNameUpdated(_)
            | Event::IncomingCall(_)
            | Event::MissedCall(_)
            | Event::OfflineSyncPreview(_)
            | Event::OfflineSyncCompleted(_) => {
                let _ = self.events.send(event.clone());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::sync::mpsc;
    use whatsapp_rust::prelude::*;
    use whatsapp_rust::types::events::{Connected, Disconnected, PairSuccess, PairingQrCode, PairingQrCodesExhausted};
    use whatsapp_rust::wacore::net::DisconnectReason;
    use whatsapp_rust::wacore::store::InMemoryBackend;

    use crate::api::PairingEvent;
    use crate::channel::whatsapp::session::{Endpoint, Session};
    use crate::channel::whatsapp::state::LinkState;

    /// Pairing events from now on, as `relay init` listens for them.
    fn listen_for_pairing(session: &Session) -> mpsc::UnboundedReceiver<PairingEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        *session.pairing.lock().unwrap() = Some(tx);
        rx
    }

    /// The contact's phone says message `id` arrived.
    fn delivered(id: &str) -> whatsapp_rust::types::events::Receipt {
        whatsapp_rust::types::events::Receipt::builder()
            .source(Default::default())
            .message_ids(vec![id.into()])
            .timestamp(crate::clock::now())
            .r#type(whatsapp_rust::wacore::types::presence::ReceiptType::Delivered)
            .offline(false)
            .build()
    }

    /// The session's event handler, fed whatsapp-rust's own events: the
    /// state moves (and nothing deadlocks on the state it reads), pairing
    /// events reach whoever asked, messages go to the channel.
    #[tokio::test]
    async fn events_move_the_state_and_reach_their_listeners() {
        let dir = tempfile::tempdir().unwrap();
        let (session, mut events) = Session::start(dir.path().join("auth"), Endpoint::default());
        let bot = Bot::builder().with_backend(InMemoryBackend::new()).build().await.unwrap();
        let client = bot.client();
        let mut pairing = listen_for_pairing(&session);

        let feed = |event: Event| {
            let (session, client) = (session.clone(), client.clone());
            // On its own thread, so a deadlock fails the test instead of hanging it.
            let (done, finished) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                session.on_event(Arc::new(event), &client);
                let _ = done.send(());
            });
            finished.recv_timeout(Duration::from_secs(5)).expect("the event handler returned");
        };

        feed(Event::Connected(Connected::builder().build()));
        assert_eq!(*session.state().borrow(), LinkState::Connected);
        assert!(matches!(&*events.recv().await.unwrap(), Event::Connected(_)), "for quiet presence");
        feed(Event::Disconnected(Disconnected::builder().reason(DisconnectReason::StreamEnded).build()));
        assert!(matches!(*session.state().borrow(), LinkState::Reconnecting { .. }));

        let success = PairSuccess::builder()
            .id(Jid::pn("56912345678"))
            .lid(Jid::lid("184467440737095"))
            .business_name(String::new())
            .platform("android".into())
            .build();
        feed(Event::PairSuccess(success));
        assert_eq!(pairing.recv().await.unwrap(), PairingEvent::Linked { phone: Some("+56912345678".into()) });
        assert_eq!(session.phone().as_deref(), Some("+56912345678"));

        // Pairing: each code reaches the listener; running out ends the pairing.
        let mut pairing = listen_for_pairing(&session);
        session.set(LinkState::Pairing);
        let qr = PairingQrCode::builder().code("2@ref,key,id,adv,1".into()).timeout(Duration::from_secs(60)).build();
        feed(Event::PairingQrCode(qr));
        let shown = pairing.recv().await.unwrap();
        assert_eq!(shown, PairingEvent::Qr { code: "2@ref,key,id,adv,1".into(), expires_in_secs: 60 });
        feed(Event::PairingQrCodesExhausted(PairingQrCodesExhausted::builder().disconnected(true).build()));
        assert!(matches!(pairing.recv().await.unwrap(), PairingEvent::Failed { reason } if reason.contains("ran out")));
        assert_eq!(*session.state().borrow(), LinkState::NotLinked);

        let batch = crate::channel::whatsapp::inbound::tests::batch(
            wa::Message::text("hola"),
            crate::channel::whatsapp::inbound::tests::info(Jid::pn("56912345678"), None),
        );
        feed(batch);
        assert!(matches!(&*events.recv().await.unwrap(), Event::Messages(_)));
        feed(Event::Receipt(delivered("ID1")));
        assert!(matches!(&*events.recv().await.unwrap(), Event::Receipt(_)), "receipts reach the channel");
        use whatsapp_rust::types::events::{OfflineSyncCompleted, OfflineSyncPreview};
        let preview = OfflineSyncPreview::builder()
            .total(3)
            .app_data_changes(0)
            .messages(2)
            .notifications(0)
            .receipts(1)
            .calls(0)
            .statuses(0)
            .build();
        feed(Event::OfflineSyncPreview(preview));
        assert!(matches!(&*events.recv().await.unwrap(), Event::OfflineSyncPreview(_)), "the catch-up's start");
        feed(Event::OfflineSyncCompleted(OfflineSyncCompleted::builder().count(3).build()));
        assert!(matches!(&*events.recv().await.unwrap(), Event::OfflineSyncCompleted(_)), "and its end");
        session.shutdown().await;
    }
}
