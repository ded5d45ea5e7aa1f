//! Property-based tests of the engine: random sequences of creates (some
//! with idempotency keys, some retried), operator commands, contact
//! messages, time passing, scripted agent and channel outcomes and restarts,
//! with the design's invariants checked after every step, on disk and in the
//! engine's view. In-process, on tokio's paused clock.
//!
//! The default run is [`DEFAULT_CASES`] cases of up to [`MAX_STEPS`] steps.
//! `RELAY_PROPTEST_CASES=<n>` runs `n` cases instead, and
//! `RELAY_PROPTEST_SEED=random` draws new sequences. Each run prints its
//! seed and `RELAY_PROPTEST_SEED=<seed>` replays the same sequences (the
//! engine's ids and wall-clock stamps still differ, so a replay is close but
//! not exact). No regression files are written: a failure prints the
//! smallest sequence found, to be written down as a deterministic test at
//! the end of this file.
//!
//! Time: the engine stores heartbeat deadlines in wall-clock time and turns
//! one into a tokio deadline once, when it arms the timer (`sync_timer` in
//! `engine/actor.rs`). On a paused clock the wall clock stands almost still,
//! so a heartbeat fires one interval of tokio time after it was armed, and a
//! pause or a restart re-arms it with nearly the whole interval again. The
//! invariants never depend on when exactly a heartbeat fires, so intervals
//! are short (1 to 4 s) and waits long enough (up to 14 s) for several to
//! fire, on time (`sleep`: every timer in order) or late (`advance`: all at
//! once, as after a suspended laptop).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use relay::agent::{AgentError, ToolCall};
use relay::api::{
    ChannelStatus, ConversationInstance, CreateInstanceRequest, HeartbeatOverrides, NewTodo, Outcome, Role, SendStatus,
    State, TodoStatus, TranscriptMessage,
};
use relay::channel::{Channel, ChannelError, Delivery, InboundMessage, InboundSink, Sent};
use relay::contact::Contact;
use relay::engine::{Engine, EngineError, Settings};
use relay::fsm::{self, Event, Target};
use relay::home::Home;
use relay::store::Store;
use relay::util::BoxFuture;
use uuid::Uuid;

use crate::support::test_agent;

use test_agent::TestAgent;

/// Cases in the default run: about 5 s in a debug build.
const DEFAULT_CASES: u32 = 64;
/// The default run explores the same sequences every time, so a red CI run
/// means a change broke something, not that the dice found something old.
/// `RELAY_PROPTEST_SEED=random` explores new ones.
const DEFAULT_SEED: u64 = 0x0072_656c_6179;
const MAX_STEPS: usize = 40;
/// Few contacts, so queues, replies and idempotency keys collide often.
const CONTACTS: [&str; 3] = ["+56912345678", "+14155552671", "+447911123456"];
/// Few keys, so retries and reuse for other requests happen.
const KEYS: u8 = 3;

static CASES: AtomicU64 = AtomicU64::new(0);
static STEPS: AtomicU64 = AtomicU64::new(0);
static CHECKS: AtomicU64 = AtomicU64::new(0);
static TURNS: AtomicU64 = AtomicU64::new(0);
/// The triggers of every transition the runs made, to show how much of the table they reach.
static REACHED: Mutex<Vec<(Option<State>, String)>> = Mutex::new(Vec::new());

type Checked<T = ()> = Result<T, String>;

/// Counts one invariant check, and fails the case with the message if it does not hold.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {{
        CHECKS.fetch_add(1, Ordering::Relaxed);
        if !$cond {
            return Err(format!($($msg)+));
        }
    }};
}

// ---- what is generated ------------------------------------------------------

/// One step of a case. Instances are picked by an index into those created
/// so far (modulo their number), so a sequence stays meaningful as it shrinks.
#[derive(Debug, Clone)]
enum Op {
    Create {
        contact: usize,
        interval_s: u64,
        max_followups: u32,
        key: Option<Key>,
    },
    Pause(usize),
    Resume(usize),
    Cancel(usize),
    Send {
        pick: usize,
        key: Option<Key>,
    },
    /// A message from the contact.
    Say {
        contact: usize,
    },
    /// Time passes and every timer fires on time, in order.
    Wait {
        ms: u64,
    },
    /// Time jumps: every timer due fires late, all at once.
    Jump {
        ms: u64,
    },
    /// The channel can send again (after a scripted `Unavailable`).
    ChannelBack,
    /// WhatsApp refuses, after the fact, a message the channel took.
    LateRefusal(usize),
    /// `shutdown`, then a new engine on the same home, channel and agent.
    Restart,
}

/// An idempotency key from the pool; `retry` repeats the request it was
/// last used for (when it was used for the same kind of request).
#[derive(Debug, Clone, Copy)]
struct Key {
    slot: u8,
    retry: bool,
}

/// What the agent does in one turn.
#[derive(Debug, Clone, Copy)]
enum Act {
    Send,
    /// Sends, then keeps the turn open this long (so events land mid-turn).
    SendThenWait(u64),
    MarkTodo,
    /// Chooses the next heartbeat delay (seconds), then sends.
    Schedule(u64),
    End,
    Human,
    Fail,
    Nothing,
}

/// What the channel does with one send.
#[derive(Debug, Clone, Copy)]
enum SendOutcome {
    Ok,
    /// Takes this long (ms), then succeeds. Past 10 s it outlasts shutdown's
    /// drain, so a restart finds the message pending (then unconfirmed).
    Slow(u64),
    Rejected,
    Failed,
    /// Cannot send at all, and stays so until [`Op::ChannelBack`] or a restart.
    Unavailable,
}

fn key() -> impl Strategy<Value = Option<Key>> {
    prop::option::weighted(0.4, (0..KEYS, any::<bool>()).prop_map(|(slot, retry)| Key { slot, retry }))
}

fn op() -> impl Strategy<Value = Op> {
    let contact = 0..CONTACTS.len();
    let pick = 0..64usize;
    prop_oneof![
        5 => (contact.clone(), 1..=4u64, 0..=3u32, key())
            .prop_map(|(contact, interval_s, max_followups, key)| Op::Create { contact, interval_s, max_followups, key }),
        2 => pick.clone().prop_map(Op::Pause),
        3 => pick.clone().prop_map(Op::Resume),
        1 => pick.clone().prop_map(Op::Cancel),
        3 => (pick.clone(), key()).prop_map(|(pick, key)| Op::Send { pick, key }),
        5 => contact.prop_map(|contact| Op::Say { contact }),
        5 => prop_oneof![1..2_000u64, 2_000..14_000u64].prop_map(|ms| Op::Wait { ms }),
        2 => (1..14_000u64).prop_map(|ms| Op::Jump { ms }),
        1 => Just(Op::ChannelBack),
        1 => pick.prop_map(Op::LateRefusal),
        1 => Just(Op::Restart),
    ]
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        4 => Just(Act::Send),
        2 => (500..4_000u64).prop_map(Act::SendThenWait),
        1 => Just(Act::MarkTodo),
        1 => (1..6u64).prop_map(Act::Schedule),
        1 => Just(Act::End),
        1 => Just(Act::Human),
        1 => Just(Act::Fail),
        2 => Just(Act::Nothing),
    ]
}

fn send_outcome() -> impl Strategy<Value = SendOutcome> {
    prop_oneof![
        10 => Just(SendOutcome::Ok),
        2 => (500..3_000u64).prop_map(SendOutcome::Slow),
        1 => (11_000..13_000u64).prop_map(SendOutcome::Slow),
        1 => Just(SendOutcome::Rejected),
        1 => Just(SendOutcome::Failed),
        1 => Just(SendOutcome::Unavailable),
    ]
}

#[derive(Debug, Clone)]
struct Input {
    ops: Vec<Op>,
    acts: Vec<Act>,
    sends: Vec<SendOutcome>,
}

fn input() -> impl Strategy<Value = Input> {
    (
        prop::collection::vec(op(), 1..=MAX_STEPS),
        prop::collection::vec(act(), 1..=12),
        prop::collection::vec(send_outcome(), 1..=12),
    )
        .prop_map(|(ops, acts, sends)| Input { ops, acts, sends })
}

// ---- the scripted agent and channel -------------------------------------------

/// The agent's and the channel's scripts, walked per contact (each contact's
/// turns and sends happen in an order the engine fixes, whatever the other
/// contacts do), and what every channel delivered, across restarts.
struct Script {
    acts: Vec<Act>,
    sends: Vec<SendOutcome>,
    cursors: Mutex<[(usize, usize); CONTACTS.len()]>,
    counter: AtomicU64,
    delivered: Mutex<Vec<String>>,
}

impl Script {
    fn new(input: &Input) -> Script {
        Script {
            acts: input.acts.clone(),
            sends: input.sends.clone(),
            // Each contact starts elsewhere in the scripts, so contacts differ.
            cursors: Mutex::new(std::array::from_fn(|c| (c * 5, c * 3))),
            counter: AtomicU64::new(0),
            delivered: Mutex::new(Vec::new()),
        }
    }

    fn act(&self, contact: usize) -> Act {
        let mut cursors = self.cursors.lock().unwrap();
        let n = cursors[contact].0;
        cursors[contact].0 += 1;
        self.acts[n % self.acts.len()]
    }

    fn send(&self, contact: usize) -> SendOutcome {
        let mut cursors = self.cursors.lock().unwrap();
        let n = cursors[contact].1;
        cursors[contact].1 += 1;
        self.sends[n % self.sends.len()]
    }

    /// A text no other message has: what was delivered twice is then visible.
    fn text(&self, who: &str) -> String {
        format!("{who} {}", self.counter.fetch_add(1, Ordering::Relaxed))
    }
}

fn contact_index(contact: &str) -> usize {
    CONTACTS.iter().position(|c| *c == contact).expect("one of the test contacts")
}

fn contact(index: usize) -> Contact {
    Contact::parse(CONTACTS[index]).unwrap()
}

/// A channel that follows the script.
struct FakeChannel {
    script: Arc<Script>,
    ready: Mutex<Option<String>>,
    sink: OnceLock<Arc<dyn InboundSink>>,
    /// The channel ids of the messages it took (for late refusals).
    taken: Mutex<Vec<String>>,
}

impl FakeChannel {
    fn new(script: Arc<Script>) -> FakeChannel {
        FakeChannel { script, ready: Mutex::new(None), sink: OnceLock::new(), taken: Mutex::new(Vec::new()) }
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
        ChannelStatus { kind: "fake".into(), state: "test".into(), connected: true, detail: None, phone: None }
    }

    fn ready(&self) -> Result<(), String> {
        match self.ready.lock().unwrap().clone() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    fn send<'a>(&'a self, to: &'a Contact, text: &'a str) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        Box::pin(async move {
            let outcome = self.script.send(contact_index(to.as_str()));
            let reason = |r: &str| r.to_string();
            match outcome {
                SendOutcome::Ok | SendOutcome::Slow(_) => {
                    if let SendOutcome::Slow(ms) = outcome {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                    let id = format!("wa-{}", self.script.counter.fetch_add(1, Ordering::Relaxed));
                    self.script.delivered.lock().unwrap().push(text.to_string());
                    self.taken.lock().unwrap().push(id.clone());
                    Ok(Sent { message_id: Some(id) })
                }
                SendOutcome::Rejected => Err(ChannelError::Rejected { channel: "fake", reason: reason("not allowed") }),
                SendOutcome::Failed => {
                    Err(ChannelError::Failed { channel: "fake", reason: reason("not sent after 3 attempts") })
                }
                SendOutcome::Unavailable => {
                    // As a real channel: what refuses a send also stops it being ready.
                    *self.ready.lock().unwrap() = Some(reason("logged out"));
                    Err(ChannelError::Unavailable { channel: "fake", reason: reason("logged out") })
                }
            }
        })
    }
}

/// An agent that does, each turn, what the script says next for its contact.
fn agent(script: Arc<Script>) -> Arc<TestAgent> {
    Arc::new(TestAgent::new(move |turn, tools| {
        let script = script.clone();
        Box::pin(async move {
            let act = script.act(contact_index(&turn.instance.target_contact));
            let send = || ToolCall::SendMessage { text: script.text("agent") };
            // Refused tool calls are part of the game: the engine says why, the agent goes on.
            match act {
                Act::Send => drop(tools.call(send()).await),
                Act::SendThenWait(ms) => {
                    drop(tools.call(send()).await);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Act::MarkTodo => {
                    let call = ToolCall::MarkTodoItem {
                        todo_id: "1".into(),
                        status: TodoStatus::Completed,
                        answer: Some("done".into()),
                    };
                    drop(tools.call(call).await);
                }
                Act::Schedule(s) => {
                    drop(tools.call(ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(s) }).await);
                    drop(tools.call(send()).await);
                }
                Act::End => drop(
                    tools
                        .call(ToolCall::EndConversation {
                            reason: "objective met".into(),
                            outcome: Some(Outcome::Achieved),
                            summary: None,
                        })
                        .await,
                ),
                Act::Human => {
                    let call = ToolCall::RequestHumanIntervention { reason: "needs a person".into(), question: None };
                    drop(tools.call(call).await);
                }
                Act::Fail => return Err(AgentError::Model("scripted failure".into())),
                Act::Nothing => {}
            }
            Ok(())
        })
    }))
}

// ---- one case -----------------------------------------------------------------

/// What a key was first used for, and what it produced.
#[derive(Debug, Clone)]
enum KeyUse {
    Create { request: CreateInstanceRequest, id: Uuid },
    Send { instance: Uuid, text: String },
}

/// What the test has seen so far, to compare each step with the last.
#[derive(Default)]
struct Model {
    /// Every conversation a create made, oldest first.
    ids: Vec<Uuid>,
    keys: HashMap<u8, KeyUse>,
    /// Each instance as it was at the last check.
    seen: HashMap<Uuid, ConversationInstance>,
    transcripts: HashMap<Uuid, Vec<TranscriptMessage>>,
}

struct Run {
    home: Home,
    store: Store,
    script: Arc<Script>,
    engine: Engine,
    channel: Arc<FakeChannel>,
    agent: Arc<TestAgent>,
    model: Model,
}

/// Short reply window and heartbeat bounds, so everything happens within the waits generated.
fn settings() -> Settings {
    Settings {
        reply_window: Duration::from_millis(1_500),
        scheduled_heartbeat_bounds: (Duration::from_secs(1), Duration::from_secs(5)),
    }
}

fn boot(home: &Home, script: &Arc<Script>) -> Checked<(Engine, Arc<FakeChannel>, Arc<TestAgent>)> {
    let channel = Arc::new(FakeChannel::new(script.clone()));
    let agent = agent(script.clone());
    let store = Store::open(home).map_err(|e| e.to_string())?;
    let engine = Engine::start(store, channel.clone(), agent.clone(), settings()).map_err(|e| e.to_string())?;
    Ok((engine, channel, agent))
}

fn request(contact: usize, interval_s: u64, max_followups: u32) -> CreateInstanceRequest {
    CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: CONTACTS[contact].into(),
        todos: vec![NewTodo { text: "delivery day".into() }],
        heartbeat_config: Some(HeartbeatOverrides {
            interval_ms: Some(interval_s * 1_000),
            max_followups: Some(max_followups),
        }),
    }
}

fn key_name(slot: u8) -> String {
    format!("key-{slot}")
}

/// The engine's own refusal of `event` on `instance`, if the table refuses it.
fn refused(instance: &ConversationInstance, event: Event) -> bool {
    fsm::next(instance.state, event, instance.previous_state).is_err()
}

impl Run {
    fn start(home: Home, script: Arc<Script>) -> Checked<Run> {
        let (engine, channel, agent) = boot(&home, &script)?;
        let store = Store::open(&home).map_err(|e| e.to_string())?;
        Ok(Run { home, store, script, engine, channel, agent, model: Model::default() })
    }

    fn pick(&self, pick: usize) -> Option<Uuid> {
        (!self.model.ids.is_empty()).then(|| self.model.ids[pick % self.model.ids.len()])
    }

    fn get(&self, id: Uuid) -> Checked<ConversationInstance> {
        self.engine.get(&id.to_string()).map_err(|e| format!("get {id}: {e}"))
    }

    fn transcript(&self, id: Uuid) -> Checked<Vec<TranscriptMessage>> {
        self.store.read_transcript(id).map_err(|e| format!("transcript of {id}: {e}"))
    }

    /// The conversation that holds `contact`, as the engine shows it.
    fn holder(&self, contact: usize) -> Option<ConversationInstance> {
        self.engine.list(None, Some(&self::contact(contact))).into_iter().find(|i| i.holds_contact())
    }

    async fn step(&mut self, op: &Op) -> Checked {
        STEPS.fetch_add(1, Ordering::Relaxed);
        match *op {
            Op::Create { contact, interval_s, max_followups, key } => {
                self.create(request(contact, interval_s, max_followups), key).await?
            }
            Op::Pause(pick) => self.operate(pick, Event::Pause).await?,
            Op::Resume(pick) => self.operate(pick, Event::Resume).await?,
            Op::Cancel(pick) => self.operate(pick, Event::Cancel).await?,
            Op::Send { pick, key } => self.send(pick, key).await?,
            Op::Say { contact } => self.say(contact).await?,
            Op::Wait { ms } => tokio::time::sleep(Duration::from_millis(ms)).await,
            Op::Jump { ms } => tokio::time::advance(Duration::from_millis(ms)).await,
            Op::ChannelBack => {
                *self.channel.ready.lock().unwrap() = None;
                if let Some(sink) = self.channel.sink.get() {
                    sink.channel_changed();
                }
            }
            Op::LateRefusal(pick) => {
                let taken = self.channel.taken.lock().unwrap().clone();
                if let (false, Some(sink)) = (taken.is_empty(), self.channel.sink.get()) {
                    sink.delivery_failed(taken[pick % taken.len()].clone(), "463".into()).await;
                }
            }
            Op::Restart => {
                self.engine.shutdown().await;
                // What the stopped engine shows is what is on disk.
                self.check_view()?;
                TURNS.fetch_add(self.agent.kinds().len() as u64, Ordering::Relaxed);
                (self.engine, self.channel, self.agent) = boot(&self.home, &self.script)?;
            }
        }
        settle(&self.engine).await?;
        self.check()
    }

    async fn create(&mut self, mut request: CreateInstanceRequest, key: Option<Key>) -> Checked {
        let earlier = key.and_then(|k| self.model.keys.get(&k.slot).cloned());
        if let (Some(Key { retry: true, .. }), Some(KeyUse::Create { request: first, .. })) = (key, &earlier) {
            request = first.clone();
        }
        let holder = self.holder(contact_index(&request.target_contact));
        let created = match key {
            None => self.engine.create(request.clone()).await.map_err(|e| format!("create: {e}"))?,
            Some(k) => {
                let result = self.engine.create_once(&key_name(k.slot), request.clone()).await;
                match (earlier, result) {
                    (Some(KeyUse::Create { request: first, id }), Ok(once)) if first == request => {
                        // Invariant 9: a retry returns the first conversation and makes none.
                        ensure!(once.replayed && once.value.id == id, "retried create made {once:?}, not {id}");
                        return Ok(());
                    }
                    (Some(_), Err(EngineError::KeyReused(_))) => return Ok(()),
                    (None, Ok(once)) => {
                        ensure!(!once.replayed, "a new key replayed {once:?}");
                        self.model.keys.insert(k.slot, KeyUse::Create { request: request.clone(), id: once.value.id });
                        once.value
                    }
                    (earlier, result) => return Err(format!("create with {k:?} (used for {earlier:?}): {result:?}")),
                }
            }
        };
        ensure!(!self.model.ids.contains(&created.id), "create returned an existing conversation {}", created.id);
        // FIFO: a contact already held queues the newcomer.
        let expected = if holder.is_some() { State::Queued } else { State::Created };
        ensure!(created.state == expected, "created {:?} while the holder was {holder:?}", created.state);
        self.model.ids.push(created.id);
        Ok(())
    }

    /// Pause, resume or cancel: done exactly when the table allows it;
    /// refused otherwise, naming the state, and then nothing changes.
    async fn operate(&mut self, pick: usize, event: Event) -> Checked {
        let Some(id) = self.pick(pick) else { return Ok(()) };
        let before = self.get(id)?;
        let transcript = self.transcript(id)?;
        let result = match event {
            Event::Pause => self.engine.pause(&id.to_string()).await,
            Event::Resume => self.engine.resume(&id.to_string()).await,
            _ => self.engine.cancel(&id.to_string()).await,
        };
        match result {
            Ok(after) => {
                ensure!(!refused(&before, event), "{event} was done in {}", before.state);
                ensure!(after.id == id, "{event} answered with another conversation");
                match event {
                    Event::Pause => ensure!(
                        after.state == State::Paused && after.previous_state == Some(before.state),
                        "pause from {} gave {} (previous {:?})",
                        before.state,
                        after.state,
                        after.previous_state
                    ),
                    Event::Resume => ensure!(after.state != State::Paused, "resume left it PAUSED"),
                    _ => ensure!(
                        after.state == State::Failed && after.failure_reason.as_deref() == Some("cancelled"),
                        "cancel gave {} ({:?})",
                        after.state,
                        after.failure_reason
                    ),
                }
            }
            Err(EngineError::Transition { id: refused_id, source }) => {
                ensure!(refused(&before, event), "{event} refused in {}, which the table allows", before.state);
                ensure!(
                    refused_id == id && source.state == before.state && source.event == event,
                    "refusal names {refused_id} {source} for {id} in {}",
                    before.state
                );
                self.unchanged(&before, &transcript)?;
            }
            Err(other) => return Err(format!("{event} on {id} in {}: {other}", before.state)),
        }
        Ok(())
    }

    /// A refused command changed nothing: in the engine, on disk, in the transcript.
    fn unchanged(&self, before: &ConversationInstance, transcript: &[TranscriptMessage]) -> Checked {
        let disk = self.store.load_instances().map_err(|e| e.to_string())?.into_iter().find(|i| i.id == before.id);
        ensure!(self.get(before.id)? == *before, "a refused command changed the engine's view of {}", before.id);
        ensure!(disk.as_ref() == Some(before), "a refused command changed {} on disk", before.id);
        ensure!(self.transcript(before.id)? == transcript, "a refused command changed the transcript of {}", before.id);
        Ok(())
    }

    /// `relay send`, with or without a key.
    async fn send(&mut self, pick: usize, key: Option<Key>) -> Checked {
        let Some(mut id) = self.pick(pick) else { return Ok(()) };
        let mut text = self.script.text("operator");
        let earlier = key.and_then(|k| self.model.keys.get(&k.slot).cloned());
        if let (Some(Key { retry: true, .. }), Some(KeyUse::Send { instance, text: first })) = (key, &earlier) {
            (id, text) = (*instance, first.clone());
        }
        let before = self.get(id)?;
        let transcript = self.transcript(id)?;
        let ready = self.channel.ready().is_ok();
        // The message a retried key made, if it went out (or may have).
        let done = match &earlier {
            Some(KeyUse::Send { instance, text: first }) if *instance == id && *first == text => {
                transcript.iter().find(|m| m.content == text && m.send_status != Some(SendStatus::Failed)).cloned()
            }
            _ => None,
        };
        let result = match key {
            None => self.engine.send(&id.to_string(), text.clone()).await.map(|m| (m, false)),
            Some(k) => {
                let result = self.engine.send_once(&key_name(k.slot), &id.to_string(), text.clone()).await;
                match &earlier {
                    None => {
                        self.model.keys.insert(k.slot, KeyUse::Send { instance: id, text: text.clone() });
                    }
                    Some(KeyUse::Send { instance, text: first }) if *instance == id && *first == text => {}
                    Some(other) => {
                        ensure!(
                            matches!(result, Err(EngineError::KeyReused(_))),
                            "key {k:?} used for {other:?} again for another send: {result:?}"
                        );
                        return Ok(());
                    }
                }
                result.map(|once| (once.value, once.replayed))
            }
        };
        if let Some(first) = done {
            // Invariant 9: a retry of a message that went out returns it and sends nothing.
            let replayed = result.as_ref().is_ok_and(|(m, replayed)| *replayed && *m == first);
            ensure!(replayed, "retried send of {first:?} gave {result:?}");
            return Ok(());
        }
        match result {
            Ok((message, replayed)) => {
                ensure!(!replayed, "replayed a send that never went out: {message:?}");
                ensure!(!refused(&before, Event::ManualSend), "send was done in {}", before.state);
                ensure!(
                    message.instance_id == id
                        && message.role == Role::Manual
                        && message.content == text
                        && message.send_status == Some(SendStatus::Sent),
                    "send answered {message:?}"
                );
                let recorded = self.transcript(id)?;
                ensure!(recorded.iter().any(|m| m.id == message.id), "sent {} but not in the transcript", message.id);
            }
            Err(EngineError::Transition { id: refused_id, source }) => {
                ensure!(
                    refused(&before, Event::ManualSend),
                    "send refused in {}, which the table allows",
                    before.state
                );
                ensure!(refused_id == id && source.state == before.state, "refusal names {source} in {}", before.state);
                self.unchanged(&before, &transcript)?;
            }
            Err(EngineError::Channel(error)) => {
                ensure!(!refused(&before, Event::ManualSend), "send tried in {}: {error}", before.state);
                if ready {
                    // Tried, and written down as failed.
                    let recorded = self.transcript(id)?;
                    let failed = recorded.iter().find(|m| m.content == text);
                    ensure!(
                        failed.is_some_and(|m| m.send_status == Some(SendStatus::Failed)),
                        "a failed send is recorded as {failed:?}"
                    );
                } else {
                    // Not even tried: nothing is written.
                    self.unchanged(&before, &transcript)?;
                }
            }
            Err(other) => return Err(format!("send to {id} in {}: {other}", before.state)),
        }
        Ok(())
    }

    /// A contact writes: the conversation holding them records it, else it is kept unrouted.
    async fn say(&mut self, contact: usize) -> Checked {
        let text = self.script.text("contact");
        let holder = self.holder(contact);
        let unrouted = self.engine.unrouted_count();
        let delivery = self.engine.deliver(InboundMessage::new(self::contact(contact), text.clone())).await;
        match (&holder, &delivery) {
            (Some(holder), Delivery::Delivered(id)) if *id == holder.id => {
                let recorded = self.transcript(*id)?;
                ensure!(
                    recorded.iter().any(|m| m.role == Role::Contact && m.content == text),
                    "a delivered message is not in the transcript"
                );
                // Whenever the contact writes, the follow-ups start over.
                ensure!(self.get(*id)?.follow_up_count == 0, "follow_up_count not reset by a contact message");
            }
            (None, Delivery::NoConversation) => {
                ensure!(self.engine.unrouted_count() == unrouted + 1, "an unrouted message was not kept");
            }
            _ => return Err(format!("message for holder {:?} went {delivery:?}", holder.map(|h| h.id))),
        }
        Ok(())
    }

    // ---- invariants -----------------------------------------------------------

    /// Invariant 8: the engine shows exactly what is on disk.
    fn check_view(&self) -> Checked<Vec<ConversationInstance>> {
        let disk = self.store.load_instances().map_err(|e| e.to_string())?;
        let view = self.engine.list(None, None);
        if disk != view {
            let differs = disk.iter().zip(&view).find(|(d, v)| d != v);
            return Err(format!(
                "the engine's view is not what is on disk: {differs:#?} ({} vs {})",
                disk.len(),
                view.len()
            ));
        }
        CHECKS.fetch_add(1, Ordering::Relaxed);
        Ok(disk)
    }

    fn check(&mut self) -> Checked {
        let disk = self.check_view()?;
        // Invariant 9: every conversation comes from one create; none is lost or doubled.
        let ids: HashSet<Uuid> = disk.iter().map(|i| i.id).collect();
        let made: HashSet<Uuid> = self.model.ids.iter().copied().collect();
        ensure!(ids == made && disk.len() == made.len(), "on disk {ids:?}, created {made:?}");

        for instance in &disk {
            check_instance(instance, self.model.seen.get(&instance.id))?;
        }
        for contact in CONTACTS {
            let theirs: Vec<&ConversationInstance> = disk.iter().filter(|i| i.target_contact == contact).collect();
            check_contact(&theirs, self.channel.ready().is_ok())?;
        }
        for instance in &disk {
            let now = self.transcript(instance.id)?;
            let before = self.model.transcripts.get(&instance.id).map(Vec::as_slice).unwrap_or_default();
            check_transcript(instance.id, before, &now)?;
            self.model.transcripts.insert(instance.id, now);
        }
        // Invariant 9: one key, at most one message (texts are unique, so
        // two messages would show as two ids with its text).
        for used in self.model.keys.values() {
            if let KeyUse::Send { instance, text } = used {
                let copies = self.model.transcripts[instance].iter().filter(|m| m.content == *text).count();
                ensure!(copies <= 1, "the key for {text:?} made {copies} messages");
            }
        }
        // Nothing reached a contact twice (every text is unique).
        let delivered = self.script.delivered.lock().unwrap().clone();
        let unique: HashSet<&String> = delivered.iter().collect();
        ensure!(unique.len() == delivered.len(), "a message was delivered twice: {delivered:?}");

        let mut reached = REACHED.lock().unwrap();
        for e in disk.iter().flat_map(|i| &i.history) {
            let taken = (e.from_state, e.trigger.clone());
            if !reached.contains(&taken) {
                reached.push(taken);
            }
        }
        drop(reached);
        self.model.seen = disk.into_iter().map(|i| (i.id, i)).collect();
        Ok(())
    }
}

fn check_instance(i: &ConversationInstance, seen: Option<&ConversationInstance>) -> Checked {
    let id = i.id;
    // Invariant 2: terminal states absorb; nothing about the conversation changes after.
    if let Some(seen) = seen.filter(|s| s.state.is_terminal()) {
        ensure!(i == seen, "{id} changed after it ended {}: now {i:#?}", seen.state);
    }
    // Invariant 3: PAUSED always knows where resume returns; nothing else has a previous state.
    ensure!(
        (i.state == State::Paused) == i.previous_state.is_some(),
        "{id} is {} with previous_state {:?}",
        i.state,
        i.previous_state
    );
    ensure!(
        i.previous_state.is_none_or(|p| p != State::Paused && !p.is_terminal()),
        "{id} would resume to {:?}",
        i.previous_state
    );
    // Invariant 4, in its exact form now that the count is of follow-ups
    // sent: never more than max_followups, and exactly that many when the
    // conversation was abandoned for silence.
    let max = i.heartbeat_config.max_followups;
    ensure!(i.follow_up_count <= max, "{id}: follow_up_count {} > {max}", i.follow_up_count);
    ensure!(
        i.state != State::Abandoned || i.follow_up_count == max,
        "{id} is {} with follow_up_count {} of {max}",
        i.state,
        i.follow_up_count
    );
    // Heartbeats: armed exactly while WAITING_FOR_REPLY; the time left kept exactly while paused from it.
    ensure!(
        i.next_heartbeat_at.is_some() == (i.state == State::WaitingForReply),
        "{id} is {} with next_heartbeat_at {:?}",
        i.state,
        i.next_heartbeat_at
    );
    ensure!(
        i.paused_heartbeat_remaining_ms.is_some() == (i.previous_state == Some(State::WaitingForReply)),
        "{id} is {} (from {:?}) with paused_heartbeat_remaining_ms {:?}",
        i.state,
        i.previous_state,
        i.paused_heartbeat_remaining_ms
    );
    check_history(i)?;
    // Invariant 7 (append-only): what was recorded stays.
    if let Some(seen) = seen {
        ensure!(
            i.history.starts_with(&seen.history),
            "{id}: history rewritten: {:#?} then {:#?}",
            seen.history,
            i.history
        );
    }
    Ok(())
}

/// Invariant 7: every history entry is a move the table allows, and they chain.
fn check_history(i: &ConversationInstance) -> Checked {
    let id = i.id;
    let h = &i.history;
    ensure!(
        h.first().is_some_and(|e| e.from_state.is_none()
            && e.to_state == State::Created
            && e.trigger == "create"
            && e.timestamp == i.created_at),
        "{id}: history does not start with its creation: {:?}",
        h.first()
    );
    for pair in h.windows(2) {
        let (last, e) = (&pair[0], &pair[1]);
        ensure!(e.from_state == Some(last.to_state), "{id}: {:?} does not follow {:?}", e, last);
        let event = Event::ALL.into_iter().find(|ev| ev.as_str() == e.trigger);
        let Some(event) = event else { return Err(format!("{id}: unknown trigger {:?}", e.trigger)) };
        let from = last.to_state;
        // A resume goes back to the state the pause came from.
        let previous = if from == State::Paused { last.from_state } else { None };
        let target = fsm::next(from, event, previous);
        ensure!(
            target.as_ref().is_ok_and(|t| *t != Target::Stay && fsm::resolve(from, *t, previous) == e.to_state),
            "{id}: {from} --{event}--> {} is not in the table ({target:?})",
            e.to_state
        );
    }
    ensure!(h.last().map(|e| e.to_state) == Some(i.state), "{id} is {} but its history ends elsewhere", i.state);
    Ok(())
}

/// What `i` was at instant `t`: its state and, when PAUSED, where it was paused from.
fn state_at(i: &ConversationInstance, t: DateTime<Utc>) -> Option<(State, Option<State>)> {
    let e = i.history.iter().rev().find(|e| e.timestamp <= t)?;
    Some((e.to_state, if e.to_state == State::Paused { e.from_state } else { None }))
}

/// `ConversationInstance::holds_contact`, for a state in the past.
fn holds((state, paused_from): (State, Option<State>)) -> bool {
    !state.is_terminal() && state != State::Queued && !(state == State::Paused && paused_from == Some(State::Queued))
}

/// The invariants about one contact's conversations (oldest first).
fn check_contact(theirs: &[&ConversationInstance], channel_ready: bool) -> Checked {
    // Invariant 1: at most one holds the contact, now...
    let holders: Vec<Uuid> = theirs.iter().filter(|i| i.holds_contact()).map(|i| i.id).collect();
    ensure!(holders.len() <= 1, "{} conversations hold one contact: {holders:?}", holders.len());
    // ... and at every instant their histories record.
    for t in theirs.iter().flat_map(|i| i.history.iter().map(|e| e.timestamp)) {
        let at: Vec<Uuid> = theirs.iter().filter(|i| state_at(i, t).is_some_and(holds)).map(|i| i.id).collect();
        ensure!(at.len() <= 1, "at {t}, {} conversations held one contact: {at:?}", at.len());
    }
    // Invariant 6: the queue is FIFO. When one was promoted, no older one was still QUEUED
    // (one paused or cancelled meanwhile is not QUEUED, and rightly skipped).
    for (n, x) in theirs.iter().enumerate() {
        for promoted in x.history.iter().filter(|e| e.trigger == Event::PriorInstanceTerminal.as_str()) {
            for older in &theirs[..n] {
                let then = state_at(older, promoted.timestamp).map(|s| s.0);
                ensure!(
                    then != Some(State::Queued),
                    "{} was promoted at {} while the older {} was still QUEUED",
                    x.id,
                    promoted.timestamp,
                    older.id
                );
            }
        }
    }
    // Once the engine has settled, nothing that can move on its own is left waiting.
    let holder = theirs.iter().find(|i| i.holds_contact());
    let queued = theirs.iter().find(|i| i.state == State::Queued);
    ensure!(holder.is_some() || queued.is_none(), "{:?} stays QUEUED behind a free contact", queued.map(|i| i.id));
    if let Some(h) = holder {
        ensure!(h.state != State::Created, "{} stays CREATED", h.id);
        ensure!(
            h.state != State::WaitingForReply || h.unanswered_contact_messages == 0,
            "{} waits for a reply with {} unanswered",
            h.id,
            h.unanswered_contact_messages
        );
        let needs_turn = matches!(h.state, State::Active | State::HeartbeatScheduled);
        ensure!(
            !(needs_turn && channel_ready && h.channel_blocked.is_some()),
            "{} is {} waiting for a channel that is ready: {:?}",
            h.id,
            h.state,
            h.channel_blocked
        );
    }
    Ok(())
}

/// Invariant 5: transcripts are append-only; a message keeps its place, id,
/// role and text, and its send status only moves forward.
fn check_transcript(id: Uuid, before: &[TranscriptMessage], now: &[TranscriptMessage]) -> Checked {
    ensure!(now.len() >= before.len(), "{id}: the transcript lost messages ({} then {})", before.len(), now.len());
    for (old, new) in before.iter().zip(now) {
        ensure!(
            old.id == new.id && old.role == new.role && old.content == new.content,
            "{id}: a message was rewritten: {old:?} then {new:?}"
        );
        ensure!(
            status_may_move(old, new),
            "{id}: send status went {:?} -> {:?} ({new:?})",
            old.send_status,
            new.send_status
        );
    }
    for m in now {
        ensure!(m.instance_id == id, "{id}: holds a message of {}", m.instance_id);
        ensure!(
            matches!(m.role, Role::Agent | Role::Manual) == m.send_status.is_some(),
            "{id}: a {:?} message has send status {:?}",
            m.role,
            m.send_status
        );
        ensure!(
            m.delivery_error.is_some() == (m.send_status == Some(SendStatus::Failed)),
            "{id}: {:?} with delivery error {:?}",
            m.send_status,
            m.delivery_error
        );
    }
    Ok(())
}

/// The moves a message's send status may make between two looks:
/// pending -> sent / failed / unconfirmed; sent -> failed (refused after it
/// was taken). A failed operator message may be tried again under its id (an
/// idempotent retry), and only then its status and time start over.
fn status_may_move(old: &TranscriptMessage, new: &TranscriptMessage) -> bool {
    use SendStatus::*;
    let retried = old.role == Role::Manual && old.send_status == Some(Failed);
    let same_time = old.timestamp == new.timestamp || retried;
    let allowed = match (old.send_status, new.send_status) {
        (a, b) if a == b => true,
        (Some(Pending), Some(Sent | Failed | Unconfirmed)) => true,
        (Some(Sent), Some(Failed)) => true,
        (Some(Failed), Some(_)) => retried,
        _ => false,
    };
    allowed && same_time
}

/// Lets the engine do everything it can without time passing (plus a few
/// ms): each 1 ms sleep returns only after the runtime went idle, and three
/// quiet ones in a row mean every chain of events has run out.
async fn settle(engine: &Engine) -> Checked {
    let changes = engine.subscribe();
    let mut last = *changes.borrow();
    let mut quiet = 0;
    for _ in 0..10_000 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let now = *changes.borrow();
        if now == last {
            quiet += 1;
            if quiet == 3 {
                return Ok(());
            }
        } else {
            (last, quiet) = (now, 0);
        }
    }
    Err("the engine never settles".into())
}

fn run_case(input: &Input) -> Result<(), TestCaseError> {
    CASES.fetch_add(1, Ordering::Relaxed);
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    let result = runtime.block_on(async {
        let mut run = Run::start(Home::at(dir.path()), Arc::new(Script::new(input)))?;
        for (n, op) in input.ops.iter().enumerate() {
            run.step(op).await.map_err(|e| format!("step {n} ({op:?}): {e}"))?;
        }
        TURNS.fetch_add(run.agent.kinds().len() as u64, Ordering::Relaxed);
        Ok::<(), String>(())
    });
    drop(runtime);
    result.map_err(TestCaseError::fail)
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(value.trim().parse().unwrap_or_else(|_| panic!("{name} must be a number, not {value:?}")))
}

#[test]
fn random_operations_keep_the_engine_invariants() {
    let cases = env_number("RELAY_PROPTEST_CASES").map_or(DEFAULT_CASES, |n| n as u32);
    let seed = match std::env::var("RELAY_PROPTEST_SEED").as_deref() {
        Err(_) => DEFAULT_SEED,
        Ok("random") => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
            now.as_nanos() as u64
        }
        Ok(_) => env_number("RELAY_PROPTEST_SEED").unwrap(),
    };
    let config = Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    let started = std::time::Instant::now();
    let result = TestRunner::new(config).run(&input(), |input| run_case(&input));
    eprintln!(
        "engine_properties: {} cases, {} steps, {} invariant checks, {} agent turns in {:.1?} (RELAY_PROPTEST_SEED={seed})",
        CASES.load(Ordering::Relaxed),
        STEPS.load(Ordering::Relaxed),
        CHECKS.load(Ordering::Relaxed),
        TURNS.load(Ordering::Relaxed),
        started.elapsed(),
    );
    let reached = REACHED.lock().unwrap();
    let (taken, missed): (Vec<_>, Vec<_>) = fsm::TABLE
        .iter()
        .filter(|(_, _, target)| *target != Target::Stay)
        .partition(|(from, event, _)| reached.contains(&(Some(*from), event.as_str().to_string())));
    let missed: Vec<String> = missed.iter().map(|(from, event, _)| format!("{from} + {event}")).collect();
    eprintln!("engine_properties: {} table rows taken; not taken: {missed:?}", taken.len());
    drop(reached);
    if let Err(error) = result {
        panic!("{error}");
    }
}
