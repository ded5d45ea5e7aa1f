//! Crash safety: the daemon is killed with SIGKILL at random moments while a
//! workload runs (creates, operator commands, `relay send`, contact messages,
//! agent turns against the scripted model server), then restarted, trial
//! after trial on the same home. After every kill:
//!
//! - every file in the home parses (a JSONL file may end in one torn line,
//!   which readers skip);
//! - every operation the API acknowledged is there after the restart;
//! - no message is sent twice, every message the channel took is recorded,
//!   and messages caught mid-send come back `unconfirmed`, not re-sent;
//! - a create retried with its idempotency key yields the same conversation;
//! - every conversation keeps the design's invariants (support/invariants.rs:
//!   a valid state, a history the state table allows, one conversation
//!   holding a contact at a time, nothing recorded lost or rewritten), on
//!   disk after the kill and as the restarted daemon shows it.
//!
//! At the end, heartbeats must fire and conversations must run on to where
//! they wait for a person or end: timers are re-armed, nothing is stuck.
//!
//! `RELAY_CRASH_TRIALS` (default 50) sets the number of kills;
//! `RELAY_CRASH_SEED` replays a run (the seed is printed).
//! The longer run: `RELAY_CRASH_TRIALS=500 cargo test --release --test it crash:: -- --nocapture`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::invariants;
use crate::support::model::{each_turn, use_model};
use crate::support::*;
use relay::api::{ConversationInstance, OutboxEntry, SendStatus, State, TranscriptMessage};
use relay::scripted_model::{Reply, Responder, ScriptedModel};
use relay::store::ConversationRecord;
use serde_json::{Value, json};
use uuid::Uuid;

const CONTACTS: [&str; 4] = ["+56912345678", "+447911123456", "+14155552671", "+4915112345678"];

/// What the daemon acknowledged (a 2xx with a body), so it must survive.
#[derive(Default)]
struct Acks {
    /// idempotency key -> conversation id (and the request, to retry it).
    created: HashMap<String, String>,
    /// Create requests sent whose answer never came: retried after the restart.
    unanswered: HashMap<String, String>,
    /// (conversation, text) of contact messages that reached a conversation.
    said: Vec<(String, String)>,
    /// (conversation, message id) of operator sends.
    sent: Vec<(String, String)>,
    /// (conversation, trigger) of pause / resume / cancel.
    operated: Vec<(String, String)>,
}

/// A small deterministic generator (xorshift), so a failing seed replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn killed_at_random_moments_relay_loses_nothing_and_sends_nothing_twice() {
    let trials: usize = std::env::var("RELAY_CRASH_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let seed: u64 = std::env::var("RELAY_CRASH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    eprintln!("crash trials: {trials}, RELAY_CRASH_SEED={seed}");
    let mut rng = Rng(seed);

    let model = ScriptedModel::start_on_thread(agent_script());
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"retry_backoff_ms": 10, "max_retries": 1, "reply_window_ms": 20}));

    let acks = Arc::new(Mutex::new(Acks::default()));
    let counter = Arc::new(AtomicUsize::new(0));
    let mut requests = 0;
    let mut unconfirmed_seen = 0;
    let mut pending = Vec::new();
    let mut looks = invariants::Looks::default();
    for trial in 0..trials {
        relay.ok(&["start"]);
        let pid = relay.pid().unwrap();
        unconfirmed_seen += check_after_restart(&relay, &acks, &pending, &mut looks);
        retry_unanswered_creates(&relay, &acks);

        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (relay_port, token, acks, stop, counter) =
                (relay.port, relay.token(), acks.clone(), stop.clone(), counter.clone());
            let seed = rng.next();
            std::thread::spawn(move || workload(relay_port, &token, &acks, &stop, &counter, seed))
        };
        std::thread::sleep(Duration::from_millis(20 + rng.below(130)));
        unsafe { libc::kill(pid, libc::SIGKILL) };
        // Not the process state: its main thread can be a zombie while a
        // thread slow to die still holds the lock (and the files it writes).
        relay.wait_until_lock_free();
        stop.store(true, Ordering::SeqCst);
        requests += worker.join().unwrap();
        let on_disk;
        (on_disk, pending) = every_file_parses(relay.path());
        looks.check(relay.path(), on_disk, &format!("on disk after kill {}", trial + 1));
    }

    relay.ok(&["start"]);
    unconfirmed_seen += check_after_restart(&relay, &acks, &pending, &mut looks);
    retry_unanswered_creates(&relay, &acks);
    conversations_run_on(&relay);
    let acks = acks.lock().unwrap();
    eprintln!(
        "crash: {trials} kills, {requests} requests, {} creates, {} contact messages, {} sends, {} operator \
         commands acknowledged; {unconfirmed_seen} messages caught mid-send came back unconfirmed; {} invariant checks",
        acks.created.len(),
        acks.said.len(),
        acks.sent.len(),
        acks.operated.len(),
        invariants::checks_made()
    );
}

/// The model: each turn sends one message with a text never used before
/// (so a duplicate in the outbox can only be relay sending twice), now and
/// then notes a todo or ends the conversation.
fn agent_script() -> Responder {
    let n = AtomicUsize::new(0);
    each_turn(move |_| {
        let n = n.fetch_add(1, Ordering::SeqCst);
        let text = format!("m-{n}-{}", std::process::id());
        match n % 10 {
            9 => Reply::Tools(vec![
                ("mark_todo_item".into(), json!({"todo_id": "1", "status": "completed", "note": "done"})),
                ("end_conversation".into(), json!({"reason": "all done", "outcome": "achieved"})),
            ]),
            _ => Reply::tool("send_message", json!({ "text": text })),
        }
    })
}

/// Random API calls until told to stop or the daemon is gone. Returns how
/// many requests it made.
fn workload(port: u16, token: &str, acks: &Mutex<Acks>, stop: &AtomicBool, counter: &AtomicUsize, seed: u64) -> usize {
    let mut rng = Rng(seed | 1);
    let mut made = 0;
    let auth = format!("Bearer {token}");
    let call = |method: &str, path: &str, extra: &[(&str, &str)], body: Option<&str>| {
        let mut headers = vec![("Host", "127.0.0.1"), ("Authorization", auth.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        headers.extend_from_slice(extra);
        let (status, body) = try_http(port, method, path, &headers, body.unwrap_or("").as_bytes());
        (status, serde_json::from_str::<Value>(&body).ok())
    };
    while !stop.load(Ordering::SeqCst) {
        made += 1;
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let known: Vec<String> = acks.lock().unwrap().created.values().cloned().collect();
        let pick = |rng: &mut Rng| known.get(rng.below(known.len().max(1) as u64) as usize).cloned();
        let (status, _) = match rng.below(10) {
            0..=1 => {
                let key = format!("create-{n}");
                let body = create_body(CONTACTS[rng.below(4) as usize]);
                acks.lock().unwrap().unanswered.insert(key.clone(), body.clone());
                let (status, answer) = call("POST", "/instances", &[("Idempotency-Key", &key)], Some(&body));
                if let Some(id) = answer.as_ref().filter(|_| status == 201).and_then(|a| a["id"].as_str()) {
                    let mut acks = acks.lock().unwrap();
                    acks.unanswered.remove(&key);
                    acks.created.insert(key, id.to_string());
                }
                (status, answer)
            }
            2..=5 => {
                let text = format!("c-{n}");
                let contact = CONTACTS[rng.below(4) as usize];
                let body = json!({"contact": contact, "text": text}).to_string();
                let (status, answer) = call("POST", "/sandbox/messages", &[], Some(&body));
                if let Some(id) = answer.as_ref().filter(|_| status == 200).and_then(|a| a["instance_id"].as_str()) {
                    acks.lock().unwrap().said.push((id.to_string(), text));
                }
                (status, answer)
            }
            6 => match pick(&mut rng) {
                Some(id) => {
                    let body = json!({"message": format!("op-{n}")}).to_string();
                    let key = format!("send-{n}");
                    let path = format!("/instances/{id}/send");
                    let (status, answer) = call("POST", &path, &[("Idempotency-Key", &key)], Some(&body));
                    if let Some(message) = answer.as_ref().filter(|_| status == 200).and_then(|a| a["id"].as_str()) {
                        acks.lock().unwrap().sent.push((id, message.to_string()));
                    }
                    (status, answer)
                }
                None => (0, None),
            },
            _ => match pick(&mut rng) {
                Some(id) => {
                    let op = ["pause", "resume", "cancel"][rng.below(3) as usize];
                    let (status, answer) = call("POST", &format!("/instances/{id}/{op}"), &[], None);
                    if status == 200 {
                        acks.lock().unwrap().operated.push((id, op.to_string()));
                    }
                    (status, answer)
                }
                None => (0, None),
            },
        };
        if status == 0 {
            break; // the daemon is gone
        }
        assert!(status < 500 || status == 503 || status == 502, "a request got {status}");
    }
    made
}

fn create_body(contact: &str) -> String {
    json!({"objective": "Confirm the delivery date", "target_contact": contact,
           "todos": [{"text": "Ask which day suits"}],
           "heartbeat_config": {"interval_ms": 1000, "max_followups": 1}})
    .to_string()
}

/// Creates whose answer was lost in the kill: retried with the same key, they
/// must yield one conversation each, never a second one.
fn retry_unanswered_creates(relay: &Relay, acks: &Mutex<Acks>) {
    let unanswered: Vec<(String, String)> = acks.lock().unwrap().unanswered.drain().collect();
    for (key, body) in unanswered {
        let (status, answer) = relay.http("POST", "/instances", &[("Idempotency-Key", &key)], Some(&body));
        assert_eq!(status, 201, "retrying {key}: {answer}");
        let id = serde_json::from_str::<Value>(&answer).unwrap()["id"].as_str().unwrap().to_string();
        acks.lock().unwrap().created.insert(key, id);
    }
    let acks = acks.lock().unwrap();
    let ids: HashSet<&String> = acks.created.values().collect();
    assert_eq!(ids.len(), acks.created.len(), "two keys yielded one conversation");
    assert_eq!(
        relay.instances().len(),
        acks.created.len(),
        "a conversation exists that no key created, or one is missing"
    );
}

/// The home's record of every conversation; each must read (a checkpoint
/// is replaced whole and its log appended to, so a read while the daemon
/// runs is whole too).
fn records(home: &Path) -> Vec<ConversationRecord> {
    let mut records = Vec::new();
    for entry in std::fs::read_dir(home.join("instances")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let record = relay::store::record_file::load(&path)
                .unwrap_or_else(|e| panic!("{} does not read: {e}", path.display()));
            records.push(record);
        }
    }
    records
}

/// With the daemon dead: every file relay writes parses (a JSONL file may
/// end in one torn line), and the sandbox outbox (what the contacts got)
/// matches the transcripts. Returns the conversations, and the
/// (conversation, message) pairs that were mid-send.
fn every_file_parses(home: &Path) -> (Vec<ConversationRecord>, Vec<(String, String)>) {
    let instances = records(home);
    let mut messages: Vec<TranscriptMessage> = Vec::new();
    for entry in std::fs::read_dir(home.join("transcripts")).unwrap() {
        let path = entry.unwrap().path();
        let mut latest: HashMap<String, TranscriptMessage> = HashMap::new();
        for line in complete_lines(&path) {
            let message: TranscriptMessage = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{} has a bad line ({e}): {line}", path.display()));
            latest.insert(message.id.to_string(), message);
        }
        messages.extend(latest.into_values());
    }
    for name in ["idempotency.jsonl", "unrouted.jsonl"] {
        for line in complete_lines(&home.join(name)) {
            serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{name} has a bad line ({e}): {line}"));
        }
    }

    // The outbox is what the contacts got: nothing twice, and all of it
    // recorded before it went (pending), settled after (sent).
    let mut got = HashSet::new();
    for line in complete_lines(&home.join("sandbox-outbox.jsonl")) {
        let entry: OutboxEntry = serde_json::from_str(&line).unwrap_or_else(|e| panic!("outbox line ({e}): {line}"));
        assert!(got.insert(entry.text.clone()), "sent twice: {}", entry.text);
    }
    let outgoing = |m: &&TranscriptMessage| m.send_status.is_some();
    let recorded: HashSet<&str> = messages
        .iter()
        .filter(outgoing)
        .filter(|m| m.send_status != Some(SendStatus::Failed))
        .map(|m| m.content.as_str())
        .collect();
    for text in &got {
        assert!(recorded.contains(text.as_str()), "{text} reached the contact but no transcript has it");
    }
    for m in messages.iter().filter(|m| m.send_status == Some(SendStatus::Sent)) {
        assert!(got.contains(&m.content), "{} is recorded sent but the contact never got it", m.content);
    }
    let pending = messages
        .iter()
        .filter(|m| m.send_status == Some(SendStatus::Pending))
        .map(|m| (m.instance_id.to_string(), m.id.to_string()))
        .collect();
    (instances, pending)
}

/// The complete lines of a JSONL file (a last line without its newline is a
/// write the kill cut short).
fn complete_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.rfind('\n') {
        Some(end) => text[..end].lines().map(str::to_string).collect(),
        None => Vec::new(),
    }
}

/// After a restart: everything acknowledged is there, mid-send messages are
/// unconfirmed, and the invariants hold. Returns how many were mid-send.
fn check_after_restart(
    relay: &Relay,
    acks: &Mutex<Acks>,
    pending: &[(String, String)],
    looks: &mut invariants::Looks,
) -> usize {
    let acks = acks.lock().unwrap();
    // One list from the daemon, records and transcripts from disk:
    // thousands of checks a trial.
    let listed = relay.instances();
    looks.check(relay.path(), records(relay.path()), "after a restart");
    let instances: HashMap<String, ConversationInstance> = listed.into_iter().map(|i| (i.id.to_string(), i)).collect();
    let transcript = |id: &str| -> Vec<TranscriptMessage> {
        let id: Uuid = id.parse().unwrap();
        looks.transcripts.get(&id).cloned().unwrap_or_else(|| panic!("{id} is not listed"))
    };
    for id in acks.created.values() {
        assert!(instances.contains_key(id), "acknowledged conversation {id} is gone");
    }
    for (id, text) in &acks.said {
        assert!(transcript(id).iter().any(|m| &m.content == text), "acknowledged contact message {text} lost in {id}");
    }
    for (id, message) in &acks.sent {
        let found = transcript(id).into_iter().find(|m| &m.id.to_string() == message);
        let status = found.unwrap_or_else(|| panic!("acknowledged send {message} lost in {id}")).send_status;
        // Settled: sent (and maybe delivered or read since), or failed.
        assert!(!matches!(status, None | Some(SendStatus::Pending | SendStatus::Unconfirmed)), "{message}: {status:?}");
    }
    let mut expected: HashMap<(&str, &str), usize> = HashMap::new();
    for (id, op) in &acks.operated {
        *expected.entry((id.as_str(), op.as_str())).or_default() += 1;
    }
    for ((id, op), count) in expected {
        let done = instances[id].history.iter().filter(|t| t.trigger == op).count();
        assert!(done >= count, "{count} acknowledged {op} of {id}, {done} in its history");
    }
    for (id, message) in pending {
        let found = transcript(id).into_iter().find(|m| &m.id.to_string() == message).unwrap();
        assert_eq!(found.send_status, Some(SendStatus::Unconfirmed), "{message} was mid-send");
    }
    pending.len()
}

/// After the last restart, with the workload stopped: every conversation
/// that is neither waiting for a person nor queued moves on by itself (its
/// heartbeat fires, its turn runs): timers are re-armed and nothing is stuck.
/// One whose latest message never reached the phone waits for it (a kill
/// between the send and its receipt loses the sandbox's receipt), as
/// follow-ups do: the transcript must say it is undelivered.
fn conversations_run_on(relay: &Relay) {
    let list = || relay.instances();
    let undelivered = |i: &ConversationInstance| {
        let Some(awaiting) = &i.awaiting_delivery else { return false };
        let message =
            relay.transcript(&i.id.to_string()).into_iter().find(|m| m["id"] == awaiting.message_id.to_string());
        let status = message.as_ref().map(|m| m["send_status"].as_str().unwrap_or_default().to_string());
        // Its receipt may have come between reading the list and the
        // transcript: then the conversation, read again, awaits it no more.
        if matches!(status.as_deref(), Some("delivered" | "read" | "played")) {
            let now = relay.get(&i.id.to_string());
            if now["awaiting_delivery"]["message_id"] != awaiting.message_id.to_string() {
                return false;
            }
        }
        assert!(
            matches!(status.as_deref(), Some("sent" | "unconfirmed" | "failed")),
            "{} awaits the delivery of {}, which is {status:?}",
            i.id,
            awaiting.message_id
        );
        true
    };
    let waits = |i: &ConversationInstance| {
        i.state.is_terminal()
            || matches!(i.state, State::Paused | State::NeedsHumanIntervention | State::Queued)
            || undelivered(i)
    };
    let at_restart: HashMap<_, usize> =
        list().into_iter().filter(|i| !waits(i)).map(|i| (i.id, i.history.len())).collect();
    let started = Instant::now();
    loop {
        let now: HashMap<_, usize> = list().into_iter().map(|i| (i.id, i.history.len())).collect();
        let stuck: Vec<String> =
            at_restart.iter().filter(|(id, len)| now[*id] <= **len).map(|(id, _)| id.to_string()).collect();
        if stuck.is_empty() {
            eprintln!("crash: {} conversations moved on after the last restart", at_restart.len());
            return;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let shown: Vec<String> = stuck.iter().map(|id| format!("{:#}", relay.get(id))).collect();
            panic!("conversations stuck after the restart: {stuck:?}\n{}", shown.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
