//! The WhatsApp session: one linked device (whatsapp-rust's `Bot`), its
//! keys in `<home>/whatsapp-auth/` (owner-only), kept connected.
//!
//! A supervisor task owns the bot's life:
//! - no linked session: nothing connects ("not linked") until a pair request;
//! - a pair request: a bot that shows QR codes (or a phone pairing code),
//!   streamed to whoever asked, and that stays on as the session once linked;
//! - linked: connect; whatsapp-rust reconnects on its own with backoff;
//! - when its run loop ends anyway (a failed connect, a version refused),
//!   a new bot is built after relay's own backoff; logged out or replaced:
//!   wait for `relay init`; temporarily banned: wait until the ban ends.
//!
//! It ends when its cancellation token is (by [`Session::shutdown`], or by
//! the daemon's token it was started under), disconnecting cleanly first.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio::sync::{Notify, broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use whatsapp_rust::pair_code::PairCodeOptions;
use whatsapp_rust::prelude::*;
use whatsapp_rust::transport::TokioWebSocketTransportFactory;
use whatsapp_rust::wacore::net::{Transport, TransportEvent, TransportFactory, WHATSAPP_WEB_WS_URL};
use whatsapp_rust::wacore::store::DevicePropsOverride;

use super::jid;
use super::state::LinkState;
use crate::api::PairingEvent;
use crate::util::{Backoff, BoxFuture};

/// Where the session dials. Tests point it at a local socket; relay itself
/// uses WhatsApp's defaults.
#[derive(Debug, Clone, Default)]
pub struct Endpoint {
    pub ws_url: Option<String>,
    /// A fixed WhatsApp Web version (skips fetching the current one).
    pub version: Option<(u32, u32, u32)>,
}

impl Endpoint {
    /// WhatsApp's own, unless `RELAY_WHATSAPP_URL` names another WebSocket
    /// URL (a proxy in front of WhatsApp, or a test's stand-in).
    pub fn from_env() -> Endpoint {
        let ws_url = std::env::var("RELAY_WHATSAPP_URL").ok().filter(|url| !url.trim().is_empty());
        Endpoint { ws_url, version: None }
    }
}

struct PairOrder {
    phone: Option<String>,
    /// Drop the current session first.
    fresh: bool,
}

pub struct Session {
    auth_dir: PathBuf,
    endpoint: Endpoint,
    state: watch::Sender<LinkState>,
    client: Mutex<Option<Arc<Client>>>,
    phone: Mutex<Option<String>>,
    /// Failed dials of bots built since the last connection, plus those of
    /// the current bot before it connected.
    failed_dials: AtomicU64,
    dials_at_connect: AtomicU64,
    pairing: Mutex<Option<mpsc::UnboundedSender<PairingEvent>>>,
    order: Mutex<Option<PairOrder>>,
    /// Something for the supervisor: a pair order, or a pairing to drop.
    wake: Notify,
    /// Nobody waits for the codes any more (or pairing failed): stop pairing.
    drop_pairing: AtomicBool,
    /// Cancelled: the session disconnects and the supervisor ends.
    stop: CancellationToken,
    /// Incoming messages and server acks, for the channel, in order.
    events: mpsc::UnboundedSender<Arc<Event>>,
    /// Each failed dial, its cause in plain words (for whoever links).
    dial_failures: broadcast::Sender<String>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
}

impl Session {
    /// Starts the supervisor; the receiver gets the events the channel handles.
    pub fn start(auth_dir: PathBuf, endpoint: Endpoint) -> (Arc<Session>, mpsc::UnboundedReceiver<Arc<Event>>) {
        Session::start_with_stop(auth_dir, endpoint, CancellationToken::new())
    }

    /// [`Session::start`], ended by `stop` too. Cancelling `stop` only
    /// signals; [`Session::shutdown`] waits for the clean disconnect.
    pub fn start_with_stop(
        auth_dir: PathBuf,
        endpoint: Endpoint,
        stop: CancellationToken,
    ) -> (Arc<Session>, mpsc::UnboundedReceiver<Arc<Event>>) {
        let (events, received) = mpsc::unbounded_channel();
        // No session file: certainly not linked (known at once, no waiting).
        let first = match auth_dir.join("session.db").exists() {
            true => LinkState::Connecting,
            false => LinkState::NotLinked,
        };
        let session = Arc::new(Session {
            auth_dir,
            endpoint,
            state: watch::Sender::new(first),
            client: Mutex::new(None),
            phone: Mutex::new(None),
            failed_dials: AtomicU64::new(0),
            dials_at_connect: AtomicU64::new(0),
            pairing: Mutex::new(None),
            order: Mutex::new(None),
            wake: Notify::new(),
            drop_pairing: AtomicBool::new(false),
            stop,
            events,
            dial_failures: broadcast::Sender::new(64),
            supervisor: Mutex::new(None),
        });
        let task = tokio::spawn(session.clone().supervise());
        *session.supervisor.lock().expect("supervisor lock") = Some(task);
        (session, received)
    }

    pub fn state(&self) -> watch::Receiver<LinkState> {
        self.state.subscribe()
    }

    pub fn client(&self) -> Option<Arc<Client>> {
        self.client.lock().expect("client lock").clone()
    }

    /// The linked number (E.164), once known.
    pub fn phone(&self) -> Option<String> {
        self.phone.lock().expect("phone lock").clone()
    }

    /// Failed dials since the last connection.
    pub fn failed_dials(&self) -> u64 {
        let current = self.client().map(|c| u64::from(c.stats().reconnect_errors)).unwrap_or(0);
        let since = current.saturating_sub(self.dials_at_connect.load(Ordering::Relaxed));
        self.failed_dials.load(Ordering::Relaxed) + since
    }

    /// Each failed attempt to reach WhatsApp from now on, with its cause
    /// ("cannot resolve web.whatsapp.com ...", "... refused the connection").
    pub fn dial_failures(&self) -> broadcast::Receiver<String> {
        self.dial_failures.subscribe()
    }

    fn dial_failed(&self, cause: String) {
        tracing::warn!(%cause, "cannot reach WhatsApp");
        let _ = self.dial_failures.send(cause);
    }

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

    /// Disconnects cleanly (whatsapp-rust flushes its state) and stops.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let task = self.supervisor.lock().expect("supervisor lock").take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    fn set(&self, state: LinkState) {
        self.state.send_if_modified(|current| {
            let changed = *current != state;
            *current = state;
            changed
        });
    }

    async fn supervise(self: Arc<Self>) {
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

    fn on_event(&self, event: Arc<Event>, client: &Arc<Client>) {
        // Bound first: the read guard must be gone before `set` writes.
        let next = self.state.borrow().after(&event, Utc::now());
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
            Event::Messages(_) | Event::ServerAck(_) => {
                let _ = self.events.send(event.clone());
            }
            _ => {}
        }
    }

    fn tell_pairing(&self, event: PairingEvent) {
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

    fn pairing_failed(&self, reason: &str) {
        tracing::warn!(reason, "WhatsApp pairing failed");
        self.tell_pairing(PairingEvent::Failed { reason: reason.to_string() });
        if *self.state.borrow() == LinkState::Pairing {
            self.drop_pairing.store(true, Ordering::SeqCst);
            self.wake.notify_one();
        }
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

/// whatsapp-rust's WebSocket dialer, telling the session why each dial
/// failed (whatsapp-rust only logs it, and retries).
struct ReportingDialer {
    inner: TokioWebSocketTransportFactory,
    url: String,
    session: Weak<Session>,
}

/// whatsapp-rust gives up on a dial after this long (dropping it).
const DIAL_TIMEOUT: Duration = Duration::from_secs(20);

type Dialed =
    whatsapp_rust::anyhow::Result<(Arc<dyn Transport>, whatsapp_rust::async_channel::Receiver<TransportEvent>)>;

// By hand, what `#[async_trait]` would write (relay does not depend on it).
impl TransportFactory for ReportingDialer {
    fn create_transport<'life0, 'async_trait>(
        &'life0 self,
    ) -> Pin<Box<dyn Future<Output = Dialed> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let mut dial = Dial { dialer: self, started: Instant::now(), settled: false };
            let dialed = self.inner.create_transport().await;
            dial.settled = true;
            if let Err(error) = &dialed {
                self.report(dial_failure(&self.url, &format!("{error:#}")));
            }
            dialed
        })
    }
}

impl ReportingDialer {
    fn report(&self, cause: String) {
        if let Some(session) = self.session.upgrade()
            && !session.stop.is_cancelled()
        {
            session.dial_failed(cause);
        }
    }
}

/// A dial under way: dropped unsettled after whatsapp-rust's timeout, it
/// timed out (dropped sooner, the session is stopping).
struct Dial<'a> {
    dialer: &'a ReportingDialer,
    started: Instant,
    settled: bool,
}

impl Drop for Dial<'_> {
    fn drop(&mut self) {
        if !self.settled && self.started.elapsed() >= DIAL_TIMEOUT - Duration::from_secs(1) {
            let host = host_of(&self.dialer.url);
            self.dialer.report(format!("{host} did not answer within {} s (timed out)", DIAL_TIMEOUT.as_secs()));
        }
    }
}

/// A failed dial in plain words, then the error itself.
fn dial_failure(url: &str, error: &str) -> String {
    let host = host_of(url);
    let lower = error.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let why =
        if has(&["dns", "lookup address", "name resolution", "name or service not known", "no address associated"]) {
            format!("cannot resolve {host} (name resolution failed: no network, or no DNS)")
        } else if has(&["connection refused"]) {
            format!("{host} refused the connection")
        } else if has(&["timed out", "timeout"]) {
            format!("{host} did not answer (timed out)")
        } else if has(&["network is unreachable", "no route to host", "host is unreachable"]) {
            format!("no route to {host} (network unreachable: offline?)")
        } else if has(&["certificate", "tls", "handshake"]) {
            format!("the secure connection to {host} failed (a proxy or firewall in the way?)")
        } else {
            format!("cannot connect to {host}")
        };
    format!("{why}: {error}")
}

/// `web.whatsapp.com` of `wss://web.whatsapp.com/ws/chat`.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?']).next().unwrap_or(rest)
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

/// The session files hold identity keys: owner-only.
fn secure_files(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for name in ["session.db", "session.db-wal", "session.db-shm"] {
        let _ = std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o600));
    }
}

impl super::Link for Session {
    fn state(&self) -> watch::Receiver<LinkState> {
        Session::state(self)
    }

    fn failed_dials(&self) -> u64 {
        Session::failed_dials(self)
    }

    fn phone(&self) -> Option<String> {
        Session::phone(self)
    }

    fn new_message_id(&self) -> Option<String> {
        self.client().map(|c| c.generate_message_id())
    }

    fn check_number<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let client = self.client().ok_or("not connected")?;
            let found = client.contacts().is_on_whatsapp(std::slice::from_ref(to)).await.map_err(|e| e.to_string())?;
            let Some(result) = found.into_iter().next() else { return Err("no answer".into()) };
            // Learn the number's LID now, so its replies (addressed by LID) match.
            if let Some(lid) = &result.lid {
                let learned = client
                    .add_lid_pn_mapping(
                        &lid.user,
                        to.user_base(),
                        whatsapp_rust::wacore::types::lid_pn::LearningSource::Usync,
                    )
                    .await;
                if let Err(error) = learned {
                    tracing::debug!(%error, "cannot store a LID mapping");
                }
            }
            Ok(result.is_registered)
        })
    }

    fn typing<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(client) = self.client()
                && let Err(error) = client.chatstate().send_composing(to).await
            {
                tracing::debug!(%error, "cannot show typing");
            }
        })
    }

    fn send_text<'a>(&'a self, to: &'a Jid, text: &'a str, id: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let client = self.client().ok_or("not connected")?;
            let options = whatsapp_rust::SendOptions::default().with_message_id(id);
            client
                .send_message_with_options(to.clone(), wa::Message::text(text), options)
                .await
                .map(|sent| sent.message_id)
                .map_err(|e| e.to_string())
        })
    }

    fn mark_read<'a>(&'a self, chat: &'a Jid, ids: &'a [String]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(client) = self.client() else { return };
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            if let Err(error) = client.mark_as_read(chat, None, &ids).await {
                tracing::debug!(%error, "cannot mark messages read");
            }
        })
    }

    fn phone_of_lid<'a>(&'a self, lid: &'a Jid) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let client = self.client()?;
            match client.get_lid_pn_entry(lid).await {
                Ok(entry) => entry.map(|e| e.phone_number.to_string()),
                Err(error) => {
                    tracing::debug!(%error, "cannot look up a LID");
                    None
                }
            }
        })
    }

    fn pair(&self, phone: Option<String>, force: bool) -> mpsc::UnboundedReceiver<PairingEvent> {
        Session::pair(self, phone, force)
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(Session::shutdown(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use whatsapp_rust::types::events::{Connected, Disconnected, PairSuccess, PairingQrCode, PairingQrCodesExhausted};
    use whatsapp_rust::wacore::net::DisconnectReason;
    use whatsapp_rust::wacore::store::InMemoryBackend;

    /// A failed dial says why in plain words first, then the error as is.
    #[test]
    fn dial_failures_say_why_in_plain_words() {
        let url = "wss://web.whatsapp.com/ws/chat";
        for (error, plain) in [
            ("WebSocket connect failed: client DNS lookup failed", "cannot resolve web.whatsapp.com"),
            ("failed to lookup address information: Temporary failure in name resolution", "cannot resolve"),
            ("WebSocket connect failed: Connection refused (os error 111)", "web.whatsapp.com refused the connection"),
            ("WebSocket connect failed: connection timed out", "web.whatsapp.com did not answer (timed out)"),
            ("WebSocket connect failed: Network is unreachable (os error 101)", "no route to web.whatsapp.com"),
            ("WebSocket connect failed: invalid peer certificate: UnknownIssuer", "the secure connection"),
            ("something new", "cannot connect to web.whatsapp.com"),
        ] {
            let said = dial_failure(url, error);
            assert!(said.starts_with(plain) && said.ends_with(error), "{error}: {said}");
        }
        assert_eq!(host_of("ws://127.0.0.1:9/ws?x=1"), "127.0.0.1:9");
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
        let mut pairing = {
            let (tx, rx) = mpsc::unbounded_channel();
            *session.pairing.lock().unwrap() = Some(tx);
            rx
        };

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
        let mut pairing = {
            let (tx, rx) = mpsc::unbounded_channel();
            *session.pairing.lock().unwrap() = Some(tx);
            rx
        };
        session.set(LinkState::Pairing);
        let qr = PairingQrCode::builder().code("2@ref,key,id,adv,1".into()).timeout(Duration::from_secs(60)).build();
        feed(Event::PairingQrCode(qr));
        let shown = pairing.recv().await.unwrap();
        assert_eq!(shown, PairingEvent::Qr { code: "2@ref,key,id,adv,1".into(), expires_in_secs: 60 });
        feed(Event::PairingQrCodesExhausted(PairingQrCodesExhausted::builder().disconnected(true).build()));
        assert!(matches!(pairing.recv().await.unwrap(), PairingEvent::Failed { reason } if reason.contains("ran out")));
        assert_eq!(*session.state().borrow(), LinkState::NotLinked);

        let batch = super::super::inbound::tests::batch(
            wa::Message::text("hola"),
            super::super::inbound::tests::info(Jid::pn("56912345678"), None),
        );
        feed(batch);
        assert!(matches!(&*events.recv().await.unwrap(), Event::Messages(_)));
        session.shutdown().await;
    }
}
