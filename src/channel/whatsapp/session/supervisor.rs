//! The supervisor: the task that owns the session's bot.
//!
//! - no linked session: nothing connects ("not linked") until a pair request;
//! - a pair request: a bot that shows QR codes (or a phone pairing code),
//!   streamed to whoever asked, and that stays on as the session once linked;
//! - linked: connect; whatsapp-rust reconnects on its own with backoff;
//! - when its run loop ends anyway (a failed connect), a new bot is built
//!   after relay's own backoff; a version refused: a fresh one is fetched
//!   first (see `version.rs`); logged out or replaced:
//!   wait for `relay init`; temporarily banned: wait until the ban ends.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use whatsapp_rust::pair_code::PairCodeOptions;
use whatsapp_rust::prelude::*;
use whatsapp_rust::transport::TokioWebSocketTransportFactory;
use whatsapp_rust::wacore::net::WHATSAPP_WEB_WS_URL;
use whatsapp_rust::wacore::store::DevicePropsOverride;

use super::dial::ReportingDialer;
use super::{Session, secure_files, version};
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
            self.after_run(&mut backoff).await;
        }
        *self.client.lock().expect("client lock") = None;
    }

    /// The run loop ended on its own: its last state says what next (wait
    /// for `relay init`, for a ban's end, or to reconnect).
    async fn after_run(&self, backoff: &mut Backoff) {
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
                self.pause((until - crate::clock::now()).to_std().unwrap_or_default()).await;
                if crate::clock::now() >= until {
                    self.set(LinkState::Connecting);
                }
            }
            LinkState::Outdated { .. }
            | LinkState::Connecting
            | LinkState::Connected
            | LinkState::Reconnecting { .. } => {
                if !matches!(state, LinkState::Outdated { .. }) {
                    let last_error = match state {
                        LinkState::Reconnecting { last_error } => last_error,
                        _ => Some("the connection ended".into()),
                    };
                    self.set(LinkState::Reconnecting { last_error });
                    self.pause(backoff.next_wait()).await;
                }
                // Refused since the last connection (the event may
                // come after the run loop ended: whatsapp-rust hands
                // events over on a task of their own).
                let refused = self.version.lock().expect("version lock").rejected.is_some();
                if refused && !self.stop.is_cancelled() {
                    let wait = self.after_refusal(backoff).await;
                    self.pause(wait).await;
                }
            }
        }
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
        if let Some(hook) = &self.hook {
            builder = builder.with_inbound_durability_hook(hook.clone());
        }
        if let Some(version) = self.version_to_announce() {
            builder = builder.with_version(version);
        }
        if let Some(phone) = pair_phone {
            let phone_number = phone.trim_start_matches('+').to_string();
            builder = builder.with_pair_code(PairCodeOptions { phone_number, ..Default::default() });
        }
        builder.build().await.map_err(|e| format!("cannot start the WhatsApp client: {e}"))
    }

    /// The version the next bot announces: the one chosen after a refusal,
    /// else the endpoint's fixed one, else whatsapp-rust's choice.
    fn version_to_announce(&self) -> Option<version::Version> {
        self.version.lock().expect("version lock").next.or(self.endpoint.version)
    }

    /// After WhatsApp refused the client version: fetches the current one
    /// and decides what the next bot announces; returns the wait before it.
    pub(super) async fn after_refusal(&self, backoff: &mut Backoff) -> Duration {
        let fetched = self.versions.latest().await;
        if let Err(error) = &fetched {
            tracing::warn!(%error, "cannot fetch the current WhatsApp Web version");
        }
        let (rejected, retry) = {
            let mut versions = self.version.lock().expect("version lock");
            let retry = version::retry_after(versions.rejected, fetched, versions.last_working, backoff);
            versions.next = retry.version;
            (versions.rejected, retry)
        };
        let refused = rejected.map(version::shown).unwrap_or_else(|| "(unknown)".into());
        tracing::warn!(refused, plan = retry.plan, "WhatsApp refused the client version");
        self.set(LinkState::Outdated { version: refused, plan: retry.plan });
        retry.wait
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;
    use whatsapp_rust::prelude::*;
    use whatsapp_rust::store::commands::DeviceCommand;
    use whatsapp_rust::types::events::{ClientOutdated, Connected};
    use whatsapp_rust::wacore::store::InMemoryBackend;

    use super::bot_backoff;
    use crate::channel::whatsapp::session::version::{Version, VersionSource};
    use crate::channel::whatsapp::session::{Endpoint, Session};
    use crate::channel::whatsapp::state::LinkState;
    use crate::util::BoxFuture;

    /// Answers the test wrote, one per fetch; counts the fetches.
    #[derive(Default)]
    struct FakeVersions {
        answers: Mutex<Vec<Result<Version, String>>>,
        asked: Mutex<u32>,
    }

    impl VersionSource for FakeVersions {
        fn latest(&self) -> BoxFuture<'_, Result<Version, String>> {
            *self.asked.lock().unwrap() += 1;
            let answer = self.answers.lock().unwrap().remove(0);
            Box::pin(async move { answer })
        }
    }

    async fn announce(client: &Client, version: Version) {
        client.persistence_manager().process_command(DeviceCommand::SetAppVersion(version)).await;
    }

    /// A refusal ("405") makes relay fetch the current version and build the
    /// next bot with it at once; when that one is refused too and the fetch
    /// fails, it goes back to the last version that connected, after a
    /// backoff. `relay status` says `outdated` with the refused version.
    #[tokio::test(start_paused = true)]
    async fn a_refused_version_is_fetched_again_and_the_last_working_one_kept_if_that_fails() {
        let dir = tempfile::tempdir().unwrap();
        let versions = Arc::new(FakeVersions::default());
        let (session, _events) = Session::new(
            dir.path().join("auth"),
            Endpoint::default(),
            CancellationToken::new(),
            versions.clone(),
            None,
        );
        let bot = Bot::builder().with_backend(InMemoryBackend::new()).build().await.unwrap();
        let client = bot.client();
        let outdated = || Arc::new(Event::ClientOutdated(ClientOutdated::builder().build()));

        announce(&client, (2, 3000, 4)).await;
        session.on_event(Arc::new(Event::Connected(Connected::builder().build())), &client);
        assert_eq!(session.version_to_announce(), None, "whatsapp-rust's own choice while it works");

        // A day later whatsapp-rust announces 5, which WhatsApp refuses; 6 is current.
        announce(&client, (2, 3000, 5)).await;
        session.on_event(outdated(), &client);
        let status = session.state().borrow().status(0, None);
        assert_eq!(status.state, "outdated");
        assert!(status.detail.unwrap().contains("2.3000.5"));
        versions.answers.lock().unwrap().push(Ok((2, 3000, 6)));
        let mut backoff = bot_backoff();
        let wait = session.after_refusal(&mut backoff).await;
        assert_eq!(*versions.asked.lock().unwrap(), 1, "fetched again");
        assert_eq!((wait, session.version_to_announce()), (Duration::ZERO, Some((2, 3000, 6))), "at once, with it");
        assert!(matches!(&*session.state().borrow(), LinkState::Outdated { plan, .. } if plan.contains("2.3000.6")));

        // 6 refused as well, and the fetch fails: back to 4, after the backoff.
        announce(&client, (2, 3000, 6)).await;
        session.on_event(outdated(), &client);
        versions.answers.lock().unwrap().push(Err("no network".into()));
        let wait = session.after_refusal(&mut backoff).await;
        assert_eq!((wait, session.version_to_announce()), (Duration::from_secs(2), Some((2, 3000, 4))));
        let detail = session.state().borrow().status(0, None).detail.unwrap();
        assert!(
            detail.contains("2.3000.6") && detail.contains("no network") && detail.contains("2.3000.4"),
            "{detail}"
        );

        // Connected again: the refusal is over.
        session.on_event(Arc::new(Event::Connected(Connected::builder().build())), &client);
        assert_eq!(*session.state().borrow(), LinkState::Connected);
    }
}
