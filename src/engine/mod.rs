//! The conversation engine: creates conversations, routes every event to the
//! task that owns it, and answers reads.
//!
//! - the state machine table is [`crate::fsm`], below the engine: the API
//!   names its states and events too.
//! - [`actor`]: one task per contact with live conversations. Every event of
//!   those conversations (contact message, heartbeat, operator command, tool
//!   call, finished turn) is handled there, one at a time, so a reply and a
//!   heartbeat can never race. The per-contact FIFO queue lives there too
//!   (`actor/queue.rs`), and each kind of event has a file of its own.
//! - [`heartbeat`]: when follow-ups are due, and the actor's timer.
//! - [`tools`]: the agent's six tools, as requests to the actor.
//! - [`idempotency`]: retried creates and sends that do nothing twice.
//! - [`events`]: every change as a numbered, persisted event.
//! - [`report`]: how a conversation ended, in words a caller can act on.
//! - [`wait`]: waiting for a conversation to reach a state.
//!
//! Reads (`get`, `list`) never wait for an actor: each actor publishes every
//! instance it has persisted into a shared view.

pub mod actor;
pub mod events;
pub mod heartbeat;
pub mod idempotency;
pub mod report;
pub mod tools;
pub mod wait;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::agent::Agent;
use crate::api::limits;
use crate::api::{
    ConversationInstance, CreateInstanceRequest, CreateInstanceResponse, HeartbeatConfig, SendStatus, State, TodoItem,
    TodoStatus, TranscriptMessage, UnroutedMessage,
};
use crate::channel::{Channel, ChannelError, Delivery, InboundMessage, InboundSink};
use crate::contact::Contact;
use crate::fsm::{Event, InvalidTransition};
use crate::store::{Store, StoreError};
use crate::util::BoxFuture;
use actor::{Msg, Op};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Invalid(String),
    #[error("no conversation has the id '{0}'")]
    NotFound(String),
    #[error("the id prefix '{prefix}' matches {} conversations: {}", matches.len(), matches.join(", "))]
    Ambiguous { prefix: String, matches: Vec<String> },
    #[error("{source}")]
    Transition { id: Uuid, source: InvalidTransition },
    /// `relay answer`, but the agent asked nothing: it stopped for `reason`.
    #[error(
        "cannot answer: the agent asked no question (it stopped: {reason}); `relay resume` lets it go on, \
         `relay send` writes to the contact"
    )]
    NoQuestion { id: Uuid, reason: String },
    #[error(transparent)]
    Channel(#[from] ChannelError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("relay is shutting down")]
    ShuttingDown,
    #[error("the idempotency key '{0}' was already used for a different request; use a new key for a new request")]
    KeyReused(String),
    #[error("a request with the idempotency key '{0}' is still being handled; retry when it is done")]
    KeyInUse(String),
}

/// The result of an operation that may have been done before.
#[derive(Debug, Clone, PartialEq)]
pub struct Once<T> {
    pub value: T,
    /// True when an earlier request with the same idempotency key did it.
    pub replayed: bool,
}

/// A cheap handle to the engine; clone it freely.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

/// How the engine behaves, from `config.json`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// After a contact message, wait this long for more before the agent
    /// answers them all in one turn.
    pub reply_window: std::time::Duration,
    /// The shortest and longest delay the agent may choose with
    /// `schedule_next_heartbeat`.
    pub scheduled_heartbeat_bounds: (std::time::Duration, std::time::Duration),
}

impl Settings {
    pub fn from_config(agent: &crate::config::AgentSettings) -> Settings {
        use std::time::Duration;
        Settings {
            reply_window: Duration::from_millis(agent.reply_window_ms),
            scheduled_heartbeat_bounds: (
                Duration::from_secs(agent.min_scheduled_heartbeat_secs),
                Duration::from_secs(agent.max_scheduled_heartbeat_secs),
            ),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_config(&crate::config::AgentSettings::default())
    }
}

pub(crate) struct Shared {
    pub(crate) settings: Settings,
    pub(crate) store: Store,
    pub(crate) channel: Arc<dyn Channel>,
    pub(crate) agent: Arc<dyn Agent>,
    /// Every instance as last persisted, keyed by its hyphenated id (so a
    /// prefix lookup is a range scan).
    view: RwLock<BTreeMap<String, Arc<ConversationInstance>>>,
    actors: Mutex<HashMap<Contact, ActorHandle>>,
    pub(crate) stopping: AtomicBool,
    /// Bumped after every persisted change, for whoever waits for one.
    changes: watch::Sender<u64>,
    /// Messages kept in the unrouted log.
    unrouted: AtomicU64,
    /// Recently sent messages by channel id, to find them when the channel
    /// refuses one later.
    sent: Mutex<SentIndex>,
    keys: Arc<idempotency::Keys>,
    pub(crate) events: Arc<events::EventLog>,
    /// Per conversation, a counter bumped on every change, for waiters only
    /// (an entry exists while someone waits on that conversation).
    watched: Mutex<HashMap<Uuid, watch::Sender<u64>>>,
    /// Waits under way (see [`wait`]).
    waiting: std::sync::atomic::AtomicUsize,
}

/// The channel ids of the last [`SentIndex::CAPACITY`] messages sent.
#[derive(Default)]
struct SentIndex {
    by_channel_id: HashMap<String, (Uuid, Uuid)>,
    order: VecDeque<String>,
}

impl SentIndex {
    /// WhatsApp answers within seconds; this covers hours of sending.
    const CAPACITY: usize = 4096;

    fn insert(&mut self, channel_id: &str, instance: Uuid, message: Uuid) {
        if self.order.len() == Self::CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.by_channel_id.remove(&oldest);
        }
        self.order.push_back(channel_id.to_string());
        self.by_channel_id.insert(channel_id.to_string(), (instance, message));
    }
}

struct ActorHandle {
    tx: mpsc::UnboundedSender<Msg>,
    /// Ends with the number of sends whose outcome it never learned.
    task: JoinHandle<usize>,
}

impl Engine {
    /// Loads every conversation from `store` and restarts the live ones:
    /// timers re-armed (past deadlines fire at once), interrupted turns re-run.
    /// After a crash, messages that were being sent are marked unconfirmed
    /// first, so no turn mistakes them for sent or unsent.
    pub fn start(
        store: Store,
        channel: Arc<dyn Channel>,
        agent: Arc<dyn Agent>,
        settings: Settings,
    ) -> Result<Engine, StoreError> {
        if !store.take_clean_shutdown()? {
            let unconfirmed = store.settle_interrupted_sends()?;
            if unconfirmed > 0 {
                tracing::warn!(unconfirmed, "relay stopped while sending; those messages are marked unconfirmed");
            }
        }
        let instances = store.load_instances()?;
        let unrouted = store.count_unrouted()?;
        let keys = Arc::new(idempotency::Keys::load(store.clone())?);
        let events = events::EventLog::open(store.events_path())?;
        let view = instances.into_iter().map(|i| (i.id.to_string(), Arc::new(i))).collect();
        let engine = Engine {
            shared: Arc::new(Shared {
                settings,
                store,
                channel: channel.clone(),
                agent,
                view: RwLock::new(view),
                actors: Mutex::new(HashMap::new()),
                stopping: AtomicBool::new(false),
                changes: watch::Sender::new(0),
                unrouted: AtomicU64::new(unrouted),
                sent: Mutex::new(SentIndex::default()),
                keys,
                events,
                watched: Mutex::new(HashMap::new()),
                waiting: Default::default(),
            }),
        };
        // Weak: the channel must not keep the engine (which owns it) alive.
        channel.attach(Arc::new(Inbound(Arc::downgrade(&engine.shared))));
        // One pass over the view, not one per contact: a start with 10,000
        // conversations must not cost 10,000².
        let mut live: HashMap<Contact, Vec<Arc<ConversationInstance>>> = HashMap::new();
        engine.shared.read_view(|view| {
            for instance in view.values().filter(|i| !i.state.is_terminal()) {
                live.entry(contact_of(instance)).or_default().push(instance.clone());
            }
        });
        let mut actors = engine.shared.actors.lock().expect("actors lock");
        for (contact, mut convs) in live {
            convs.sort_by_key(|a| (a.created_at, a.id));
            engine.shared.spawn_actor(&mut actors, contact, convs);
        }
        drop(actors);
        Ok(engine)
    }

    pub fn channel(&self) -> &Arc<dyn Channel> {
        &self.shared.channel
    }

    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.shared.agent
    }

    pub async fn create(&self, request: CreateInstanceRequest) -> Result<CreateInstanceResponse, EngineError> {
        self.create_instance(new_instance(request)?).await
    }

    /// `create`, at most once per idempotency `key`.
    pub async fn create_once(
        &self,
        key: &str,
        request: CreateInstanceRequest,
    ) -> Result<Once<CreateInstanceResponse>, EngineError> {
        let mut instance = new_instance(request)?;
        // What the request asks for once validated: the same conversation
        // asked for in other words (a number spelled differently, defaults
        // given or left out) is the same request.
        let asked = (&instance.objective, &instance.target_contact, &instance.todos, &instance.heartbeat_config);
        let fingerprint = idempotency::fingerprint(&[&serde_json::to_vec(&asked).expect("requests serialise")]);
        let claim = self.shared.keys.claim(key, "create", fingerprint)?;
        if let Some(done) = self.shared.snapshot(claim.target) {
            let value = CreateInstanceResponse { id: done.id, state: done.state };
            return Ok(Once { value, replayed: true });
        }
        instance.id = claim.target;
        let value = self.create_instance(instance).await?;
        Ok(Once { value, replayed: claim.retried })
    }

    async fn create_instance(&self, instance: ConversationInstance) -> Result<CreateInstanceResponse, EngineError> {
        let instance = Box::new(instance);
        let contact = contact_of(&instance);
        self.shared.ask(&contact, |reply| Msg::Create { instance, reply }).await?
    }

    /// Every conversation, oldest first, optionally filtered.
    pub fn list(&self, state: Option<State>, contact: Option<&Contact>) -> Vec<ConversationInstance> {
        let mut all: Vec<ConversationInstance> = self.shared.read_view(|view| {
            view.values()
                .filter(|i| state.is_none_or(|s| i.state == s))
                .filter(|i| contact.is_none_or(|c| i.target_contact == c.as_str()))
                .map(|i| (**i).clone())
                .collect()
        });
        all.sort_by_key(|a| (a.created_at, a.id));
        all
    }

    pub fn get(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        let id = self.resolve(id_or_prefix)?;
        self.shared.snapshot(id).map(|i| (*i).clone()).ok_or_else(|| EngineError::NotFound(id.to_string()))
    }

    /// Turns a full id or a unique prefix (at least 4 characters) into an id.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<Uuid, EngineError> {
        let wanted = id_or_prefix.trim().to_ascii_lowercase();
        if let Ok(id) = Uuid::parse_str(&wanted) {
            return match self.shared.snapshot(id) {
                Some(_) => Ok(id),
                None => Err(EngineError::NotFound(id_or_prefix.to_string())),
            };
        }
        if wanted.len() < limits::MIN_ID_PREFIX || !wanted.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(EngineError::Invalid(format!(
                "'{id_or_prefix}' is not a conversation id: give the full id or at least {} of its first characters",
                limits::MIN_ID_PREFIX
            )));
        }
        let matches: Vec<String> = self.shared.read_view(|view| {
            view.range(wanted.clone()..)
                .take_while(|(k, _)| k.starts_with(&wanted))
                .take(5)
                .map(|(k, _)| k.clone())
                .collect()
        });
        match matches.as_slice() {
            [] => Err(EngineError::NotFound(id_or_prefix.to_string())),
            [one] => Ok(Uuid::parse_str(one).expect("view keys are ids")),
            _ => Err(EngineError::Ambiguous { prefix: id_or_prefix.to_string(), matches }),
        }
    }

    pub fn transcript(&self, id_or_prefix: &str) -> Result<Vec<TranscriptMessage>, EngineError> {
        let id = self.resolve(id_or_prefix)?;
        Ok(self.shared.store.read_transcript(id)?)
    }

    pub async fn pause(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        self.operate(id_or_prefix, Op::Pause).await.map(|(i, _)| i)
    }

    pub async fn resume(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        self.operate(id_or_prefix, Op::Resume).await.map(|(i, _)| i)
    }

    pub async fn cancel(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        self.operate(id_or_prefix, Op::Cancel).await.map(|(i, _)| i)
    }

    /// The operator answers the agent's question (`relay answer`); the
    /// agent goes on with it. Nothing is sent to the contact.
    pub async fn answer(&self, id_or_prefix: &str, text: String) -> Result<ConversationInstance, EngineError> {
        let text = bounded_text("answer", text, limits::MAX_REASON_CHARS)?;
        self.operate(id_or_prefix, Op::Answer { text }).await.map(|(i, _)| i)
    }

    /// The operator speaks to the contact (`relay send`).
    pub async fn send(&self, id_or_prefix: &str, text: String) -> Result<TranscriptMessage, EngineError> {
        let text = bounded_text("message", text, limits::MAX_MESSAGE_CHARS)?;
        self.send_as(id_or_prefix, text, Uuid::new_v4()).await
    }

    /// `send`, at most once per idempotency `key`. A message that went out,
    /// or may have (unconfirmed), is returned as it is; one that failed is
    /// tried again under the same id.
    pub async fn send_once(
        &self,
        key: &str,
        id_or_prefix: &str,
        text: String,
    ) -> Result<Once<TranscriptMessage>, EngineError> {
        let text = bounded_text("message", text, limits::MAX_MESSAGE_CHARS)?;
        let id = self.resolve(id_or_prefix)?;
        let fingerprint = idempotency::fingerprint(&[id.as_bytes(), text.as_bytes()]);
        let claim = self.shared.keys.claim(key, "send", fingerprint)?;
        if claim.retried {
            let earlier = self.shared.store.read_transcript(id)?.into_iter().find(|m| m.id == claim.target);
            if let Some(message) = earlier.filter(|m| m.send_status != Some(SendStatus::Failed)) {
                return Ok(Once { value: message, replayed: true });
            }
        }
        let value = self.send_as(&id.to_string(), text, claim.target).await?;
        Ok(Once { value, replayed: false })
    }

    async fn send_as(
        &self,
        id_or_prefix: &str,
        text: String,
        message_id: Uuid,
    ) -> Result<TranscriptMessage, EngineError> {
        let (_, message) = self.operate(id_or_prefix, Op::Send { text, message_id }).await?;
        Ok(message.expect("a send returns its message"))
    }

    async fn operate(
        &self,
        id_or_prefix: &str,
        op: Op,
    ) -> Result<(ConversationInstance, Option<TranscriptMessage>), EngineError> {
        let id = self.resolve(id_or_prefix)?;
        let instance = self.shared.snapshot(id).ok_or_else(|| EngineError::NotFound(id.to_string()))?;
        if instance.state.is_terminal() {
            // Terminal conversations have no actor; the table refuses anyway.
            let event = op.event();
            tracing::warn!(instance = %id, state = %instance.state, event = %event, "invalid transition refused");
            return Err(EngineError::Transition { id, source: InvalidTransition { state: instance.state, event } });
        }
        let contact = contact_of(&instance);
        let event = op.event();
        match self.shared.ask(&contact, |reply| Msg::Operator { id, op, reply }).await? {
            // It ended meanwhile (and left its actor): refuse naming its state.
            Err(EngineError::NotFound(_)) => match self.shared.snapshot(id) {
                Some(now) => Err(EngineError::Transition { id, source: InvalidTransition { state: now.state, event } }),
                None => Err(EngineError::NotFound(id.to_string())),
            },
            other => other,
        }
    }

    /// Notified after every change to any conversation (a counter).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// (conversations not yet ended, all conversations)
    pub fn counts(&self) -> (usize, usize) {
        self.shared.read_view(|view| (view.values().filter(|i| !i.state.is_terminal()).count(), view.len()))
    }

    /// Stops every actor (interrupting running turns; they re-run at the next
    /// start) and waits for them. Everything is already on disk; when no send
    /// was left without its outcome, the store is marked cleanly shut down.
    pub async fn shutdown(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let handles: Vec<ActorHandle> = {
            let mut actors = self.shared.actors.lock().expect("actors lock");
            actors.drain().map(|(_, h)| h).collect()
        };
        for handle in &handles {
            let _ = handle.tx.send(Msg::Shutdown);
        }
        let mut unsettled = 0;
        for handle in handles {
            unsettled += handle.task.await.unwrap_or(1);
        }
        if let Err(error) = self.shared.events.flush() {
            tracing::warn!(%error, "cannot sync the last events");
        }
        if unsettled == 0
            && let Err(error) = self.shared.store.mark_clean_shutdown()
        {
            tracing::warn!(%error, "cannot mark the shutdown clean; the next start checks every transcript");
        }
    }
}

/// The engine as its channel's inbound sink.
struct Inbound(std::sync::Weak<Shared>);

impl InboundSink for Inbound {
    fn deliver(&self, message: InboundMessage) -> BoxFuture<'_, Delivery> {
        Box::pin(async move {
            match self.0.upgrade() {
                Some(shared) => Engine { shared }.deliver(message).await,
                None => Delivery::NoConversation,
            }
        })
    }

    fn delivery_failed(&self, message_id: String, error: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(shared) = self.0.upgrade() {
                shared.delivery_failed(&message_id, error);
            }
        })
    }

    fn channel_changed(&self) {
        if let Some(shared) = self.0.upgrade() {
            for handle in shared.actors.lock().expect("actors lock").values() {
                let _ = handle.tx.send(Msg::ChannelChanged);
            }
        }
    }
}

impl Engine {
    /// A contact wrote: record it in their live conversation, which answers
    /// as soon as it may. Contacts with no live conversation are ignored.
    pub async fn deliver(&self, message: InboundMessage) -> Delivery {
        let contact = message.from.clone();
        // A contact has an actor exactly while it has conversations not yet ended.
        let has_actor = self.shared.actors.lock().expect("actors lock").contains_key(&contact);
        if !has_actor {
            self.shared.keep_unrouted(contact, message.text);
            return Delivery::NoConversation;
        }
        // The actor keeps the message itself if none of its conversations takes it.
        self.shared.ask(&contact, |reply| Msg::Inbound { message, reply }).await.unwrap_or(Delivery::NoConversation)
    }

    /// Messages kept because no conversation could take them.
    pub fn unrouted_count(&self) -> u64 {
        self.shared.unrouted.load(Ordering::Relaxed)
    }
}

impl Shared {
    fn read_view<T>(&self, f: impl FnOnce(&BTreeMap<String, Arc<ConversationInstance>>) -> T) -> T {
        f(&self.view.read().expect("view lock"))
    }

    pub(crate) fn snapshot(&self, id: Uuid) -> Option<Arc<ConversationInstance>> {
        self.read_view(|view| view.get(&id.to_string()).cloned())
    }

    /// Called by actors after every successful write. The view and the
    /// actor share the one copy.
    pub(crate) fn publish(&self, instance: &Arc<ConversationInstance>) {
        let mut view = self.view.write().expect("view lock");
        view.insert(instance.id.to_string(), instance.clone());
        drop(view);
        self.changes.send_modify(|n| *n += 1);
        if let Some(watch) = self.watched.lock().expect("watched lock").get(&instance.id) {
            watch.send_modify(|n| *n += 1);
        }
    }

    /// Records an event of conversation `id`. The change it describes is
    /// already on disk; an event that cannot be written is logged and lost
    /// (its number is not used), never a reason to undo the change.
    pub(crate) fn emit(&self, id: Uuid, data: crate::api::EventData) {
        if let Err(error) = self.events.append(id, data) {
            tracing::error!(instance = %id, %error, "cannot record an event");
        }
    }

    /// A message no conversation takes is not answered, but it is kept
    /// where the operator can read it (`unrouted.jsonl`).
    pub(crate) fn keep_unrouted(&self, from: Contact, text: String) {
        tracing::info!(contact = %from, "message from a contact with no live conversation; kept in unrouted.jsonl");
        let message = UnroutedMessage { from: from.to_string(), text, timestamp: chrono::Utc::now() };
        match self.store.append_unrouted(&message) {
            Ok(()) => {
                self.unrouted.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => tracing::error!(%error, "cannot keep an unrouted message"),
        }
    }

    pub(crate) fn remember_sent(&self, channel_id: &str, instance: Uuid, message: Uuid) {
        self.sent.lock().expect("sent lock").insert(channel_id, instance, message);
    }

    /// The channel refused a message it had taken. The conversation's actor
    /// writes that down; with no actor (the conversation has ended) it is
    /// written here, under the actor map's lock so none starts meanwhile.
    fn delivery_failed(&self, channel_id: &str, error: String) {
        let Some((instance, message)) = self.sent.lock().expect("sent lock").by_channel_id.get(channel_id).copied()
        else {
            tracing::warn!(channel_id, %error, "the channel refused a message relay does not know");
            return;
        };
        tracing::warn!(%instance, channel_id, %error, "the channel refused a sent message");
        let Some(contact) = self.snapshot(instance).map(|i| contact_of(&i)) else { return };
        let actors = self.actors.lock().expect("actors lock");
        match actors.get(&contact) {
            Some(handle) => {
                let _ = handle.tx.send(Msg::DeliveryFailed { instance, message, error });
            }
            None => {
                if let Err(e) = self.mark_undelivered(instance, message, error) {
                    tracing::error!(%instance, error = %e, "cannot record a refused message");
                }
            }
        }
    }

    /// Writes the message again, failed with its delivery error (the later line wins).
    pub(crate) fn mark_undelivered(&self, instance: Uuid, message: Uuid, error: String) -> Result<(), StoreError> {
        let transcript = self.store.read_transcript(instance)?;
        match transcript.into_iter().find(|m| m.id == message) {
            Some(sent) => self.store.append_message(&TranscriptMessage {
                send_status: Some(SendStatus::Failed),
                delivery_error: Some(error),
                ..sent
            }),
            None => Ok(()),
        }
    }

    /// The live conversations of one contact, oldest first (an actor's state at spawn).
    fn live_of(&self, contact: &Contact) -> Vec<Arc<ConversationInstance>> {
        let mut live: Vec<Arc<ConversationInstance>> = self.read_view(|view| {
            view.values().filter(|i| !i.state.is_terminal() && i.target_contact == contact.as_str()).cloned().collect()
        });
        live.sort_by_key(|a| (a.created_at, a.id));
        live
    }

    /// Starts the actor of `contact`, which owns its `live` conversations.
    fn spawn_actor(
        self: &Arc<Self>,
        actors: &mut HashMap<Contact, ActorHandle>,
        contact: Contact,
        live: Vec<Arc<ConversationInstance>>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(actor::run(self.clone(), contact.clone(), live, tx.clone(), rx));
        actors.insert(contact, ActorHandle { tx, task });
    }

    /// Sends a message to the contact's actor (spawning it if needed) and
    /// waits for the answer. Sending under the map lock means an actor that
    /// retires (see [`Shared::retire`]) can never miss a message.
    async fn ask<T>(
        self: &Arc<Self>,
        contact: &Contact,
        msg: impl FnOnce(oneshot::Sender<T>) -> Msg,
    ) -> Result<T, EngineError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut actors = self.actors.lock().expect("actors lock");
            if self.stopping.load(Ordering::SeqCst) {
                return Err(EngineError::ShuttingDown);
            }
            if !actors.contains_key(contact) {
                let live = self.live_of(contact);
                self.spawn_actor(&mut actors, contact.clone(), live);
            }
            let handle = actors.get(contact).expect("actor just ensured");
            handle.tx.send(msg(reply)).map_err(|_| EngineError::ShuttingDown)?;
        }
        answer.await.map_err(|_| EngineError::ShuttingDown)
    }

    /// An actor with nothing left to do removes itself, unless a message is
    /// already waiting for it. Returns whether it may exit.
    pub(crate) fn retire(&self, contact: &Contact, rx: &mpsc::UnboundedReceiver<Msg>) -> bool {
        let mut actors = self.actors.lock().expect("actors lock");
        if !rx.is_empty() {
            return false;
        }
        actors.remove(contact);
        true
    }
}

pub(crate) fn contact_of(instance: &ConversationInstance) -> Contact {
    Contact::stored(&instance.target_contact)
}

/// Validates a create request and builds the instance it describes (CREATED;
/// the contact's actor may queue it).
fn new_instance(request: CreateInstanceRequest) -> Result<ConversationInstance, EngineError> {
    let objective = bounded_text("objective", request.objective, limits::MAX_OBJECTIVE_CHARS)?;
    let contact = Contact::parse(&request.target_contact).map_err(|e| EngineError::Invalid(e.to_string()))?;
    if request.todos.is_empty() {
        return Err(EngineError::Invalid("give at least one todo".into()));
    }
    if request.todos.len() > limits::MAX_TODOS {
        return Err(EngineError::Invalid(format!("at most {} todos per conversation", limits::MAX_TODOS)));
    }
    let mut todos = Vec::with_capacity(request.todos.len());
    for (n, todo) in request.todos.into_iter().enumerate() {
        let text = bounded_text(&format!("todo {}", n + 1), todo.text, limits::MAX_TODO_CHARS)?;
        todos.push(TodoItem {
            id: (n + 1).to_string(),
            text,
            status: TodoStatus::Pending,
            answer: None,
            answer_message_ids: Vec::new(),
        });
    }
    let overrides = request.heartbeat_config.unwrap_or_default();
    let defaults = HeartbeatConfig::default();
    let heartbeat_config = HeartbeatConfig {
        interval_ms: overrides.interval_ms.unwrap_or(defaults.interval_ms),
        max_followups: overrides.max_followups.unwrap_or(defaults.max_followups),
    };
    let (min, max) = (limits::MIN_HEARTBEAT.as_millis() as u64, limits::MAX_HEARTBEAT.as_millis() as u64);
    if !(min..=max).contains(&heartbeat_config.interval_ms) {
        return Err(EngineError::Invalid(format!(
            "the heartbeat interval must be between {} and {} (got {} ms)",
            crate::duration::format(limits::MIN_HEARTBEAT),
            crate::duration::format(limits::MAX_HEARTBEAT),
            heartbeat_config.interval_ms
        )));
    }
    if heartbeat_config.max_followups > limits::MAX_FOLLOWUPS {
        return Err(EngineError::Invalid(format!("max_followups must be at most {}", limits::MAX_FOLLOWUPS)));
    }
    Ok(ConversationInstance::new(objective, contact.to_string(), todos, heartbeat_config))
}

/// Trims `text` and checks it is neither empty nor longer than `max` characters.
pub(crate) fn bounded_text(what: &str, text: String, max: usize) -> Result<String, EngineError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(EngineError::Invalid(format!("the {what} is empty")));
    }
    let chars = trimmed.chars().count();
    if chars > max {
        return Err(EngineError::Invalid(format!("the {what} is too long ({chars} characters; at most {max})")));
    }
    Ok(trimmed.to_string())
}

impl Op {
    fn event(&self) -> Event {
        match self {
            Op::Pause => Event::Pause,
            Op::Resume => Event::Resume,
            Op::Cancel => Event::Cancel,
            Op::Send { .. } => Event::ManualSend,
            Op::Answer { .. } => Event::OperatorAnswers,
        }
    }
}
