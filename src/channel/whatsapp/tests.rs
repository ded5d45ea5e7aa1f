//! The channel against a fake WhatsApp link, on tokio's paused clock:
//! waits, pacing and retries run exactly and instantly.

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

/// A link whose state and send outcomes the test sets, and which records
/// what the channel did, with the (paused) time it did it.
struct FakeLink {
    state: watch::Sender<LinkState>,
    outcomes: Mutex<Vec<Result<String, String>>>,
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
    uploads: Mutex<Vec<Result<(), String>>>,
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
    fn check_number<'a>(&'a self, to: &'a Jid) -> BoxFuture<'a, Result<bool, String>> {
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
    ) -> BoxFuture<'a, Result<String, String>> {
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
    fn prepare_media<'a>(&'a self, media: &'a OutgoingMedia) -> BoxFuture<'a, Result<wa::Message, String>> {
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
    fn reach_out_lock(&self) -> BoxFuture<'_, Result<Option<crate::courtesy::ReachOutLock>, String>> {
        Box::pin(async { Ok(None) })
    }
    fn pair(&self, _phone: Option<String>, _force: bool) -> mpsc::UnboundedReceiver<PairingEvent> {
        mpsc::unbounded_channel().1
    }
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Records what the channel hands the engine; with `in_conversation`, a
/// conversation takes each message.
/// What a fetch the sink started gave.
type Fetched = Result<Vec<u8>, FetchError>;

/// With `fetch_media`, it starts fetching a message's file as the engine
/// does: on a task of its own, after taking the message.
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

#[tokio::test(start_paused = true)]
async fn a_send_shows_typing_for_a_while_then_sends_with_the_message_id() {
    let (channel, link, _) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    let sent = channel.send(&contact(), "Hello! Which day suits you?").await.unwrap();
    assert_eq!(sent.message_id.as_deref(), Some("ID1"));
    let jid = format!("{NUMBER}@s.whatsapp.net");
    assert_eq!(
        link.log(),
        vec![
            (Duration::ZERO, format!("check {jid}")),
            (Duration::ZERO, format!("typing {jid}")),
            (secs(1), format!("send ID1 {jid} Hello! Which day suits you?")),
        ],
        "typing first, for the minimum second (27 characters)"
    );
}

#[tokio::test(start_paused = true)]
async fn messages_to_one_contact_are_spaced_and_the_number_checked_once() {
    let (channel, link, _) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    let to = contact();
    let (a, b) = tokio::join!(channel.send(&to, "one"), channel.send(&to, "two"));
    a.unwrap();
    b.unwrap();
    let sends: Vec<(Duration, String)> = link.log().into_iter().filter(|(_, w)| w.starts_with("send")).collect();
    assert_eq!(sends.len(), 2);
    assert_eq!(sends[1].0 - sends[0].0, Duration::from_millis(2_000), "the minimum gap");
    assert_eq!(link.log().iter().filter(|(_, w)| w.starts_with("check")).count(), 1);
}

#[tokio::test(start_paused = true)]
async fn while_disconnected_a_send_waits_for_the_connection_then_goes_out() {
    let (channel, link, _) = channel(
        FakeLink::new(LinkState::Reconnecting { last_error: Some("StreamEnded".into()) }),
        WhatsappSettings::default(),
    );
    let to = contact();
    let reconnect = async {
        tokio::time::sleep(secs(30)).await;
        link.state.send_replace(LinkState::Connected);
    };
    let (sent, ()) = tokio::join!(channel.send(&to, "hi"), reconnect);
    assert!(sent.is_ok());
    let (at, what) = link.log().into_iter().find(|(_, w)| w.starts_with("send")).unwrap();
    assert!(what.ends_with(" hi"));
    assert_eq!(at, secs(31), "sent after the reconnection, having typed for a second");
}

#[tokio::test(start_paused = true)]
async fn messages_held_by_an_outage_leave_at_the_pace_not_in_a_burst() {
    let settings = WhatsappSettings {
        pacing: pacing::PacingSettings { max_messages_per_minute: 2, ..Default::default() },
        ..WhatsappSettings::default()
    };
    let (channel, link, _) = channel(FakeLink::new(LinkState::Reconnecting { last_error: None }), settings);
    let contacts: Vec<Contact> =
        ["+14155552671", "+14155552672", "+14155552673"].iter().map(|c| Contact::parse(c).unwrap()).collect();
    let reconnect = async {
        tokio::time::sleep(secs(100)).await;
        link.state.send_replace(LinkState::Connected);
    };
    let (a, b, c, ()) = tokio::join!(
        channel.send(&contacts[0], "hi"),
        channel.send(&contacts[1], "hi"),
        channel.send(&contacts[2], "hi"),
        reconnect
    );
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    let times: Vec<Duration> = link.log().into_iter().filter(|(_, w)| w.starts_with("send")).map(|(t, _)| t).collect();
    assert_eq!(times, vec![secs(101), secs(101), secs(161)], "two a minute, counted from the reconnection");
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_never_comes_back_fails_the_send_after_the_wait() {
    let settings = WhatsappSettings { connect_wait_secs: 120, ..WhatsappSettings::default() };
    let (channel, link, _) = channel(FakeLink::new(LinkState::Reconnecting { last_error: None }), settings);
    let start = Instant::now();
    let error = channel.send(&contact(), "hi").await.unwrap_err();
    assert!(
        matches!(&error, ChannelError::Failed { reason, .. } if reason.contains("not connected for 2m")),
        "{error}"
    );
    assert_eq!(start.elapsed(), secs(120), "the two-minute wait, no more");
    assert!(link.sends().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_failing_send_is_retried_with_backoff_under_the_same_id() {
    let link = FakeLink::new(LinkState::Connected);
    *link.outcomes.lock().unwrap() = vec![Err("socket closed".into()), Err("timeout".into())];
    let (channel, link, _) = channel(link, WhatsappSettings::default());
    let sent = channel.send(&contact(), "hi").await.unwrap();
    assert_eq!(sent.message_id.as_deref(), Some("ID1"));
    let sends: Vec<(Duration, String)> = link.log().into_iter().filter(|(_, w)| w.starts_with("send")).collect();
    assert_eq!(sends.len(), 3);
    assert!(sends.iter().all(|(_, w)| w.starts_with("send ID1 ")), "one id, so WhatsApp cannot show it twice");
    // 2 s then 4 s of backoff, each followed by a second of typing.
    assert_eq!(sends.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![secs(1), secs(4), secs(9)]);
}

#[tokio::test(start_paused = true)]
async fn a_send_failing_every_attempt_fails_with_the_last_error() {
    let link = FakeLink::new(LinkState::Connected);
    *link.outcomes.lock().unwrap() = vec![Err("a".into()), Err("b".into()), Err("c: server said no".into())];
    let (channel, link, _) = channel(link, WhatsappSettings::default());
    let error = channel.send(&contact(), "hi").await.unwrap_err();
    assert_eq!(
        error,
        ChannelError::Failed { channel: "whatsapp", reason: "not sent after 3 attempts: c: server said no".into() }
    );
    assert_eq!(link.sends().len(), 3);
}

fn file(kind: MediaKind, name: &str, mime: &str, caption: Option<&str>) -> OutgoingMedia {
    OutgoingMedia {
        kind,
        bytes: vec![7; 2_000],
        mime: mime.into(),
        file_name: name.into(),
        caption: caption.map(Into::into),
    }
}

/// A photo goes as an image and anything else as a document with its name;
/// the typing is for the caption; a failed upload is tried again, and a
/// failed send retried under the same id without a second upload.
#[tokio::test(start_paused = true)]
async fn files_go_as_images_or_documents_uploaded_once_under_one_id() {
    let (whatsapp, link, _) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    let jid = format!("{NUMBER}@s.whatsapp.net");
    let photo = file(MediaKind::Photo, "meter.png", "image/png", Some("The meter"));
    let sent = whatsapp.send_media(&contact(), &photo).await.unwrap();
    assert_eq!(sent.message_id.as_deref(), Some("ID1"));
    let invoice = file(MediaKind::Document, "invoice.pdf", "application/pdf", None);
    whatsapp.send_media(&contact(), &invoice).await.unwrap();
    assert_eq!(
        link.log().into_iter().map(|(_, w)| w).filter(|w| !w.starts_with("typing")).collect::<Vec<_>>(),
        [
            format!("check {jid}"),
            "upload meter.png 2000 bytes".to_string(),
            format!("send ID1 {jid} [image image/png] The meter"),
            "upload invoice.pdf 2000 bytes".to_string(),
            format!("send ID2 {jid} [document invoice.pdf application/pdf]"),
        ]
    );

    let link = FakeLink::new(LinkState::Connected);
    *link.uploads.lock().unwrap() = vec![Err("cannot upload the file: media conn refused".into())];
    *link.outcomes.lock().unwrap() = vec![Err("socket closed".into())];
    let (whatsapp, link, _) = channel(link, WhatsappSettings::default());
    let sent = whatsapp.send_media(&contact(), &photo).await.unwrap();
    assert_eq!(sent.message_id.as_deref(), Some("ID1"));
    let steps: Vec<String> = link.log().into_iter().map(|(_, w)| w).filter(|w| !w.starts_with("typing")).collect();
    assert_eq!(
        steps,
        [
            format!("check {jid}"),
            "upload meter.png 2000 bytes".to_string(),
            "upload meter.png 2000 bytes".to_string(),
            format!("send ID1 {jid} [image image/png] The meter"),
            format!("send ID1 {jid} [image image/png] The meter"),
        ],
        "uploaded again only while no upload had worked; sent again under its id"
    );
    // An upload that never works fails the send with its reason.
    let link = FakeLink::new(LinkState::Connected);
    *link.uploads.lock().unwrap() = vec![Err("cannot upload the file: a".into()); 3];
    let (whatsapp, _, _) = channel(link, WhatsappSettings::default());
    let error = whatsapp.send_media(&contact(), &photo).await.unwrap_err();
    assert_eq!(
        error,
        ChannelError::Failed {
            channel: "whatsapp",
            reason: "not sent after 3 attempts: cannot upload the file: a".into()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn logged_out_or_banned_nothing_is_attempted_and_the_reason_is_given() {
    let (channel, link, _) =
        channel(FakeLink::new(LinkState::LoggedOut { reason: "LoggedOut".into() }), WhatsappSettings::default());
    assert!(channel.ready().unwrap_err().contains("relay init"));
    let error = channel.send(&contact(), "hi").await.unwrap_err();
    assert!(matches!(&error, ChannelError::Unavailable { reason, .. } if reason.contains("logged this device out")));
    assert!(link.log().is_empty(), "nothing attempted");

    // Banned while a send waits for the connection: it stops waiting.
    link.state.send_replace(LinkState::Reconnecting { last_error: None });
    let ban = async {
        tokio::time::sleep(secs(5)).await;
        link.state.send_replace(LinkState::TemporarilyBanned {
            until: "2026-11-24T00:00:00Z".parse().unwrap(),
            reason: "SentToTooManyPeople".into(),
        });
    };
    let to = contact();
    let (result, ()) = tokio::join!(channel.send(&to, "hi"), ban);
    assert!(matches!(result, Err(ChannelError::Unavailable { reason, .. }) if reason.contains("banned")));
    assert!(link.sends().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_number_not_on_whatsapp_fails_at_once() {
    let link = FakeLink { registered: false, ..FakeLink::new(LinkState::Connected) };
    let (channel, link, _) = channel(link, WhatsappSettings::default());
    let error = channel.send(&contact(), "hi").await.unwrap_err();
    assert!(matches!(&error, ChannelError::Failed { reason, .. } if reason.contains("is not on WhatsApp")));
    assert!(link.sends().is_empty());
}

#[tokio::test(start_paused = true)]
async fn incoming_text_reaches_the_engine_with_its_reference_whatever_the_senders_form() {
    let (channel, _, sink) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    // A phone-number sender, a LID with its number alongside, a LID alone
    // (matched through the session's map), and one nobody can match.
    channel.handle_event(&batch(wa::Message::text("by number"), info(Jid::pn(NUMBER), None))).await;
    channel.handle_event(&batch(wa::Message::text("by lid+alt"), info(Jid::lid(LID), Some(Jid::pn(NUMBER))))).await;
    channel.handle_event(&batch(wa::Message::text("by lid"), info(Jid::lid(LID), None))).await;
    channel.handle_event(&batch(wa::Message::text("stranger"), info(Jid::lid("999"), None))).await;
    let mut own = info(Jid::pn(NUMBER), None);
    own.source.is_from_me = true;
    channel.handle_event(&batch(wa::Message::text("from my phone"), own)).await;

    let delivered = sink.delivered.lock().unwrap().clone();
    let texts: Vec<&str> = delivered.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["by number", "by lid+alt", "by lid"]);
    assert!(delivered.iter().all(|m| m.from == contact()));
    assert_eq!(
        delivered[2].reference,
        Some(MessageRef { chat: format!("{LID}@lid"), id: "3EB0C0FFEE".into() }),
        "read receipts go to the chat as WhatsApp addressed it"
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_refusal_is_reported_for_the_message() {
    use whatsapp_rust::types::events::ServerAck;
    let (channel, _, sink) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    let ack = |error: Option<&str>| {
        Event::ServerAck(
            ServerAck::builder().id("ID9".into()).class("message".into()).maybe_error(error.map(Into::into)).build(),
        )
    };
    channel.handle_event(&ack(None)).await;
    channel.handle_event(&ack(Some("463"))).await;
    let refused = sink.updates.lock().unwrap().clone();
    assert_eq!(refused.len(), 1, "a plain ack is not a refusal");
    assert_eq!(refused[0].0, "ID9");
    assert!(matches!(&refused[0].1, SentUpdate::ReachOutLocked(why) if why.contains("error 463")), "463 is the lock");
    channel.handle_event(&ack(Some("479"))).await;
    let refused = sink.updates.lock().unwrap().clone();
    assert!(matches!(&refused[1].1, SentUpdate::Refused(why) if why.contains("error 479")), "other codes are not");
}

/// Every kind of receipt whatsapp-rust reports: the contact's devices'
/// (delivered, inactive, read, played) become statuses for each id they
/// carry; the operator's own devices', retries and unknown kinds none.
#[tokio::test(start_paused = true)]
async fn receipts_become_statuses_of_the_messages_they_name() {
    use whatsapp_rust::types::events::Receipt;
    use whatsapp_rust::wacore::types::presence::ReceiptType as R;
    let (channel, _, sink) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    let at = chrono::DateTime::from_timestamp(1_790_000_000, 0).unwrap();
    let kinds = [
        (R::Delivered, Some(SendStatus::Delivered)),
        (R::Inactive, Some(SendStatus::Delivered)),
        (R::Read, Some(SendStatus::Read)),
        (R::Played, Some(SendStatus::Played)),
        (R::Sent, None),
        (R::Sender, None),
        (R::Retry, None),
        (R::EncRekeyRetry, None),
        (R::ReadSelf, None),
        (R::PlayedSelf, None),
        (R::ServerError, None),
        (R::PeerMsg, None),
        (R::HistorySync, None),
        (R::Other("view".into()), None),
    ];
    for (kind, expected) in kinds {
        sink.updates.lock().unwrap().clear();
        let receipt = Receipt::builder()
            .source(Default::default())
            .message_ids(vec!["A".into(), "B".into()])
            .timestamp(at)
            .r#type(kind.clone())
            .offline(false)
            .build();
        channel.handle_event(&Event::Receipt(receipt)).await;
        let updates = sink.updates.lock().unwrap().clone();
        match expected {
            Some(status) => assert_eq!(
                updates,
                [
                    ("A".to_string(), SentUpdate::Receipt { status, at }),
                    ("B".to_string(), SentUpdate::Receipt { status, at })
                ],
                "{kind:?}"
            ),
            None => assert!(updates.is_empty(), "{kind:?}: {updates:?}"),
        }
    }
}

/// `read_receipts`: on arrival, each message a conversation took is marked
/// read 1 to 4 s after it came (not with the reply), and the engine's
/// after-turn call does nothing more; after the turn, only that call marks
/// them, per chat; never, nothing does. A message no conversation took is
/// left unread.
#[tokio::test(start_paused = true)]
async fn read_receipts_follow_the_setting() {
    use crate::config::ReadReceipts;
    let chat = format!("{LID}@lid");
    let refs =
        vec![MessageRef { chat: chat.clone(), id: "A".into() }, MessageRef { chat: chat.clone(), id: "B".into() }];
    for setting in [ReadReceipts::OnArrival, ReadReceipts::AfterTurn, ReadReceipts::Never] {
        let settings = WhatsappSettings { read_receipts: Some(setting), ..WhatsappSettings::default() };
        let sink = Sink { in_conversation: true, ..Sink::default() };
        let (channel, link, _) = channel_into(FakeLink::new(LinkState::Connected), settings, sink);
        let mut message = info(Jid::lid(LID), Some(Jid::pn(NUMBER)));
        message.id = "A".into();
        channel.handle_event(&batch(wa::Message::text("hola"), message)).await;
        tokio::time::sleep(secs(5)).await;
        let on_arrival: Vec<(Duration, String)> = link.log();
        channel.mark_read(refs.clone()).await;
        let after_turn: Vec<String> = link.log()[on_arrival.len()..].iter().map(|(_, w)| w.clone()).collect();
        match setting {
            ReadReceipts::OnArrival => {
                assert_eq!(on_arrival.len(), 1, "{on_arrival:?}");
                let (at, what) = &on_arrival[0];
                assert_eq!(what, &format!("read {chat} A"));
                assert!((secs(1)..=secs(4)).contains(at), "read after {at:?}");
                assert!(after_turn.is_empty(), "marked once");
            }
            ReadReceipts::AfterTurn => {
                assert!(on_arrival.is_empty());
                assert_eq!(after_turn, [format!("read {chat} A,B")]);
            }
            ReadReceipts::Never => assert!(on_arrival.is_empty() && after_turn.is_empty()),
        }
    }

    // A message no conversation took stays unread.
    let (channel, link, _) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    channel.handle_event(&batch(wa::Message::text("who?"), info(Jid::pn(NUMBER), None))).await;
    tokio::time::sleep(secs(5)).await;
    assert!(link.log().is_empty());
}

/// `presence`: quiet says "unavailable" right after each connection (and
/// again a while after a new push name, once whatsapp-rust's own
/// "available" has gone); available says nothing. Typing before a send stays.
#[tokio::test(start_paused = true)]
async fn quiet_presence_says_unavailable_after_each_connection() {
    use crate::config::Presence;
    use whatsapp_rust::types::events::{Connected, SelfPushNameUpdated};
    let connected = || Event::Connected(Connected::builder().build());
    let renamed = Event::SelfPushNameUpdated(
        SelfPushNameUpdated::builder().from_server(true).old_name("A".into()).new_name("B".into()).build(),
    );

    let (channel, link, _) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    channel.handle_event(&connected()).await;
    assert_eq!(link.log(), [(Duration::ZERO, "unavailable".to_string())]);
    channel.handle_event(&renamed).await;
    channel.handle_event(&connected()).await;
    tokio::time::sleep(secs(5)).await;
    let times: Vec<Duration> = link.log().into_iter().filter(|(_, w)| w == "unavailable").map(|(t, _)| t).collect();
    assert_eq!(times, [Duration::ZERO, Duration::ZERO, secs(3)], "each connection, and after the new name");
    channel.send(&contact(), "hi").await.unwrap();
    assert!(link.log().iter().any(|(_, w)| w.starts_with("typing")), "typing still shown");

    let available = WhatsappSettings { presence: Presence::Available, ..WhatsappSettings::default() };
    let (channel, link, _) = super::tests::channel(FakeLink::new(LinkState::Connected), available);
    channel.handle_event(&connected()).await;
    channel.handle_event(&renamed).await;
    tokio::time::sleep(secs(5)).await;
    assert!(link.log().is_empty(), "{:?}", link.log());
}

/// A message WhatsApp delivers again (same chat, sender and id) reaches the
/// conversation once, also after the channel is opened again on the same
/// file; another id, or the same id from someone else, is a new message.
#[tokio::test(start_paused = true)]
async fn a_message_delivered_again_is_taken_once_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("whatsapp-inbound-ids.jsonl");
    let message = |id: &str, sender: Jid| {
        let mut info = info(sender, None);
        info.id = id.into();
        batch(wa::Message::text(id), info)
    };
    let open = || {
        let sink = Sink { in_conversation: true, ..Sink::default() };
        let (channel, link, sink) =
            channel_into(FakeLink::new(LinkState::Connected), WhatsappSettings::default(), sink);
        (channel.keeping(inbox::Inbox::open(path.clone(), dir.path().join("whatsapp-inbox.jsonl"))), link, sink)
    };
    let texts = |sink: &Sink| sink.delivered.lock().unwrap().iter().map(|m| m.text.clone()).collect::<Vec<_>>();

    let (channel, _, sink) = open();
    channel.handle_event(&message("A", Jid::pn(NUMBER))).await;
    channel.handle_event(&message("A", Jid::pn(NUMBER))).await;
    let device: Jid = format!("{NUMBER}:2@s.whatsapp.net").parse().unwrap();
    channel.handle_event(&message("A", device)).await;
    channel.handle_event(&message("B", Jid::pn(NUMBER))).await;
    channel.handle_event(&message("A", Jid::pn("14155552671"))).await;
    assert_eq!(texts(&sink), ["A", "B", "A"]);
    drop(channel);

    let (channel, _, sink) = open();
    channel.handle_event(&message("A", Jid::pn(NUMBER))).await;
    channel.handle_event(&message("B", Jid::pn(NUMBER))).await;
    channel.handle_event(&message("C", Jid::pn(NUMBER))).await;
    assert_eq!(texts(&sink), ["C"], "after the restart, only the new one");
}

/// `relay status` and `relay doctor` show the client version WhatsApp took.
#[tokio::test(start_paused = true)]
async fn the_status_names_the_client_version_whatsapp_took() {
    let (channel, _, _) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    let status = channel.status();
    assert_eq!((status.state.as_str(), status.version.as_deref()), ("connected", Some("2.3000.1023456789")));
}

fn photo(caption: Option<&str>) -> wa::Message {
    wa::Message { image_message: MessageField::some(image(caption)), ..Default::default() }
}

/// A photo reaches the engine at once with what its message said (the
/// caption as the text too) and no bytes; its `fetch` downloads through the
/// link, with the engine's cap, each time it is called.
#[tokio::test(start_paused = true)]
async fn a_photo_reaches_the_engine_with_its_declared_fields_and_a_fetch_through_the_link() {
    let (channel, link, sink) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    channel.handle_event(&batch(photo(Some("the meter")), info(Jid::pn(NUMBER), None))).await;
    let delivered = sink.delivered.lock().unwrap().clone();
    let [message] = delivered.as_slice() else { panic!("{delivered:?}") };
    assert_eq!(message.text, "the meter");
    let media = message.media.as_ref().unwrap();
    assert_eq!((media.kind, media.declared_mime.as_deref()), (MediaKind::Photo, Some("image/jpeg")));
    assert_eq!((media.declared_bytes, media.declared_sha256), (Some(48_213), Some([0xAB; 32])));
    assert_eq!((media.caption.as_deref(), media.file_name.as_deref(), media.seconds), (Some("the meter"), None, None));
    assert!(link.log().is_empty(), "nothing downloaded yet");

    *link.downloads.lock().unwrap() = vec![Ok(b"jpeg bytes".to_vec())];
    assert_eq!((media.fetch)(25_000_000).await.unwrap(), b"jpeg bytes");
    assert_eq!((media.fetch)(1_000).await.unwrap(), b"the file", "a retry downloads again");
    let downloads: Vec<String> = link.log().into_iter().map(|(_, w)| w).collect();
    assert_eq!(
        downloads,
        ["download /v/t62.7118-24/11_22_33.enc max 25000000", "download /v/t62.7118-24/11_22_33.enc max 1000"]
    );
}

/// What the link says of a failed download is what the engine gets.
#[tokio::test(start_paused = true)]
async fn a_failed_download_reaches_the_engine_as_the_links_error() {
    let (channel, link, sink) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    channel.handle_event(&batch(photo(None), info(Jid::pn(NUMBER), None))).await;
    let fetch = sink.delivered.lock().unwrap()[0].media.as_ref().unwrap().fetch.clone();
    *link.downloads.lock().unwrap() = vec![
        Err(FetchError::fatal("WhatsApp no longer has the file (HTTP 404)")),
        Err(FetchError::retryable("WhatsApp's media server answered HTTP 503")),
    ];
    let gone = fetch(1_000).await.unwrap_err();
    assert_eq!((gone.retryable, gone.reason.as_str()), (false, "WhatsApp no longer has the file (HTTP 404)"));
    assert!(fetch(1_000).await.unwrap_err().retryable);
    assert_eq!(sink.delivered.lock().unwrap()[0].text, "", "no caption, no text");
}

/// The event loop hands a photo on without downloading it: a receipt right
/// behind it is handled at once while the (slow) download runs beside.
#[tokio::test(start_paused = true)]
async fn a_receipt_after_a_photo_whose_download_is_slow_is_handled_at_once() {
    use whatsapp_rust::types::events::Receipt;
    use whatsapp_rust::wacore::types::presence::ReceiptType;
    let link = Arc::new(FakeLink { download_takes: secs(60), ..FakeLink::new(LinkState::Connected) });
    let (events, received) = mpsc::unbounded_channel();
    let channel = WhatsappChannel::with_link(link.clone(), received, WhatsappSettings::default());
    let sink = Arc::new(Sink { in_conversation: true, fetch_media: true, ..Sink::default() });
    channel.attach(sink.clone());

    let at = chrono::DateTime::from_timestamp(1_790_000_000, 0).unwrap();
    let receipt = Receipt::builder()
        .source(Default::default())
        .message_ids(vec!["ID7".into()])
        .timestamp(at)
        .r#type(ReceiptType::Read)
        .offline(false)
        .build();
    events.send(Arc::new(batch(photo(None), info(Jid::pn(NUMBER), None)))).unwrap();
    events.send(Arc::new(Event::Receipt(receipt))).unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(sink.delivered.lock().unwrap().len(), 1);
    assert_eq!(
        sink.updates.lock().unwrap().clone(),
        [("ID7".to_string(), SentUpdate::Receipt { status: SendStatus::Read, at })],
        "the receipt did not wait for the download"
    );
    assert!(link.log().iter().any(|(_, w)| w.starts_with("download")), "the download has started");
    assert!(sink.fetched.lock().unwrap().is_empty(), "and is still running");

    tokio::time::sleep(secs(60)).await;
    assert_eq!(sink.fetched.lock().unwrap().clone(), [Ok(b"the file".to_vec())]);
}

#[tokio::test(start_paused = true)]
async fn a_missed_call_reaches_the_engine_as_the_contacts_call() {
    use whatsapp_rust::types::call::{MissedCall, MissedReason};
    let (channel, link, sink) = channel(FakeLink::new(LinkState::Connected), WhatsappSettings::default());
    let missed = MissedCall::new(Jid::pn(NUMBER), "CALL9".into(), chrono::Utc::now(), MissedReason::Offline);
    channel.handle_event(&Event::MissedCall(missed)).await;
    let delivered = sink.delivered.lock().unwrap().clone();
    assert_eq!(delivered.len(), 1);
    assert_eq!((&delivered[0].from, &delivered[0].act), (&contact(), &Some(crate::channel::InboundAct::Call)));
    assert!(link.sends().is_empty(), "relay never answers or rejects a call");
}
