//! The conversation engine: creates conversations, routes every event to the
//! task that owns it, and answers reads.
//!
//! - the state machine table is [`crate::fsm`], below the engine: the API
//!   names its states and events too.
//! - [`conversation`]: the conversation core: what an input does to a
//!   conversation, as plain functions of its record that return a `Step`
//!   (the record to write, then the effects to run).
//! - [`actor`]: one task per contact with live conversations. Every event of
//!   those conversations (contact message, heartbeat, operator command, tool
//!   call, finished turn) is handled there, one at a time, so a reply and a
//!   heartbeat can never race. The per-contact FIFO queue lives there too
//!   (`actor/queue.rs`), and each kind of event has a file of its own.
//! - [`heartbeat`]: when follow-ups are due, and the actor's timer.
//! - [`budget`]: each conversation's limits (turns, tokens, a deadline).
//! - `registry.rs`: the actors by contact, started on demand and retired.
//! - `view.rs`: the shared view that reads use.
//! - `validate.rs`: create requests checked, texts bounded.
//! - `inbound.rs`: what the channel tells the engine (messages in, news of sends).
//! - `delivery.rs`: did the person get it? Receipts, and the delivery timeout.
//! - `first_contact.rs`: the numbers relay knows, WhatsApp's reach-out
//!   lock and the day's first contacts, shared by every contact's actor.
//! - [`idempotency`]: retried creates and sends that do nothing twice.
//! - [`events`]: every change as a numbered, persisted event.
//! - [`report`]: how a conversation ended, in words a caller can act on.
//! - [`wait`]: waiting for a conversation to reach a state.
//!
//! Reads (`get`, `list`) never wait for an actor: each actor publishes every
//! instance it has persisted into a shared view.
//!
//! This file is the facade: [`Engine`], its start, creation and shutdown,
//! its settings, and [`Shared`], the state every part above uses; reads are
//! in `reads.rs`, the operator's commands in `commands.rs`, errors in
//! `error.rs`.

pub mod actor;
pub mod attachments;
pub mod budget;
mod commands;
pub mod conversation;
mod delivery;
mod error;
pub mod events;
pub(crate) mod evidence;
mod first_contact;
pub mod heartbeat;
pub mod idempotency;
mod inbound;
pub mod message_ref;
mod reads;
mod recovery;
mod registry;
pub mod report;
mod retention;
mod validate;
mod view;
pub mod wait;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::agent::Agent;
use crate::api::{CreateInstanceRequest, CreateInstanceResponse};
use crate::channel::{Channel, InboundMessage, InboundOutcome};
use crate::contact::Contact;
use crate::store::ConversationRecord;
use crate::store::{Store, StoreError};
use actor::Msg;
use delivery::SentIndex;
pub use error::EngineError;
use inbound::Inbound;
use registry::{ActorHandle, contact_of};
pub(crate) use validate::bounded_text;

/// Whether the daemon would take `request` (the reason if not), without
/// creating anything: for `relay eval`, which checks its scenarios before
/// any model is called.
pub(crate) fn check_create(request: crate::api::CreateInstanceRequest) -> Result<(), String> {
    let settings = Settings::default();
    validate::new_instance(request, &settings).map(|_| ()).map_err(|e| e.to_string())
}
use validate::new_instance;

/// The result of a request made with an idempotency key: its value, done
/// now or by an earlier request with the same key.
#[derive(Debug, Clone, PartialEq)]
pub struct Idempotent<T> {
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
    /// A message no device of the contact has received this long after the
    /// channel took it is flagged (`delivery.timeout`).
    pub delivery_timeout: std::time::Duration,
    /// Quiet hours, time zones, opt-out words, the disclosure (`courtesy`).
    pub courtesy: crate::config::CourtesySettings,
    /// The limits of a conversation whose create request sets none (`budget`).
    pub budget: crate::config::BudgetSettings,
    /// How contacts' files are fetched, heard and kept (`media`).
    pub media: crate::config::MediaSettings,
    /// How long the event log keeps a day of events (`events.keep`).
    pub events_keep: std::time::Duration,
    /// How often a failed transcription is tried again, and the first wait
    /// (doubling): the model's `agent.max_retries` and `agent.retry_backoff_ms`.
    pub transcription_retries: (u32, std::time::Duration),
    /// Whether a value relay cannot read by rule is confirmed by a model
    /// before it is recorded (`answers.verify`).
    pub verify_answers: bool,
}

impl Settings {
    pub fn from_config(config: &crate::config::Config) -> Settings {
        use std::time::Duration;
        let agent = &config.agent;
        Settings {
            reply_window: Duration::from_millis(agent.reply_window_ms),
            scheduled_heartbeat_bounds: (
                Duration::from_secs(agent.min_scheduled_heartbeat_secs),
                Duration::from_secs(agent.max_scheduled_heartbeat_secs),
            ),
            delivery_timeout: config.delivery.timeout,
            courtesy: config.courtesy.clone(),
            budget: config.budget.clone(),
            media: config.media.clone(),
            events_keep: config.events.keep,
            transcription_retries: (agent.max_retries, Duration::from_millis(agent.retry_backoff_ms)),
            verify_answers: config.answers.verify,
        }
    }
}

/// What a media label depends on, from the settings. Whether a photo is
/// shown is the turn's business: a label kept in the transcript says it is
/// not (the turn's view says otherwise when it shows one).
pub(crate) fn media_label_context(settings: &Settings) -> crate::media::label::Context {
    crate::media::label::Context { shown: false, max_bytes: settings.media.max_bytes, keep: Some(settings.media.keep) }
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_config(&crate::config::Config::new(crate::config::ChannelKind::Sandbox))
    }
}

pub(crate) struct Shared {
    pub(crate) settings: Settings,
    pub(crate) store: Store,
    pub(crate) channel: Arc<dyn Channel>,
    pub(crate) agent: Arc<dyn Agent>,
    /// Every instance as last persisted.
    view: RwLock<view::View>,
    actors: Mutex<HashMap<Contact, ActorHandle>>,
    /// Cancelled when the engine stops (by [`Engine::shutdown`], or by the
    /// token it was started under): nothing new starts, and each actor
    /// answers what it was asked before and ends.
    pub(crate) stop: CancellationToken,
    /// Bumped after every persisted change, for whoever waits for one.
    changes: watch::Sender<u64>,
    /// Messages kept in the unrouted log.
    unrouted: AtomicU64,
    /// Recently sent messages by channel id, to find the message a receipt
    /// (or a late refusal) names.
    sent: Mutex<SentIndex>,
    keys: Arc<idempotency::Keys>,
    /// The do-not-contact list.
    pub(crate) opt_outs: crate::store::OptOutList,
    /// Known numbers, WhatsApp's reach-out lock, the day's first contacts.
    pub(crate) first_contacts: crate::store::FirstContactBook,
    /// The last question to WhatsApp about its lock (see `first_contact.rs`).
    reach_out: Mutex<first_contact::LockQuery>,
    /// When each contact last wrote, in the last hour or so: a first message
    /// to someone who just wrote is a reply (see `first_contact.rs`).
    heard: Mutex<HashMap<Contact, chrono::DateTime<chrono::Utc>>>,
    pub(crate) events: Arc<events::EventLog>,
    /// Who turns voice notes into words (`media.transcription`), if anyone.
    pub(crate) transcriber: Option<Arc<crate::agent::transcribe::Transcriber>>,
    /// Per conversation, a counter bumped on every change, for waiters only
    /// (an entry exists while someone waits on that conversation).
    watched: Mutex<HashMap<Uuid, watch::Sender<u64>>>,
    /// Waits under way (see [`wait`]).
    waiting: std::sync::atomic::AtomicUsize,
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
        Engine::start_with_stop(store, channel, agent, settings, CancellationToken::new())
    }

    /// The largest file relay keeps (`media.max_bytes`).
    pub fn media_max_bytes(&self) -> u64 {
        self.shared.settings.media.max_bytes
    }

    /// Keeps a file given over the API until a request uses it (see
    /// [`crate::store::MediaStore::stage_upload`]).
    pub fn stage_upload(&self, bytes: &[u8]) -> Result<crate::api::UploadResponse, StoreError> {
        let (upload_id, file) = self.shared.store.media().stage_upload(bytes)?;
        let mime = crate::media::sniff::sniff(bytes).mime.to_string();
        Ok(crate::api::UploadResponse { upload_id, bytes: file.bytes, sha256: file.sha256, mime })
    }

    /// The staged upload `id`, used: its bytes, or `None` if there is none.
    pub fn take_upload(&self, id: uuid::Uuid) -> Result<Option<Vec<u8>>, StoreError> {
        self.shared.store.media().take_upload(id)
    }

    /// [`Engine::start`], stopped by `stop` too (the daemon's token tree:
    /// see `daemon::serve`). Cancelling `stop` only signals; whoever cancels
    /// it still calls [`Engine::shutdown`] to wait for the actors.
    pub fn start_with_stop(
        store: Store,
        channel: Arc<dyn Channel>,
        agent: Arc<dyn Agent>,
        settings: Settings,
        stop: CancellationToken,
    ) -> Result<Engine, StoreError> {
        let crate::store::Conversations { live, ended } = recovery::recover(&store, &settings)?;
        let unrouted = store.count_unrouted()?;
        let keys = Arc::new(idempotency::Keys::load(store.clone())?);
        let events = {
            let (dir, legacy) = store.events_paths();
            events::EventLog::open(dir, &legacy)?
        };
        let sent = SentIndex::load(&store)?;
        let opt_outs = store.open_opt_outs()?;
        let first_contacts = store.open_first_contacts()?;
        let reached = (live.iter().filter(|i| i.reached_contact()))
            .map(|i| i.target_contact.as_str())
            .chain(ended.iter().filter(|e| e.reached).map(|e| e.target_contact.as_str()));
        first_contact::learn_from(&first_contacts, reached)?;
        let view = view::View::new(
            (live.into_iter().map(|i| view::Entry::Live(Arc::new(i)))).chain(ended.into_iter().map(view::Entry::Ended)),
        );
        let transcriber = settings.media.transcription.as_ref().map(|config| {
            let (retries, backoff) = settings.transcription_retries;
            Arc::new(crate::agent::transcribe::Transcriber::new(config, retries, backoff))
        });
        let engine = Engine {
            shared: Arc::new(Shared {
                settings,
                store,
                channel: channel.clone(),
                agent,
                view: RwLock::new(view),
                actors: Mutex::new(HashMap::new()),
                stop,
                changes: watch::Sender::new(0),
                unrouted: AtomicU64::new(unrouted),
                sent: Mutex::new(sent),
                keys,
                opt_outs,
                first_contacts,
                reach_out: Mutex::new(Default::default()),
                heard: Mutex::new(HashMap::new()),
                events,
                transcriber,
                watched: Mutex::new(HashMap::new()),
                waiting: Default::default(),
            }),
        };
        // Weak: the channel must not keep the engine (which owns it) alive.
        channel.attach(Arc::new(Inbound(Arc::downgrade(&engine.shared))));
        engine.spawn_actors();
        // The event log's old days go before the first reader comes, so
        // where the log starts is the same from the first request on.
        retention::prune_event_log(&engine.shared);
        tokio::spawn(retention::run(Arc::downgrade(&engine.shared), engine.shared.stop.clone()));
        Ok(engine)
    }

    /// One actor per contact with live conversations, each given them
    /// oldest first. One pass over the view, not one per contact: a start
    /// with 10,000 conversations must not cost 10,000².
    fn spawn_actors(&self) {
        let mut live: HashMap<Contact, Vec<Arc<ConversationRecord>>> = HashMap::new();
        self.shared.read_view(|view| {
            for instance in view.live() {
                live.entry(contact_of(instance)).or_default().push(instance.clone());
            }
        });
        let mut actors = self.shared.actors.lock().expect("actors lock");
        for (contact, mut convs) in live {
            convs.sort_by_key(|a| (a.created_at, a.id));
            self.shared.spawn_actor(&mut actors, contact, convs);
        }
    }

    pub fn channel(&self) -> &Arc<dyn Channel> {
        &self.shared.channel
    }

    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.shared.agent
    }

    pub async fn create(&self, mut request: CreateInstanceRequest) -> Result<CreateInstanceResponse, EngineError> {
        let files = std::mem::take(&mut request.attachments);
        let instance = new_instance(request, &self.shared.settings)?;
        self.create_instance(instance, files).await
    }

    /// `create`, at most once per idempotency `key`.
    pub async fn create_once(
        &self,
        key: &str,
        mut request: CreateInstanceRequest,
    ) -> Result<Idempotent<CreateInstanceResponse>, EngineError> {
        let files = std::mem::take(&mut request.attachments);
        let mut instance = new_instance(request, &self.shared.settings)?;
        // What the request asks for once validated: the same conversation
        // asked for in other words (a number spelled differently, defaults
        // given or left out) is the same request.
        let asked = (&instance.objective, &instance.target_contact, &instance.todos, &instance.heartbeat_config);
        let fingerprint = idempotency::fingerprint(&[&serde_json::to_vec(&asked).expect("requests serialise")]);
        let claim = self.shared.keys.claim(key, "create", fingerprint)?;
        if let Some(done) = self.shared.snapshot(claim.target) {
            let value = CreateInstanceResponse::of(&done);
            return Ok(Idempotent { value, replayed: true });
        }
        instance.id = claim.target;
        let value = self.create_instance(instance, files).await?;
        Ok(Idempotent { value, replayed: claim.retried })
    }

    /// Creates `instance` with the staged uploads `files` as its
    /// attachments, once everything else about it was found right.
    async fn create_instance(
        &self,
        mut instance: ConversationRecord,
        files: Vec<crate::api::NewAttachment>,
    ) -> Result<CreateInstanceResponse, EngineError> {
        let media = self.shared.store.media();
        attachments::attach_at_create(media, &mut instance, files)?;
        let written: Vec<String> = instance.attachments.iter().map(|a| a.path.clone()).collect();
        let instance = Box::new(instance);
        let contact = contact_of(&instance);
        let created = self.shared.ask(&contact, |reply| Msg::Create { instance, reply }).await.and_then(|r| r);
        if created.is_err() {
            // No conversation names them: gone now rather than at the next start.
            for path in written {
                if let Err(error) = media.remove(std::path::Path::new(&path)) {
                    tracing::warn!(%error, "cannot remove the file of a conversation not created");
                }
            }
        }
        created
    }

    /// What holds first contacts back now (`relay status`).
    pub fn first_contact_status(&self) -> crate::api::FirstContactStatus {
        let now = crate::clock::now();
        let day_ago = now - chrono::Duration::hours(24);
        let (reach_out_lock, started_last_24h) = self.shared.first_contacts.read(|b| {
            let lock = b.lock.clone().filter(|l| l.look_again_at() > now);
            (lock, b.started.iter().filter(|at| **at > day_ago).count() as u32)
        });
        let mut waiting = BTreeMap::new();
        self.shared.read_view(|view| {
            for instance in view.live() {
                if let Some(reason) = instance.waiting_for {
                    *waiting.entry(reason).or_insert(0) += 1;
                }
            }
        });
        crate::api::FirstContactStatus {
            reach_out_lock,
            started_last_24h,
            max_per_day: self.shared.settings.courtesy.max_new_contacts_per_day,
            waiting,
        }
    }

    /// Notified after every change to any conversation (a counter).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// (conversations not yet ended, all conversations)
    pub fn counts(&self) -> (usize, usize) {
        self.shared.read_view(view::View::counts)
    }

    /// Stops every actor (interrupting running turns; they re-run at the next
    /// start) and waits for them. Everything is already on disk; when no send
    /// was left without its outcome, the store is marked cleanly shut down.
    pub async fn shutdown(&self) {
        let handles: Vec<ActorHandle> = {
            let mut actors = self.shared.actors.lock().expect("actors lock");
            // Under the lock `ask` checks the token with: whatever was asked
            // before is in an actor's queue, and answered before it ends.
            self.shared.stop.cancel();
            actors.drain().map(|(_, h)| h).collect()
        };
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

impl Engine {
    /// A contact wrote: record it in their live conversation, which answers
    /// as soon as it may. Contacts with no live conversation are ignored.
    pub async fn deliver(&self, message: InboundMessage) -> InboundOutcome {
        let contact = message.from.clone();
        // Whoever wrote, or was written to from the operator's phone, is no
        // longer a new contact, conversation or not.
        self.shared.know(&contact);
        if message.by_operator {
            // relay's own message, seen again (an echo), is not the operator's.
            let id = message.reference.as_ref().map(|r| r.id.as_str()).unwrap_or_default();
            if self.shared.sent.lock().expect("sent lock").holds(id) {
                return InboundOutcome::NoConversation;
            }
        } else {
            self.shared.heard_from(&contact, message.written_at);
        }
        // A contact has an actor exactly while it has conversations not yet ended.
        let has_actor = self.shared.actors.lock().expect("actors lock").contains_key(&contact);
        if !has_actor {
            // The operator's own message to someone with no live conversation is theirs alone.
            if !message.by_operator {
                self.shared.keep_unrouted(message);
            }
            return InboundOutcome::NoConversation;
        }
        // The actor keeps the message itself if none of its conversations takes it.
        self.shared
            .ask(&contact, |reply| Msg::Inbound { message, reply })
            .await
            .unwrap_or(InboundOutcome::NoConversation)
    }

    /// Messages kept because no conversation could take them.
    pub fn unrouted_count(&self) -> u64 {
        self.shared.unrouted.load(Ordering::Relaxed)
    }
}
