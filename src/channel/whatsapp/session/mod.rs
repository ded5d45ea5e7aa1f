//! The WhatsApp session: one linked device (whatsapp-rust's `Bot`), its
//! keys in `<home>/whatsapp-auth/` (owner-only), kept connected.
//!
//! - this file: the [`Session`] itself, what the channel reads of it, and
//!   the channel's [`Link`](super::Link) to it;
//! - `supervisor.rs`: the task that owns the bot's life (connects,
//!   reconnects, waits for a link or out a ban);
//! - `pairing.rs`: linking a device, and telling whoever asked;
//! - `events.rs`: what whatsapp-rust reports, and what it changes;
//! - `dial.rs`: why a dial failed, in plain words;
//! - `download.rs`: a contact's file, capped, with why it failed;
//! - `version.rs`: the WhatsApp Web version, and what to do when it is refused.
//!
//! It ends when its cancellation token is (by [`Session::shutdown`], or by
//! the daemon's token it was started under), disconnecting cleanly first.

mod dial;
mod download;
mod events;
mod pairing;
mod supervisor;
pub mod version;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use whatsapp_rust::prelude::*;

use super::LinkError;
use super::state::LinkState;
use crate::api::PairingEvent;
use crate::courtesy::ReachOutLock;
use crate::util::BoxFuture;
use pairing::PairOrder;

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
    /// Incoming messages, server acks, receipts, connections and push name
    /// changes, for the channel, in order.
    events: mpsc::UnboundedSender<Arc<Event>>,
    /// Each failed dial, its cause in plain words (for whoever links).
    dial_failures: broadcast::Sender<String>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
    /// Keeps incoming messages before whatsapp-rust acknowledges them.
    hook: Option<super::inbox::Hook>,
    /// Where a fresh WhatsApp Web version comes from after a refusal.
    versions: Arc<dyn version::VersionSource>,
    /// The versions of the refusals: what connected last, what was refused,
    /// and what the next bot announces.
    version: Mutex<Versions>,
}

/// What the session knows of client versions (see `version.rs`).
#[derive(Debug, Default)]
struct Versions {
    /// The version announced when WhatsApp last took the connection.
    last_working: Option<version::Version>,
    /// The version WhatsApp refused last (cleared on connecting).
    rejected: Option<version::Version>,
    /// The version the next bot announces, decided after a refusal.
    next: Option<version::Version>,
}

impl Session {
    /// Starts the supervisor; the receiver gets the events the channel handles.
    pub fn start(auth_dir: PathBuf, endpoint: Endpoint) -> (Arc<Session>, mpsc::UnboundedReceiver<Arc<Event>>) {
        Session::start_with_stop(auth_dir, endpoint, CancellationToken::new(), None)
    }

    /// [`Session::start`], ended by `stop` too, each incoming message kept
    /// by `hook` before it is acknowledged. Cancelling `stop` only signals;
    /// [`Session::shutdown`] waits for the clean disconnect.
    pub fn start_with_stop(
        auth_dir: PathBuf,
        endpoint: Endpoint,
        stop: CancellationToken,
        hook: Option<super::inbox::Hook>,
    ) -> (Arc<Session>, mpsc::UnboundedReceiver<Arc<Event>>) {
        let (session, received) = Session::new(auth_dir, endpoint, stop, Arc::new(version::WebVersion), hook);
        let task = tokio::spawn(session.clone().supervise());
        *session.supervisor.lock().expect("supervisor lock") = Some(task);
        (session, received)
    }

    /// The session, its supervisor not started yet.
    fn new(
        auth_dir: PathBuf,
        endpoint: Endpoint,
        stop: CancellationToken,
        versions: Arc<dyn version::VersionSource>,
        hook: Option<super::inbox::Hook>,
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
            hook,
            versions,
            version: Mutex::new(Versions::default()),
        });
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
}

/// WhatsApp's answer about the reach-out lock, as relay's: `None` unless it
/// is active. Its end comes as a string of Unix seconds (whatsapp-rust's
/// own test has "1770000000"); milliseconds are taken too, and an end that
/// cannot be read is no end (relay asks again within the hour).
fn reach_out_lock(active: Option<bool>, ends: Option<&str>, enforcement: Option<String>) -> Option<ReachOutLock> {
    if active != Some(true) {
        return None;
    }
    let until = ends.and_then(|e| e.trim().parse::<i64>().ok()).and_then(|n| {
        let millis = if n > 100_000_000_000 { n } else { n.saturating_mul(1000) };
        chrono::DateTime::<chrono::Utc>::from_timestamp_millis(millis)
    });
    let now = crate::clock::now();
    Some(ReachOutLock {
        until: until.filter(|u| *u > now),
        since: now,
        source: crate::courtesy::LockSource::Asked,
        enforcement,
    })
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

    fn version(&self) -> Option<String> {
        let versions = self.version.lock().expect("version lock");
        versions.last_working.map(|(a, b, c)| format!("{a}.{b}.{c}"))
    }

    fn new_message_id(&self) -> Option<String> {
        self.client().map(|c| c.generate_message_id())
    }

    fn check_number<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, Result<bool, LinkError>> {
        Box::pin(async move {
            let client = self.client().ok_or(LinkError::NotConnected)?;
            let found = client.contacts().is_on_whatsapp(std::slice::from_ref(to)).await.map_err(refused)?;
            let Some(result) = found.into_iter().next() else { return Err(LinkError::NoAnswer) };
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

    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<ReachOutLock>, crate::channel::AskError>> {
        Box::pin(async move {
            let client = self.client().ok_or(crate::channel::AskError::NotConnected)?;
            let answer = client
                .mex()
                .fetch_reachout_timelock()
                .await
                .map_err(|e| crate::channel::AskError::Failed(e.to_string()))?;
            Ok(reach_out_lock(answer.is_active, answer.time_enforcement_ends.as_deref(), answer.enforcement_type))
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

    fn send_message<'a>(
        &'a self,
        to: &'a Jid,
        message: wa::Message,
        id: &'a str,
    ) -> BoxFuture<'a, Result<String, LinkError>> {
        Box::pin(async move {
            let client = self.client().ok_or(LinkError::NotConnected)?;
            let options = whatsapp_rust::SendOptions::default().with_message_id(id);
            client
                .send_message_with_options(to.clone(), message, options)
                .await
                .map(|sent| sent.message_id)
                .map_err(refused)
        })
    }

    fn prepare_media<'a>(
        &'a self,
        media: &'a crate::channel::OutgoingMedia,
    ) -> BoxFuture<'a, Result<wa::Message, LinkError>> {
        use whatsapp_rust::download::MediaType;
        use whatsapp_rust::media::{DocumentOptions, ImageOptions, document_message, image_message};
        Box::pin(async move {
            let client = self.client().ok_or(LinkError::NotConnected)?;
            let photo = media.kind == crate::api::MediaKind::Photo;
            let kind = if photo { MediaType::Image } else { MediaType::Document };
            let upload = client
                .upload(media.bytes.clone(), kind, Default::default())
                .await
                .map_err(|e| LinkError::Upload(e.to_string()))?;
            let (caption, mimetype) = (media.caption.clone(), Some(media.mime.clone()));
            Ok(match photo {
                true => image_message(upload, ImageOptions { caption, mimetype, ..Default::default() }),
                false => document_message(
                    upload,
                    DocumentOptions {
                        caption,
                        mimetype,
                        file_name: Some(media.file_name.clone()),
                        ..Default::default()
                    },
                ),
            })
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

    fn download<'a>(
        &'a self,
        media: &'a super::inbound::MediaRef,
        max_bytes: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>, crate::media::intake::FetchError>> {
        Box::pin(download::download(self.client(), media, max_bytes))
    }

    fn set_unavailable(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(client) = self.client()
                && let Err(error) = client.presence().set_unavailable().await
            {
                tracing::debug!(%error, "cannot say this device is unavailable");
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

/// What the client library refused, in its words.
fn refused(error: impl std::fmt::Display) -> LinkError {
    LinkError::Refused(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::reach_out_lock;

    #[test]
    fn the_lock_is_read_from_whatsapps_answer() {
        assert_eq!(reach_out_lock(Some(false), Some("4102444800"), None), None);
        assert_eq!(reach_out_lock(None, None, None), None);
        let until = |ends| reach_out_lock(Some(true), Some(ends), Some("DEFAULT".into())).unwrap().until;
        let end = "2100-01-01T00:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap();
        assert_eq!(until("4102444800"), Some(end), "seconds");
        assert_eq!(until("4102444800000"), Some(end), "milliseconds");
        // Unreadable, or already past: no end, so relay asks again later.
        assert_eq!(until("soon"), None);
        assert_eq!(until("1770000000"), None);
    }
}
