//! The fake channel of the in-process engine tests: what a send does is up
//! to the test (outcomes queued one by one, or a policy that decides each
//! send, slow ones included), and it records what went out, the ids it gave
//! and the read receipts. A test may also hold every send at a gate, and
//! make the channel not ready, as WhatsApp logged out or banned would.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use relay::api::ChannelStatus;
use relay::channel::{Blocked, Channel, ChannelError, InboundSink, MessageRef, Sent};
use relay::contact::Contact;
use relay::util::BoxFuture;
use tokio::sync::{Notify, Semaphore};

pub type Outcome = Result<Sent, ChannelError>;

/// Decides one send's outcome, taking its time if it likes (a slow send).
pub type Policy = dyn Fn(&Contact, &str) -> BoxFuture<'static, Outcome> + Send + Sync;

pub struct FakeChannel {
    /// Why it cannot send, while it cannot.
    pub ready: Mutex<Option<Blocked>>,
    /// Outcomes of the next sends, in order; when none is left, the policy decides.
    outcomes: Mutex<VecDeque<Outcome>>,
    policy: Box<Policy>,
    /// When set, each send first waits for a permit.
    gate: OnceLock<Arc<Semaphore>>,
    sent: Mutex<Vec<String>>,
    /// The channel ids of the messages it took (for late refusals).
    taken: Mutex<Vec<String>>,
    pub read: Mutex<Vec<MessageRef>>,
    pub read_marked: Notify,
    pub sink: OnceLock<Arc<dyn InboundSink>>,
    /// Taking what came while relay was away, until [`FakeChannel::caught_up`].
    catching_up: AtomicBool,
}

impl Default for FakeChannel {
    /// Every send succeeds at once, with no channel id.
    fn default() -> FakeChannel {
        FakeChannel::new(|_, _| Box::pin(async { Ok(Sent::default()) }))
    }
}

impl FakeChannel {
    pub fn new(policy: impl Fn(&Contact, &str) -> BoxFuture<'static, Outcome> + Send + Sync + 'static) -> FakeChannel {
        FakeChannel {
            ready: Mutex::new(None),
            outcomes: Mutex::new(VecDeque::new()),
            policy: Box::new(policy),
            gate: OnceLock::new(),
            sent: Mutex::new(Vec::new()),
            taken: Mutex::new(Vec::new()),
            read: Mutex::new(Vec::new()),
            read_marked: Notify::new(),
            sink: OnceLock::new(),
            catching_up: AtomicBool::new(false),
        }
    }

    /// Holds every send until the test adds a permit to the gate returned.
    pub fn gated(&self) -> Arc<Semaphore> {
        let gate = Arc::new(Semaphore::new(0));
        self.gate.set(gate.clone()).expect("one gate");
        gate
    }

    /// Not ready, for this reason, until [`FakeChannel::unblock`].
    pub fn block(&self, reason: Blocked) {
        *self.ready.lock().unwrap() = Some(reason);
    }

    /// Catching up (as WhatsApp after a while away), until [`FakeChannel::caught_up`].
    pub fn catch_up(&self) {
        self.catching_up.store(true, Ordering::SeqCst);
    }

    /// Caught up, and the engine told so.
    pub fn caught_up(&self) {
        self.catching_up.store(false, Ordering::SeqCst);
        if let Some(sink) = self.sink.get() {
            sink.channel_changed();
        }
    }

    /// The next send not yet scripted has this outcome.
    pub fn then(&self, outcome: Outcome) {
        self.outcomes.lock().unwrap().push_back(outcome);
    }

    /// Ready again, and the engine told so.
    pub fn unblock(&self) {
        *self.ready.lock().unwrap() = None;
        if let Some(sink) = self.sink.get() {
            sink.channel_changed();
        }
    }

    /// The texts it took, in order.
    pub fn sent(&self) -> Vec<String> {
        self.sent.lock().unwrap().clone()
    }

    /// The channel ids of the messages it took, in order.
    pub fn taken(&self) -> Vec<String> {
        self.taken.lock().unwrap().clone()
    }

    /// WhatsApp refuses, after the fact, the message it took as `id`.
    pub async fn refused_later(&self, id: String, code: &str) {
        if let Some(sink) = self.sink.get() {
            sink.sent_update(id, relay::channel::SentUpdate::Refused(code.into())).await;
        }
    }

    /// The contact's phone reports `status` (delivered, read, played) for
    /// the message taken as `id`.
    pub async fn receipt(&self, id: String, status: relay::api::SendStatus) {
        if let Some(sink) = self.sink.get() {
            let at = chrono::Utc::now();
            sink.sent_update(id, relay::channel::SentUpdate::Receipt { status, at }).await;
        }
    }
}

impl Channel for FakeChannel {
    fn attach(&self, inbound: Arc<dyn InboundSink>) {
        let _ = self.sink.set(inbound);
    }

    fn name(&self) -> &'static str {
        "fake"
    }

    fn status(&self) -> ChannelStatus {
        ChannelStatus {
            kind: "fake".into(),
            state: "test".into(),
            connected: true,
            detail: None,
            phone: None,
            version: None,
            catching_up: self.catching_up(),
            missing: None,
        }
    }

    fn catching_up(&self) -> bool {
        self.catching_up.load(Ordering::SeqCst)
    }

    fn ready(&self) -> Result<(), Blocked> {
        match self.ready.lock().unwrap().clone() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn send<'a>(&'a self, to: &'a Contact, text: &'a str) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if let Some(gate) = self.gate.get() {
                gate.acquire().await.unwrap().forget();
            }
            let scripted = self.outcomes.lock().unwrap().pop_front();
            let outcome = match scripted {
                Some(outcome) => outcome,
                None => (self.policy)(to, text).await,
            };
            // As a real channel: what refuses a send also stops it being ready.
            if let Err(ChannelError::Unavailable { reason, .. }) = &outcome {
                *self.ready.lock().unwrap() = Some(reason.clone());
            }
            if let Ok(sent) = &outcome {
                self.sent.lock().unwrap().push(text.to_string());
                self.taken.lock().unwrap().extend(sent.message_id.clone());
            }
            outcome
        })
    }

    fn mark_read(&self, messages: Vec<MessageRef>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.read.lock().unwrap().extend(messages);
            self.read_marked.notify_one();
        })
    }
}
