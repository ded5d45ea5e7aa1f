//! Nothing a contact writes is lost between WhatsApp's acknowledgement and
//! the engine's write: whatsapp-rust's durability hook keeps the message, a
//! new channel on the same home hands it on, and every repeat is dropped.

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use whatsapp_rust::InboundDurabilityHook;
use whatsapp_rust::types::message::MessageSource;

use super::*;
use crate::channel::whatsapp::inbox::{Hook, Inbox};

type WaInbound = whatsapp_rust::wacore::types::events::InboundMessage;

/// Tells the test each message the engine took, and answers as the engine
/// would (`NotRecorded` while it cannot write).
struct Recorder {
    took: mpsc::UnboundedSender<String>,
    updates: mpsc::UnboundedSender<String>,
    down: Arc<Mutex<bool>>,
}

impl InboundSink for Recorder {
    fn deliver(&self, message: InboundMessage) -> BoxFuture<'_, InboundOutcome> {
        let answer = match *self.down.lock().unwrap() {
            true => InboundOutcome::NotRecorded("the disk is full".into()),
            false => {
                let _ = self.took.send(message.text);
                InboundOutcome::NoConversation
            }
        };
        Box::pin(async move { answer })
    }
    fn sent_update(&self, message_id: String, _update: SentUpdate) -> BoxFuture<'_, ()> {
        let _ = self.updates.send(message_id);
        Box::pin(async {})
    }
    fn channel_changed(&self) {}
}

/// A relay home's two files.
struct Home(tempfile::TempDir);

impl Home {
    fn new() -> Home {
        Home(tempfile::tempdir().unwrap())
    }
    fn kept_file(&self) -> PathBuf {
        self.0.path().join("whatsapp-inbox.jsonl")
    }
    fn open(&self) -> Arc<Inbox> {
        Inbox::open(self.0.path().join("whatsapp-inbound-ids.jsonl"), self.kept_file())
    }
    fn kept_lines(&self) -> usize {
        std::fs::read_to_string(self.kept_file()).unwrap_or_default().lines().count()
    }
}

/// A contact's text message as whatsapp-rust decrypts it; its text is its id.
fn message(id: &str) -> WaInbound {
    let mut info = info(Jid::pn(NUMBER), None);
    info.id = id.into();
    WaInbound::builder().message(Arc::new(wa::Message::text(id))).info(Arc::new(info)).build()
}

fn messages_event(messages: &[WaInbound]) -> Arc<Event> {
    let batch = MessageBatch::builder().messages(Arc::from(messages.to_vec())).origin(BatchOrigin::Live).build();
    Arc::new(Event::Messages(batch))
}

async fn client() -> Arc<Client> {
    use whatsapp_rust::wacore::store::InMemoryBackend;
    Bot::builder().with_backend(InMemoryBackend::new()).build().await.unwrap().client()
}

/// A daemon's WhatsApp channel on `home`, attached to a [`Recorder`], its
/// events fed by the test.
struct Daemon {
    inbox: Arc<Inbox>,
    _channel: WhatsappChannel,
    events: mpsc::UnboundedSender<Arc<Event>>,
    took: mpsc::UnboundedReceiver<String>,
    updates: mpsc::UnboundedReceiver<String>,
    down: Arc<Mutex<bool>>,
    settled: u32,
}

impl Daemon {
    fn start(home: &Home) -> Daemon {
        let inbox = home.open();
        let (events, received) = mpsc::unbounded_channel();
        let link = Arc::new(FakeLink::new(LinkState::Connected));
        let channel = WhatsappChannel::with_link(link, received, WhatsappSettings::default()).keeping(inbox.clone());
        let ((took_tx, took), (updates_tx, updates)) = (mpsc::unbounded_channel(), mpsc::unbounded_channel());
        let down = Arc::new(Mutex::new(false));
        channel.attach(Arc::new(Recorder { took: took_tx, updates: updates_tx, down: down.clone() }));
        Daemon { inbox, _channel: channel, events, took, updates, down, settled: 0 }
    }

    /// Returns once the event task has handled everything sent before: a
    /// receipt sent last comes back last.
    async fn settle(&mut self) {
        use whatsapp_rust::types::events::Receipt;
        self.settled += 1;
        let id = format!("SETTLE{}", self.settled);
        let receipt = Receipt::builder()
            .source(Default::default())
            .message_ids(vec![id.clone()])
            .timestamp(crate::clock::now())
            .r#type(whatsapp_rust::wacore::types::presence::ReceiptType::Delivered)
            .offline(false)
            .build();
        self.events.send(Arc::new(Event::Receipt(receipt))).unwrap();
        while self.updates.recv().await.unwrap() != id {}
    }

    /// What the engine took since last asked, in order.
    async fn took(&mut self) -> Vec<String> {
        self.settle().await;
        std::iter::from_fn(|| self.took.try_recv().ok()).collect()
    }
}

/// The hook keeps a contact's message durably and lets whatsapp-rust ack
/// it; what relay does not take (a group's) is not kept.
#[tokio::test]
async fn the_hook_keeps_a_contacts_message_and_lets_it_be_acknowledged() {
    let home = Home::new();
    let hook = Hook(home.open());
    let mut group = info(Jid::pn(NUMBER), None);
    group.source = MessageSource { chat: "120363000000000000@g.us".parse().unwrap(), is_group: true, ..group.source };
    let in_group = WaInbound::builder().message(Arc::new(wa::Message::text("all"))).info(Arc::new(group)).build();

    hook.on_messages(client().await, &[message("A"), in_group]).await.unwrap();

    let waiting = home.open().waiting();
    let [kept] = waiting.as_slice() else { panic!("{waiting:?}") };
    assert_eq!((kept.key.id.as_str(), kept.incoming().unwrap().text.as_str()), ("A", "A"));
    assert_eq!(home.kept_lines(), 1);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(home.kept_file()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "it holds the keys of the contact's files");
}

/// A hook that cannot write returns `Err` (so WhatsApp does not ack and
/// delivers the batch again) and keeps nothing, not even in memory: the
/// batch delivered again is kept whole, once.
#[tokio::test]
async fn a_hook_that_cannot_write_refuses_the_batch_and_keeps_none_of_it() {
    let home = Home::new();
    let inbox = home.open();
    let hook = Hook(inbox.clone());
    let batch = [message("A"), message("B")];
    // A folder where the file should be: every write fails.
    std::fs::create_dir(home.kept_file()).unwrap();

    let refused = hook.on_messages(client().await, &batch).await.unwrap_err();
    assert!(refused.to_string().contains("whatsapp-inbox.jsonl"), "{refused}");
    assert!(inbox.waiting().is_empty());

    std::fs::remove_dir(home.kept_file()).unwrap();
    hook.on_messages(client().await, &batch).await.unwrap();
    let ids: Vec<String> = inbox.waiting().into_iter().map(|k| k.key.id).collect();
    assert_eq!(ids, ["A", "B"]);
    assert_eq!(home.kept_lines(), 2);
}

/// Stopped between the hook's write and the ack: `Event::Messages` never
/// came. The next daemon on the home hands the messages on first, in
/// order, once; then WhatsApp's redelivery (hook and event again) and a
/// repeated event take nothing twice, and the file is compacted.
#[tokio::test]
async fn a_message_kept_before_a_stop_reaches_the_engine_once_after_it() {
    let home = Home::new();
    Hook(home.open()).on_messages(client().await, &[message("A"), message("B")]).await.unwrap();
    // The daemon stops here.

    let mut daemon = Daemon::start(&home);
    assert_eq!(daemon.took().await, ["A", "B"]);
    assert_eq!(home.kept_lines(), 0, "compacted once handed on");

    Hook(daemon.inbox.clone()).on_messages(client().await, &[message("A")]).await.unwrap();
    assert_eq!(home.kept_lines(), 0, "taken already: not kept again");
    daemon.events.send(messages_event(&[message("A")])).unwrap();
    daemon.events.send(messages_event(&[message("B"), message("C")])).unwrap();
    assert_eq!(daemon.took().await, ["C"]);
    drop(daemon);

    let mut daemon = Daemon::start(&home);
    assert_eq!(daemon.took().await, Vec::<String>::new(), "nothing again after another restart");
}

/// What happens to messages, as whatsapp-rust and the daemon may do it.
#[derive(Debug, Clone)]
enum Step {
    /// The hook runs for a batch.
    Commit(Vec<u8>),
    /// `Event::Messages` for a batch (only of what was committed: the
    /// crate dispatches after the hook; it may dispatch again).
    Dispatch(Vec<u8>),
    /// The daemon stops and starts again on the same home.
    Restart,
    /// The engine cannot write (or can again).
    EngineDown(bool),
}

fn step() -> impl Strategy<Value = Step> {
    let batch = || proptest::collection::vec(0u8..6, 1..4);
    prop_oneof![
        batch().prop_map(Step::Commit),
        batch().prop_map(Step::Dispatch),
        Just(Step::Restart),
        any::<bool>().prop_map(Step::EngineDown),
    ]
}

async fn run(steps: Vec<Step>) -> (Vec<String>, BTreeMap<String, usize>) {
    let home = Home::new();
    let mut daemon = Daemon::start(&home);
    let mut committed: Vec<String> = Vec::new();
    let mut took: BTreeMap<String, usize> = BTreeMap::new();
    let batch = |ids: &[u8]| ids.iter().map(|n| message(&format!("M{n}"))).collect::<Vec<_>>();
    for step in steps.into_iter().chain([Step::EngineDown(false), Step::Restart]) {
        match step {
            Step::Commit(ids) => {
                if daemon.inbox.keep(&batch(&ids)).is_ok() {
                    committed.extend(ids.iter().map(|n| format!("M{n}")));
                }
            }
            Step::Dispatch(ids) => {
                let ids: Vec<u8> = ids.into_iter().filter(|n| committed.contains(&format!("M{n}"))).collect();
                daemon.events.send(messages_event(&batch(&ids))).unwrap();
            }
            Step::Restart => {
                for text in daemon.took().await {
                    *took.entry(text).or_default() += 1;
                }
                drop(daemon);
                daemon = Daemon::start(&home);
            }
            Step::EngineDown(down) => {
                daemon.settle().await;
                *daemon.down.lock().unwrap() = down;
            }
        }
    }
    for text in daemon.took().await {
        *took.entry(text).or_default() += 1;
    }
    committed.sort();
    committed.dedup();
    (committed, took)
}

proptest! {
    // Each case writes and fsyncs a few dozen times: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Any run of hook calls, events (repeated or not), restarts and
    /// engine failures: every message committed by the hook reaches the
    /// engine exactly once.
    #[test]
    fn every_kept_message_reaches_the_engine_exactly_once(steps in proptest::collection::vec(step(), 0..24)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (committed, took) = runtime.block_on(run(steps));
        prop_assert_eq!(took.keys().cloned().collect::<Vec<_>>(), committed);
        prop_assert!(took.values().all(|n| *n == 1), "{:?}", took);
    }
}
