//! Receiving: contacts' messages, files and calls reaching the engine,
//! receipts becoming statuses, read receipts and presence as set, a message
//! delivered again taken once, and the client version in the status.

use super::*;

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
