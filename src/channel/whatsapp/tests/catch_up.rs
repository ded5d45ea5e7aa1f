//! WhatsApp's offline catch-up: from the start until the messages that came
//! while relay was away are in, the channel says it is catching up (so the
//! engine holds follow-ups and first messages), and its end wakes the engine.

use std::sync::atomic::{AtomicUsize, Ordering};

use whatsapp_rust::types::events::{Connected, OfflineSyncCompleted, OfflineSyncPreview};

use super::*;

/// Counts how often the engine is told the channel changed.
#[derive(Default)]
struct Woken(AtomicUsize);

impl InboundSink for Woken {
    fn deliver(&self, _message: InboundMessage) -> BoxFuture<'_, InboundOutcome> {
        Box::pin(async { InboundOutcome::NoConversation })
    }
    fn sent_update(&self, _message_id: String, _update: SentUpdate) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn channel_changed(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn preview(messages: i32) -> Event {
    Event::OfflineSyncPreview(
        OfflineSyncPreview::builder()
            .total(messages + 1)
            .app_data_changes(0)
            .messages(messages)
            .notifications(1)
            .receipts(0)
            .calls(0)
            .statuses(0)
            .build(),
    )
}

/// Catching up from the start; over when WhatsApp says its queue is in
/// (or, failing that, when it says it is connected), which wakes the
/// engine once; again while a reconnection brings messages, not when it
/// brings none; never while the link is blocked (the conversations say so).
#[tokio::test(start_paused = true)]
async fn the_channel_catches_up_until_whatsapps_offline_queue_is_in() {
    let link = Arc::new(FakeLink::new(LinkState::Connecting));
    let channel = WhatsappChannel::with_link(link.clone(), mpsc::unbounded_channel().1, WhatsappSettings::default());
    let sink = Arc::new(Woken::default());
    channel.attach(sink.clone());
    let woken = || sink.0.load(Ordering::SeqCst);
    assert!(channel.catching_up() && channel.status().catching_up, "from the start");

    channel.handle_event(&Event::OfflineSyncCompleted(OfflineSyncCompleted::builder().count(4).build())).await;
    assert!(!channel.catching_up() && !channel.status().catching_up);
    assert_eq!(woken(), 1, "the engine is told");

    channel.handle_event(&preview(0)).await;
    assert!(!channel.catching_up(), "nothing a contact wrote is coming");
    channel.handle_event(&preview(2)).await;
    assert!(channel.catching_up(), "a reconnection brings messages");
    channel.handle_event(&Event::Connected(Connected::builder().build())).await;
    assert!(!channel.catching_up());
    channel.handle_event(&Event::Connected(Connected::builder().build())).await;
    assert_eq!(woken(), 2, "once per catch-up");

    channel.handle_event(&preview(1)).await;
    link.state.send_replace(LinkState::LoggedOut { reason: "LoggedOut".into() });
    assert!(!channel.catching_up(), "blocked: the conversations wait for the link instead");
}
