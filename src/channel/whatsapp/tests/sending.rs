//! Sending: typing, pacing, waiting out a lost connection, retries under
//! one id, files as images or documents, and what is refused at once
//! (logged out, banned, a number not on WhatsApp).

use super::*;
use crate::channel::Blocked;

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
    *link.outcomes.lock().unwrap() =
        vec![Err(LinkError::Refused("socket closed".into())), Err(LinkError::Refused("timeout".into()))];
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
    *link.outcomes.lock().unwrap() = vec![
        Err(LinkError::Refused("a".into())),
        Err(LinkError::Refused("b".into())),
        Err(LinkError::Refused("c: server said no".into())),
    ];
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
    *link.uploads.lock().unwrap() = vec![Err(LinkError::Upload("media conn refused".into()))];
    *link.outcomes.lock().unwrap() = vec![Err(LinkError::Refused("socket closed".into()))];
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
    *link.uploads.lock().unwrap() = vec![Err(LinkError::Upload("a".into())); 3];
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
    assert!(channel.ready().unwrap_err().to_string().contains("relay init"));
    let error = channel.send(&contact(), "hi").await.unwrap_err();
    assert!(matches!(&error, ChannelError::Unavailable { reason: Blocked::LoggedOut { .. }, .. }));
    assert!(error.to_string().contains("logged this device out"), "{error}");
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
    assert!(matches!(result, Err(ChannelError::Unavailable { reason: Blocked::Banned { .. }, .. })));
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
