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
//! smallest sequence found, to be written down as a deterministic test in
//! this module.
//!
//! Time: the engine stores heartbeat deadlines in wall-clock time and turns
//! one into a tokio deadline once, when it arms the timer (`sync_timer` in
//! `engine/heartbeat.rs`). On a paused clock the wall clock stands almost still,
//! so a heartbeat fires one interval of tokio time after it was armed, and a
//! pause or a restart re-arms it with nearly the whole interval again. The
//! invariants never depend on when exactly a heartbeat fires, so intervals
//! are short (1 to 4 s) and waits long enough (up to 14 s) for several to
//! fire, on time (`sleep`: every timer in order) or late (`advance`: all at
//! once, as after a suspended laptop).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use relay::agent::{AgentError, ToolCall};
use relay::api::{
    CreateInstanceRequest, HeartbeatOverrides, NewTodo, Outcome, Role, SendStatus, State, TodoStatus, TranscriptMessage,
};
use relay::channel::{Channel, ChannelError, InboundMessage, InboundOutcome, Sent};
use relay::contact::Contact;
use relay::engine::{Engine, EngineError, Settings};
use relay::fsm::{self, Event, Target};
use relay::home::Home;
use relay::store::ConversationRecord;
use relay::store::Store;
use uuid::Uuid;

use crate::support::channel::FakeChannel;
use crate::support::test_agent::TestAgent;

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
static TURNS: AtomicU64 = AtomicU64::new(0);
/// The triggers of every transition the runs made, to show how much of the table they reach.
static REACHED: Mutex<Vec<(Option<State>, String)>> = Mutex::new(Vec::new());

mod case;
mod generate;
mod world;

use crate::support::invariants::{self, Checked, ensure};
use case::*;
use generate::*;
use world::*;

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
        invariants::checks_made(),
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
