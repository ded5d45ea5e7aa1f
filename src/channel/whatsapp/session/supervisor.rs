//! The supervisor: the task that owns the session's bot.
//!
//! - no linked session: nothing connects ("not linked") until a pair request;
//! - a pair request: a bot that shows QR codes (or a phone pairing code),
//!   streamed to whoever asked, and that stays on as the session once linked;
//! - linked: connect; whatsapp-rust reconnects on its own with backoff;
//! - when its run loop ends anyway (a failed connect, a version refused),
//!   a new bot is built after relay's own backoff; logged out or replaced:
//!   wait for `relay init`; temporarily banned: wait until the ban ends.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::Utc;
use whatsapp_rust::pair_code::PairCodeOptions;
use whatsapp_rust::prelude::*;
use whatsapp_rust::transport::TokioWebSocketTransportFactory;
use whatsapp_rust::wacore::net::WHATSAPP_WEB_WS_URL;
use whatsapp_rust::wacore::store::DevicePropsOverride;

use super::dial::ReportingDialer;
use super::{Session, secure_files};
use crate::api::PairingEvent;
use crate::channel::whatsapp::jid;
use crate::channel::whatsapp::state::LinkState;
use crate::util::Backoff;

impl Session {
    pub(super) async fn supervise(self: Arc<Self>) {
        let mut backoff = bot_backoff();
        loop {
            if self.stop.is_cancelled() {
                break;
            }
            let order = self.order.lock().expect("order lock").take();
            self.drop_pairing.store(false, Ordering::SeqCst);
            if order.as_ref().is_some_and(|o| o.fresh) {
                self.forget_session();
            }
            let pair_phone = order.as_ref().and_then(|o| o.phone.clone());
            let bot = match self.build(pair_phone).await {
                Ok(bot) => bot,
                Err(error) => {
                    tracing::error!(%error, "cannot open the WhatsApp session");
                    self.tell_pairing(PairingEvent::Failed { reason: error.clone() });
                    self.set(LinkState::Reconnecting { last_error: Some(error) });
                    self.pause(backoff.next_wait()).await;
                    continue;
                }
            };
            let client = bot.client();
            let linked = client.pn();
            *self.phone.lock().expect("phone lock") = linked.as_ref().and_then(jid::contact_of).map(|c| c.to_string());
            match (&linked, &order) {
                (None, None) => {
                    self.set(LinkState::NotLinked);
                    drop(bot);
                    self.woken().await;
                    continue;
                }
                (None, Some(_)) => self.set(LinkState::Pairing),
                (Some(_), Some(_)) => self.tell_pairing(PairingEvent::AlreadyLinked { phone: self.phone() }),
                (Some(_), None) => {
                    let unlinked = matches!(*self.state.borrow(), LinkState::NotLinked | LinkState::Pairing);
                    if unlinked {
                        self.set(LinkState::Connecting);
                    }
                }
            }
            self.dials_at_connect.store(0, Ordering::Relaxed);
            *self.client.lock().expect("client lock") = Some(client.clone());
            let mut handle = bot.spawn();
            let interrupted = tokio::select! {
                _ = &mut handle => false,
                _ = self.woken() => true,
            };
            if interrupted {
                handle.shutdown().await;
            }
            self.failed_dials.fetch_add(u64::from(client.stats().reconnect_errors), Ordering::Relaxed);
            *self.client.lock().expect("client lock") = None;
            if self.stop.is_cancelled() {
                break;
            }
            if self.state.borrow().is_connected() || client.stats().reconnects > 0 {
                backoff = bot_backoff();
            }
            if interrupted {
                continue;
            }
            // The run loop ended on its own: its last state says what next.
            let state = self.state.borrow().clone();
            match state {
                LinkState::NotLinked | LinkState::Pairing | LinkState::LoggedOut { .. } | LinkState::Replaced => {
                    if state == LinkState::Pairing {
                        self.set(LinkState::NotLinked);
                    }
                    tracing::warn!(?state, "the WhatsApp session stopped; waiting for `relay init`");
                    self.woken().await;
                }
                LinkState::TemporarilyBanned { until, .. } => {
                    tracing::warn!(%until, "WhatsApp banned this number for a while; waiting until the ban ends");
                    self.pause((until - Utc::now()).to_std().unwrap_or_default()).await;
                    if Utc::now() >= until {
                        self.set(LinkState::Connecting);
                    }
                }
                LinkState::Connecting | LinkState::Connected | LinkState::Reconnecting { .. } => {
                    let last_error = match state {
                        LinkState::Reconnecting { last_error } => last_error,
                        _ => Some("the connection ended".into()),
                    };
                    self.set(LinkState::Reconnecting { last_error });
                    self.pause(backoff.next_wait()).await;
                }
            }
        }
        *self.client.lock().expect("client lock") = None;
    }

    /// Returns when there is something to do: stop, a pair order, or a
    /// pairing to drop. (A wake-up left over from an order already taken
    /// is not a reason.)
    async fn woken(&self) {
        loop {
            let reason = self.stop.is_cancelled()
                || self.order.lock().expect("order lock").is_some()
                || self.drop_pairing.load(Ordering::SeqCst);
            if reason {
                return;
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = self.stop.cancelled() => {}
            }
        }
    }

    /// Waits `delay`, or less if there is something to do.
    async fn pause(&self, delay: Duration) {
        let _ = tokio::time::timeout(delay, self.woken()).await;
    }

    async fn build(self: &Arc<Self>, pair_phone: Option<String>) -> Result<Bot, String> {
        create_private_dir(&self.auth_dir).map_err(|e| format!("cannot create {}: {e}", self.auth_dir.display()))?;
        let db = self.auth_dir.join("session.db");
        let store = SqliteStore::new(&db.to_string_lossy())
            .await
            .map_err(|e| format!("cannot open the WhatsApp session in {}: {e}", db.display()))?;
        secure_files(&self.auth_dir);
        let url = self.endpoint.ws_url.clone().unwrap_or_else(|| WHATSAPP_WEB_WS_URL.into());
        let transport = ReportingDialer {
            inner: TokioWebSocketTransportFactory::new().with_url(url.clone()),
            url,
            session: Arc::downgrade(self),
        };
        let session: Weak<Session> = Arc::downgrade(self);
        let mut builder = Bot::builder()
            .with_backend(store)
            .with_transport_factory(transport)
            .skip_history_sync()
            .with_device_props(DevicePropsOverride::new().with_os("relay"))
            .with_event_delivery(EventDelivery::Ordered { capacity: 1024 })
            .on_event(move |event, client| {
                let session = session.clone();
                async move {
                    if let Some(session) = session.upgrade() {
                        session.on_event(event, &client);
                    }
                }
            });
        if let Some(version) = self.endpoint.version {
            builder = builder.with_version(version);
        }
        if let Some(phone) = pair_phone {
            let phone_number = phone.trim_start_matches('+').to_string();
            builder = builder.with_pair_code(PairCodeOptions { phone_number, ..Default::default() });
        }
        builder.build().await.map_err(|e| format!("cannot start the WhatsApp client: {e}"))
    }

    /// Deletes the stored session (whatsapp-rust never does: a logged-out
    /// store must be removed before linking again).
    fn forget_session(&self) {
        for name in ["session.db", "session.db-wal", "session.db-shm"] {
            let _ = std::fs::remove_file(self.auth_dir.join(name));
        }
        *self.phone.lock().expect("phone lock") = None;
        tracing::info!("the old WhatsApp session was removed");
    }
}

/// relay's own backoff between bots: 2 s, doubling, at most 5 minutes.
fn bot_backoff() -> Backoff {
    Backoff::new(Duration::from_secs(2), Duration::from_secs(300))
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
