//! The channel against a fake WhatsApp link, on tokio's paused clock:
//! waits, pacing and retries run exactly and instantly. Here the fake link
//! and the engine's stand-in that the tests share; the tests by topic in
//! the modules below.

use std::sync::Mutex;

use tokio::time::Instant;

use super::inbound::tests::{LID, NUMBER, batch, image, info};
use super::*;
use crate::api::{MediaKind, SendStatus};
use crate::channel::{InboundMessage, InboundOutcome, SentUpdate};
use crate::config::WhatsappSettings;
use whatsapp_rust::buffa;

mod catch_up;
mod durable;
mod receiving;
mod sending;

/// A link whose state and send outcomes the test sets, and which records
/// what the channel did, with the (paused) time it did it.
struct FakeLink {
    state: watch::Sender<LinkState>,
    outcomes: Mutex<Vec<Result<String, LinkError>>>,
    registered: bool,
    lids: Vec<(String, String)>,
    log: Mutex<Vec<(Duration, String)>>,
    start: Instant,
    ids: Mutex<u32>,
    /// What each download gives, in turn (then the same bytes every time),
    /// after `download_takes`.
    downloads: Mutex<Vec<Result<Vec<u8>, FetchError>>>,
    download_takes: Duration,
    /// What each upload gives, in turn (then success every time).
    uploads: Mutex<Vec<Result<(), LinkError>>>,
}

impl FakeLink {
    fn new(state: LinkState) -> FakeLink {
        FakeLink {
            state: watch::Sender::new(state),
            outcomes: Mutex::new(Vec::new()),
            registered: true,
            lids: vec![(LID.into(), NUMBER.into())],
            log: Mutex::new(Vec::new()),
            start: Instant::now(),
            ids: Mutex::new(0),
            downloads: Mutex::new(Vec::new()),
            download_takes: Duration::ZERO,
            uploads: Mutex::new(Vec::new()),
        }
    }

    fn note(&self, what: String) {
        self.log.lock().unwrap().push((self.start.elapsed(), what));
    }

    fn log(&self) -> Vec<(Duration, String)> {
        self.log.lock().unwrap().clone()
    }

    fn sends(&self) -> Vec<String> {
        self.log().into_iter().map(|(_, w)| w).filter(|w| w.starts_with("send")).collect()
    }
}

impl Link for FakeLink {
    fn state(&self) -> watch::Receiver<LinkState> {
        self.state.subscribe()
    }
    fn failed_dials(&self) -> u64 {
        0
    }
    fn phone(&self) -> Option<String> {
        Some("+15550001111".into())
    }
    fn version(&self) -> Option<String> {
        Some("2.3000.1023456789".into())
    }
    fn new_message_id(&self) -> Option<String> {
        let mut n = self.ids.lock().unwrap();
        *n += 1;
        Some(format!("ID{n}"))
    }
    fn check_number<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, Result<bool, LinkError>> {
        self.note(format!("check {to}"));
        Box::pin(async move { Ok(self.registered) })
    }
    fn typing<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, ()> {
        self.note(format!("typing {to}"));
        Box::pin(async {})
    }
    fn send_message<'a>(
        &'a self,
        to: &'a Jid,
        message: wa::Message,
        id: &'a str,
    ) -> BoxFuture<'a, Result<String, LinkError>> {
        // What was sent, as a person would see it.
        let shown =
            match (&message.conversation, message.image_message.as_option(), message.document_message.as_option()) {
                (Some(text), _, _) => text.clone(),
                (_, Some(image), _) => {
                    format!(
                        "[image {}] {}",
                        image.mimetype.as_deref().unwrap_or("-"),
                        image.caption.as_deref().unwrap_or("")
                    )
                }
                (_, _, Some(document)) => format!(
                    "[document {} {}] {}",
                    document.file_name.as_deref().unwrap_or("-"),
                    document.mimetype.as_deref().unwrap_or("-"),
                    document.caption.as_deref().unwrap_or("")
                ),
                _ => "?".into(),
            };
        self.note(format!("send {id} {to} {}", shown.trim_end()));
        let mut outcomes = self.outcomes.lock().unwrap();
        let outcome = if outcomes.is_empty() { Ok(id.to_string()) } else { outcomes.remove(0) };
        Box::pin(async move { outcome })
    }
    fn prepare_media<'a>(&'a self, media: &'a OutgoingMedia) -> BoxFuture<'a, Result<wa::Message, LinkError>> {
        self.note(format!("upload {} {} bytes", media.file_name, media.bytes.len()));
        let mut uploads = self.uploads.lock().unwrap();
        let outcome = if uploads.is_empty() { Ok(()) } else { uploads.remove(0) };
        // What image_message and document_message make of an upload, by hand.
        let (caption, mimetype) = (media.caption.clone(), Some(media.mime.clone()));
        let message = match media.kind {
            MediaKind::Photo => wa::Message {
                image_message: buffa::MessageField::some(wa::message::ImageMessage {
                    caption,
                    mimetype,
                    ..Default::default()
                }),
                ..Default::default()
            },
            _ => wa::Message {
                document_message: buffa::MessageField::some(wa::message::DocumentMessage {
                    caption,
                    mimetype,
                    file_name: Some(media.file_name.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        };
        Box::pin(async move { outcome.map(|()| message) })
    }
    fn mark_read<'a>(&'a self, chat: &'a Jid, ids: &'a [String]) -> BoxFuture<'a, ()> {
        self.note(format!("read {chat} {}", ids.join(",")));
        Box::pin(async {})
    }
    fn download<'a>(&'a self, media: &'a MediaRef, max_bytes: u64) -> BoxFuture<'a, Result<Vec<u8>, FetchError>> {
        self.note(format!("download {} max {max_bytes}", media.direct_path.as_deref().unwrap_or("-")));
        let mut downloads = self.downloads.lock().unwrap();
        let outcome = if downloads.is_empty() { Ok(b"the file".to_vec()) } else { downloads.remove(0) };
        Box::pin(async move {
            tokio::time::sleep(self.download_takes).await;
            outcome
        })
    }
    fn set_unavailable(&self) -> BoxFuture<'_, ()> {
        self.note("unavailable".into());
        Box::pin(async {})
    }
    fn phone_of_lid<'a>(&'a self, lid: &'a Jid) -> BoxFuture<'a, Option<String>> {
        let found = self.lids.iter().find(|(l, _)| *l == lid.user.as_str()).map(|(_, p)| p.clone());
        Box::pin(async move { found })
    }
    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<crate::courtesy::ReachOutLock>, crate::channel::AskError>> {
        Box::pin(async { Ok(None) })
    }
    fn pair(&self, _phone: Option<String>, _force: bool) -> mpsc::UnboundedReceiver<PairingEvent> {
        mpsc::unbounded_channel().1
    }
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// What a fetch the sink started gave.
type Fetched = Result<Vec<u8>, FetchError>;

/// Records what the channel hands the engine; with `in_conversation`, a
/// conversation takes each message. With `fetch_media`, it starts fetching
/// a message's file as the engine does: on a task of its own, after taking
/// the message.
#[derive(Default)]
struct Sink {
    in_conversation: bool,
    delivered: Mutex<Vec<InboundMessage>>,
    updates: Mutex<Vec<(String, SentUpdate)>>,
    fetch_media: bool,
    fetched: Arc<Mutex<Vec<Fetched>>>,
}

impl InboundSink for Sink {
    fn deliver(&self, message: InboundMessage) -> BoxFuture<'_, InboundOutcome> {
        if let Some(media) = message.media.as_ref().filter(|_| self.fetch_media) {
            let (fetch, fetched) = (media.fetch.clone(), self.fetched.clone());
            tokio::spawn(async move {
                let outcome = fetch(1_000_000).await;
                fetched.lock().unwrap().push(outcome);
            });
        }
        self.delivered.lock().unwrap().push(message);
        let taken = if self.in_conversation {
            InboundOutcome::Delivered(uuid::Uuid::nil())
        } else {
            InboundOutcome::NoConversation
        };
        Box::pin(async { taken })
    }
    fn sent_update(&self, message_id: String, update: SentUpdate) -> BoxFuture<'_, ()> {
        self.updates.lock().unwrap().push((message_id, update));
        Box::pin(async {})
    }
    fn channel_changed(&self) {}
}

fn channel(link: FakeLink, settings: WhatsappSettings) -> (WhatsappChannel, Arc<FakeLink>, Arc<Sink>) {
    channel_into(link, settings, Sink::default())
}

fn channel_into(link: FakeLink, settings: WhatsappSettings, sink: Sink) -> (WhatsappChannel, Arc<FakeLink>, Arc<Sink>) {
    let link = Arc::new(link);
    let channel = WhatsappChannel::with_link(link.clone(), mpsc::unbounded_channel().1, settings);
    let sink = Arc::new(sink);
    channel.attach(sink.clone());
    (channel, link, sink)
}

fn contact() -> Contact {
    Contact::parse(&format!("+{NUMBER}")).unwrap()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}
