//! The sandbox channel: simulated contacts inside the daemon, for trying
//! relay and for tests. `relay sandbox say` plays a contact writing in;
//! `relay sandbox outbox` shows what relay sent. Nothing leaves the machine.
//! The outbox is kept in `sandbox-outbox.jsonl` so it survives restarts
//! (without fsync: it is the simulation's, and a line a power cut damaged
//! is skipped).
//!
//! Each contact has a simulated phone that sends receipts as WhatsApp's do:
//! it gets a message at once (`delivered`) and reads what it has when the
//! contact writes back. `relay sandbox offline +NUMBER` holds what is sent
//! to it (it stays `sent`), `online` delivers what was held, `read` reads
//! everything. Which phones are offline, what they hold and the last message
//! each contact read are kept in `sandbox-phones.json` (what is unread
//! follows from the outbox), so a restart changes nothing for the phones.
//!
//! `relay sandbox lock --until 2h` simulates WhatsApp's reach-out lock:
//! while it holds, a message to a contact that has neither written nor had
//! a message delivered is refused with error 463, and asking about the lock
//! says it holds (unless `--unreported`). `relay sandbox unlock` lifts it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::{
    Blocked, Channel, ChannelError, InboundMedia, InboundMessage, InboundOutcome, InboundSink, MessageRef,
    OutgoingMedia, Sent, SentUpdate,
};
use crate::api::{ChannelStatus, OutboxEntry, OutboxMedia, PhoneAction, PhoneResponse, SandboxLockState};
use crate::contact::Contact;
use crate::courtesy::{LockSource, ReachOutLock};
use crate::home::Home;
use crate::store::{self, StoreError, atomic};
use crate::util::BoxFuture;

pub struct SandboxChannel {
    outbox_file: PathBuf,
    outbox: Mutex<Vec<OutboxEntry>>,
    phones_file: PathBuf,
    phones: Mutex<Phones>,
    inbound: OnceLock<Arc<dyn InboundSink>>,
    link: link::Link,
}

mod link;
mod phones;

use phones::{Phones, REFUSED_463, Receipts, SimulatedLock, read_outbox};

impl SandboxChannel {
    pub fn open(home: &Home) -> Result<SandboxChannel, StoreError> {
        let outbox_file = home.sandbox_outbox_file();
        let outbox = read_outbox(&outbox_file)?;
        let phones_file = home.sandbox_phones_file();
        let read = std::fs::read(&phones_file).ok().map(|bytes| serde_json::from_slice::<Phones>(&bytes));
        let mut phones = match read {
            Some(Ok(phones)) => phones,
            Some(Err(error)) => {
                // Written without fsync (see `save`): a power cut may leave it empty.
                tracing::warn!(%error, "the simulated phones' state did not read; they start afresh");
                Phones::default()
            }
            None => Phones::default(),
        };
        phones.unread_from(&outbox);
        Ok(SandboxChannel {
            outbox_file,
            outbox: Mutex::new(outbox),
            phones_file,
            phones: Mutex::new(phones),
            inbound: OnceLock::new(),
            link: link::Link::default(),
        })
    }

    /// A simulated contact writes to relay, exactly as a WhatsApp message
    /// would arrive. A phone that writes is online, and its contact has
    /// read what it holds: its receipts go first.
    pub async fn say(&self, from: Contact, text: String) -> InboundOutcome {
        self.deliver(InboundMessage::new(from, text)).await
    }

    /// The contact sends `media` (a photo, voice note or file whose bytes
    /// its `fetch` gives).
    pub async fn say_media(&self, from: Contact, media: InboundMedia) -> InboundOutcome {
        self.deliver(InboundMessage::with_media(from, media)).await
    }

    /// `message` reaches relay: the contact's (their phone comes online and
    /// reads what it holds), or the operator's own, written on their phone
    /// in the contact's chat (with a WhatsApp-like id of its own).
    pub async fn deliver(&self, mut message: InboundMessage) -> InboundOutcome {
        let from = message.from.clone();
        let Some(sink) = self.inbound.get() else { return InboundOutcome::NoConversation };
        // Every message has a WhatsApp-like id, which a reaction or an edit names.
        let id = format!("3EB0{}", uuid::Uuid::new_v4().simple()).to_uppercase();
        message.reference.get_or_insert(MessageRef { chat: from.to_string(), id });
        if message.by_operator {
            return sink.deliver(message).await;
        }
        let was_offline = self.phones.lock().expect("phones lock").offline.contains(from.as_str());
        if was_offline && let Err(error) = self.phone(&from, PhoneAction::Online).await {
            tracing::warn!(%error, "cannot bring a sandbox phone online");
        }
        let _ = self.phone(&from, PhoneAction::Read).await;
        let newly_known = self.phones.lock().expect("phones lock").known.insert(from.to_string());
        if newly_known && let Err(error) = self.save(&self.phones.lock().expect("phones lock")) {
            tracing::warn!(%error, "cannot record that a sandbox contact wrote");
        }
        sink.deliver(message).await
    }

    /// `relay sandbox lock`: WhatsApp's reach-out lock, for `lasts`. With
    /// `reported` false, asking about it says no lock holds; only a refused
    /// message (error 463) reveals it.
    pub fn lock(&self, lasts: std::time::Duration, reported: bool) -> Result<SandboxLockState, StoreError> {
        let until = crate::clock::now() + chrono::Duration::from_std(lasts).unwrap_or(chrono::Duration::MAX);
        self.set_lock(Some(SimulatedLock { until, reported }))
    }

    /// `relay sandbox unlock`: the lock ends now, and relay is told (as
    /// WhatsApp's notice of a lifted lock would tell it).
    pub fn unlock(&self) -> Result<SandboxLockState, StoreError> {
        self.set_lock(None)
    }

    fn set_lock(&self, lock: Option<SimulatedLock>) -> Result<SandboxLockState, StoreError> {
        let state = {
            let mut phones = self.phones.lock().expect("phones lock");
            phones.lock = lock;
            self.save(&phones)?;
            lock_state(phones.lock())
        };
        if let Some(sink) = self.inbound.get() {
            sink.reach_out_changed();
        }
        Ok(state)
    }

    /// `relay sandbox offline|online|read`: the phone acts, and its receipts
    /// are recorded by relay before this returns. The phone's file is
    /// written after them: a kill in between leaves the phone holding what
    /// relay has already recorded, and acting again changes nothing twice.
    pub async fn phone(&self, contact: &Contact, action: PhoneAction) -> Result<PhoneResponse, StoreError> {
        let (receipts, response, before) = {
            let mut phones = self.phones.lock().expect("phones lock");
            let before = serde_json::to_vec(&*phones).expect("phones serialise");
            let (receipts, response) = phones.act(contact.as_str(), action);
            (receipts, response, before)
        };
        self.receipts(receipts).await;
        // Written only when what is kept changed: `sandbox say` reads what
        // the phone has each time, most often nothing.
        let phones = self.phones.lock().expect("phones lock");
        if serde_json::to_vec(&*phones).expect("phones serialise") != before {
            self.save(&phones)?;
        }
        Ok(response)
    }

    /// The simulated phones' state is the simulation's, not relay's: kept
    /// across restarts, not across a power cut, so a contact's message costs
    /// relay's path no fsync for it.
    fn save(&self, phones: &Phones) -> Result<(), StoreError> {
        atomic::replace_unsynced(&self.phones_file, &store::to_pretty_json(phones))
            .map_err(|source| StoreError::Write { path: self.phones_file.display().to_string(), source })
    }

    async fn receipts(&self, receipts: Receipts) {
        let Some(sink) = self.inbound.get() else { return };
        let at = crate::clock::now();
        for (id, status) in receipts {
            sink.sent_update(id, SentUpdate::Receipt { status, at }).await;
        }
    }

    /// A message (or a file, with `text` its caption) reaches `to`'s phone:
    /// into the outbox, and the phone's receipts follow a moment later.
    fn to_phone(&self, to: &Contact, text: String, media: Option<OutboxMedia>) -> Result<Sent, ChannelError> {
        let id = format!("SANDBOX-{}", uuid::Uuid::new_v4().simple());
        // As WhatsApp: the send is taken, and refused a moment later. It
        // reaches no one, so the outbox does not show it.
        if self.phones.lock().expect("phones lock").refuses(to.as_str()) {
            if let Some(sink) = self.inbound.get().cloned() {
                let refused = id.clone();
                tokio::spawn(async move {
                    sink.sent_update(refused, SentUpdate::ReachOutLocked(REFUSED_463.into())).await;
                });
            }
            return Ok(Sent { message_id: Some(id) });
        }
        let entry = OutboxEntry {
            contact: to.to_string(),
            text,
            timestamp: crate::clock::now(),
            message_id: Some(id.clone()),
            media,
        };
        let line = serde_json::to_vec(&entry).expect("outbox entries serialise");
        let receipts = {
            // The lock orders file and memory alike.
            let mut outbox = self.outbox.lock().expect("outbox lock");
            atomic::append_line_unsynced(&self.outbox_file, &line)
                .map(drop)
                .map_err(|e| ChannelError::Rejected { channel: "sandbox", reason: e.to_string() })?;
            outbox.push(entry);
            let mut phones = self.phones.lock().expect("phones lock");
            let receipts = phones.sent(to.as_str(), &id);
            if receipts.is_empty() && self.save(&phones).is_err() {
                tracing::warn!("cannot record what an offline sandbox phone holds");
            }
            receipts
        };
        // The phone answers as a real one does, a moment after the send
        // (relay holds a receipt that comes before it recorded the send).
        if let Some(sink) = self.inbound.get().cloned() {
            let at = crate::clock::now();
            tokio::spawn(async move {
                for (id, status) in receipts {
                    sink.sent_update(id, SentUpdate::Receipt { status, at }).await;
                }
            });
        }
        Ok(Sent { message_id: Some(id) })
    }

    /// What relay sent, oldest first, optionally to one contact only.
    pub fn outbox(&self, contact: Option<&Contact>) -> Vec<OutboxEntry> {
        let outbox = self.outbox.lock().expect("outbox lock");
        outbox.iter().filter(|e| contact.is_none_or(|c| e.contact == c.as_str())).cloned().collect()
    }
}

fn lock_state(lock: Option<SimulatedLock>) -> SandboxLockState {
    SandboxLockState { locked: lock.is_some(), until: lock.map(|l| l.until), reported: lock.is_none_or(|l| l.reported) }
}

impl Channel for SandboxChannel {
    fn attach(&self, inbound: Arc<dyn InboundSink>) {
        let _ = self.inbound.set(inbound);
    }

    fn name(&self) -> &'static str {
        "sandbox"
    }

    fn status(&self) -> ChannelStatus {
        let offline = self.is_offline();
        ChannelStatus {
            kind: "sandbox".into(),
            state: if offline { "offline (simulated: relay sandbox online)" } else { "connected (simulated contacts)" }
                .into(),
            connected: !offline,
            detail: None,
            phone: None,
            version: None,
            catching_up: self.catching_up(),
            missing: self.missed_span(),
        }
    }

    fn ready(&self) -> Result<(), Blocked> {
        match self.is_offline() {
            true => Err(Blocked::SimulatedOffline),
            false => Ok(()),
        }
    }

    fn catching_up(&self) -> bool {
        self.link.catch_up.running()
    }

    fn missed_span(&self) -> Option<crate::api::MissedSpan> {
        self.link.catch_up.missed()
    }

    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<ReachOutLock>, crate::channel::AskError>> {
        let lock = self.phones.lock().expect("phones lock").lock().filter(|l| l.reported);
        Box::pin(async move {
            Ok(lock.map(|l| ReachOutLock {
                until: Some(l.until),
                since: crate::clock::now(),
                source: LockSource::Asked,
                enforcement: Some("SANDBOX".into()),
            }))
        })
    }

    fn send<'a>(&'a self, to: &'a Contact, text: &'a str) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        Box::pin(async move { self.to_phone(to, text.to_string(), None) })
    }

    fn send_media<'a>(
        &'a self,
        to: &'a Contact,
        media: &'a OutgoingMedia,
    ) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        Box::pin(async move {
            let file = OutboxMedia {
                kind: media.kind,
                mime: media.mime.clone(),
                bytes: media.bytes.len() as u64,
                sha256: crate::store::media::sha256_hex(&media.bytes),
                file_name: media.file_name.clone(),
            };
            self.to_phone(to, media.caption.clone().unwrap_or_default(), Some(file))
        })
    }

    fn reports_delivery(&self) -> bool {
        true
    }

    fn as_sandbox(&self) -> Option<&SandboxChannel> {
        Some(self)
    }
}

/// A file a simulated contact sends, as the engine receives it: what its
/// message says (`media`), and a fetch that gives `bytes`, after failing
/// `media.fail_downloads` times as a bad network would.
pub fn file_from_phone(media: crate::api::SandboxMedia, bytes: Vec<u8>, caption: Option<String>) -> InboundMedia {
    let failures = media.fail_downloads;
    let tries = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let bytes: Arc<[u8]> = bytes.into();
    let declared_bytes = Some(bytes.len() as u64);
    let declared_mime = media.mime.or_else(|| Some(crate::media::sniff::sniff(&bytes).mime.to_string()));
    let fetch: crate::media::Fetch = Arc::new(move |_max| {
        let attempt = tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let bytes = bytes.clone();
        Box::pin(async move {
            if attempt < failures {
                Err(crate::media::FetchError::retryable(
                    "the sandbox's network failed this download (--fail-downloads)",
                ))
            } else {
                Ok(bytes.to_vec())
            }
        })
    });
    InboundMedia {
        kind: media.kind,
        declared_mime,
        declared_bytes,
        declared_sha256: None,
        seconds: media.seconds,
        file_name: media.file_name,
        caption,
        fetch,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use proptest::prelude::*;

    use super::*;
    use crate::api::SendStatus;

    #[derive(Debug, Clone)]
    enum Op {
        Send(usize),
        Act(usize, PhoneAction),
        /// The daemon restarts: the phones are read back from their file
        /// and the outbox.
        Restart,
    }

    fn op() -> impl Strategy<Value = Op> {
        let action = prop_oneof![Just(PhoneAction::Offline), Just(PhoneAction::Online), Just(PhoneAction::Read)];
        prop_oneof![
            4 => (0..3usize).prop_map(Op::Send),
            3 => (0..3usize, action).prop_map(|(c, a)| Op::Act(c, a)),
            1 => Just(Op::Restart),
        ]
    }

    /// A file reaches the outbox as what it is (kind, type, size, hash and
    /// name), its caption as the text; the file itself is not copied.
    #[tokio::test]
    async fn a_file_sent_is_in_the_outbox_with_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = SandboxChannel::open(&Home::at(dir.path())).unwrap();
        let to = Contact::parse("+56912345678").unwrap();
        let media = OutgoingMedia {
            kind: crate::api::MediaKind::Document,
            bytes: b"abc".to_vec(),
            mime: "text/plain".into(),
            file_name: "notes.txt".into(),
            caption: Some("the notes".into()),
        };
        let sent = sandbox.send_media(&to, &media).await.unwrap();
        let outbox = sandbox.outbox(None);
        assert_eq!(outbox.len(), 1);
        assert_eq!((outbox[0].text.as_str(), &outbox[0].message_id), ("the notes", &sent.message_id));
        let file = outbox[0].media.as_ref().unwrap();
        assert_eq!(file.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!((file.bytes, file.file_name.as_str(), file.mime.as_str()), (3, "notes.txt", "text/plain"));
        // Read back after a restart, as the file keeps it.
        let again = SandboxChannel::open(&Home::at(dir.path())).unwrap();
        assert_eq!(again.outbox(None), outbox);
    }

    proptest! {
        /// Whatever is sent, however phones go offline, come back and read,
        /// and across restarts: a message is delivered once, at most, and
        /// never while its phone is offline; read once, at most, and only
        /// once delivered; an offline phone sends nothing (what is read
        /// meanwhile is told when it is back); and a phone that comes back
        /// delivers all it held.
        #[test]
        fn simulated_phones_receipt_like_real_ones(ops in proptest::collection::vec(op(), 1..60)) {
            let contact = |c: usize| format!("+5691234567{c}");
            let mut phones = Phones::default();
            let mut outbox: Vec<OutboxEntry> = Vec::new();
            let mut offline = [false; 3];
            let mut seen: HashMap<String, Vec<SendStatus>> = HashMap::new();
            for (n, op) in ops.into_iter().enumerate() {
                let receipts = match op {
                    Op::Send(c) => {
                        let id = format!("M{n}");
                        outbox.push(OutboxEntry {
                            contact: contact(c),
                            text: String::new(),
                            timestamp: crate::clock::now(),
                            message_id: Some(id.clone()),
                            media: None,
                        });
                        seen.insert(id.clone(), Vec::new());
                        let receipts = phones.sent(&contact(c), &id);
                        prop_assert_eq!(receipts.is_empty(), offline[c]);
                        receipts
                    }
                    Op::Act(c, action) => {
                        let held_before = phones.held.get(&contact(c)).map_or(0, Vec::len);
                        let (receipts, response) = phones.act(&contact(c), action);
                        offline[c] = action == PhoneAction::Offline || (offline[c] && action == PhoneAction::Read);
                        prop_assert_eq!(response.online, !offline[c]);
                        prop_assert!(!offline[c] || receipts.is_empty(), "an offline phone sent {:?}", receipts);
                        if action == PhoneAction::Online {
                            prop_assert_eq!(response.delivered as usize, held_before);
                            prop_assert_eq!(response.held, 0);
                        }
                        receipts
                    }
                    Op::Restart => {
                        let saved = serde_json::to_vec(&phones).unwrap();
                        let mut again: Phones = serde_json::from_slice(&saved).unwrap();
                        again.unread_from(&outbox);
                        let unread = |p: &Phones| p.unread.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (k.clone(), v.clone())).collect::<BTreeMap<_, _>>();
                        prop_assert_eq!(unread(&again), unread(&phones));
                        phones = again;
                        Vec::new()
                    }
                };
                for (id, status) in receipts {
                    let said = seen.get_mut(&id).expect("a receipt for a message sent");
                    prop_assert!(!said.contains(&status), "{} {:?} twice", id, status);
                    if status == SendStatus::Read {
                        prop_assert!(said.contains(&SendStatus::Delivered), "{} read before delivered", id);
                    }
                    said.push(status);
                }
            }
        }
    }
}
