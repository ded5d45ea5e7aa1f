//! Receipts in-process, on a fake channel: receipts for messages relay did
//! not send change nothing, anywhere. (Delivery end to end is
//! `e2e::delivery`.)

use std::sync::Arc;

/// Receipts for messages relay did not send (the operator's own chats on
/// the linked phone) change nothing, anywhere.
#[test]
fn receipts_for_messages_relay_did_not_send_change_nothing() {
    use relay::api::SendStatus;
    use relay::channel::SentUpdate;

    use crate::support::channel::FakeChannel;
    use crate::support::engine::World;
    use crate::support::test_agent::TestAgent;

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    runtime.block_on(async {
        let agent = Arc::new(TestAgent::new(|_, _| Box::pin(async { Ok(()) })));
        let w = World::start(|_| FakeChannel::default(), agent);
        let files = |home: &relay::home::Home| {
            let mut names: Vec<String> = walk(home.root());
            names.sort();
            names
        };
        let before = files(&w.home);
        for status in [SendStatus::Delivered, SendStatus::Read, SendStatus::Played] {
            let receipt = SentUpdate::Receipt { status, at: chrono::Utc::now() };
            w.channel.sink.get().unwrap().sent_update("3EB0NOT-RELAYS".into(), receipt).await;
        }
        w.channel.sink.get().unwrap().sent_update("3EB0NOT-RELAYS".into(), SentUpdate::Refused("463".into())).await;
        assert_eq!(files(&w.home), before, "no file written, no event logged");
    });
}

/// Every file under `dir`, with its size: what a write would change.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(format!("{} {}", path.display(), std::fs::metadata(&path).unwrap().len()));
        }
    }
    out
}
