//! The design's invariants about conversations, shared by every test that
//! looks at many of them: the property tests (after every step), the crash
//! test (on disk after each kill, and after each restart) and the soak test
//! (at its end). Each instance and its history, one live conversation per
//! contact, transcripts append-only. A checker returns the first broken
//! invariant as a sentence, so a property test can shrink on it and the
//! others can panic with it.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use std::path::Path;

use chrono::{DateTime, Utc};
use relay::api::{Role, SendStatus, State, TranscriptMessage};
use relay::fsm::{self, Event, Target};
use relay::home::Home;
use relay::store::{ConversationRecord, Store};
use uuid::Uuid;

/// The first invariant a look found broken, in words.
pub type Checked<T = ()> = Result<T, String>;

thread_local! {
    /// Checks made on this thread: a test that runs its checks on its own
    /// thread (as the property test does) reports how many it made.
    static CHECKS: Cell<u64> = const { Cell::new(0) };
}

/// Counts one check (for a check written without [`ensure!`]).
pub fn count_check() {
    CHECKS.with(|c| c.set(c.get() + 1));
}

/// How many checks this thread has made.
pub fn checks_made() -> u64 {
    CHECKS.with(Cell::get)
}

/// Counts one invariant check, and fails with the message if it does not hold.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {{
        $crate::support::invariants::count_check();
        if !$cond {
            return Err(format!($($msg)+));
        }
    }};
}
pub(crate) use ensure;

/// Panics with the broken invariant, for tests that are not property tests.
pub fn assert_holds(checked: Checked, context: &str) {
    if let Err(broken) = checked {
        panic!("{context}: {broken}");
    }
}

pub fn check_instance(i: &ConversationRecord, seen: Option<&ConversationRecord>) -> Checked {
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
pub fn check_history(i: &ConversationRecord) -> Checked {
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
pub fn state_at(i: &ConversationRecord, t: DateTime<Utc>) -> Option<(State, Option<State>)> {
    let e = i.history.iter().rev().find(|e| e.timestamp <= t)?;
    Some((e.to_state, if e.to_state == State::Paused { e.from_state } else { None }))
}

/// `ConversationRecord::holds_contact`, for a state in the past.
pub fn holds((state, paused_from): (State, Option<State>)) -> bool {
    !state.is_terminal() && state != State::Queued && !(state == State::Paused && paused_from == Some(State::Queued))
}

/// The invariants about one contact's conversations (oldest first), true
/// at every moment.
pub fn check_contact(theirs: &[&ConversationRecord]) -> Checked {
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
    Ok(())
}

/// Once the engine has settled (no event left to handle), nothing of one
/// contact's conversations that can move on its own is left waiting.
pub fn check_settled(theirs: &[&ConversationRecord], channel_ready: bool) -> Checked {
    let holder = theirs.iter().find(|i| i.holds_contact());
    let queued = theirs.iter().find(|i| i.state == State::Queued);
    ensure!(holder.is_some() || queued.is_none(), "{:?} stays QUEUED behind a free contact", queued.map(|i| i.id));
    if let Some(h) = holder {
        // A first message waits only for something it says: quiet hours,
        // WhatsApp's lock, the daily cap, or a channel that cannot even be
        // asked about the lock.
        ensure!(
            h.state != State::Created || h.waiting_for.is_some() || (!channel_ready && h.channel_blocked.is_some()),
            "{} stays CREATED",
            h.id
        );
        ensure!(
            h.state != State::WaitingForReply || h.unanswered_contact_messages == 0,
            "{} waits for a reply with {} unanswered",
            h.id,
            h.unanswered_contact_messages
        );
        let needs_turn = matches!(h.state, State::Created | State::Active | State::HeartbeatScheduled);
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
pub fn check_transcript(id: Uuid, before: &[TranscriptMessage], now: &[TranscriptMessage]) -> Checked {
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
pub fn status_may_move(old: &TranscriptMessage, new: &TranscriptMessage) -> bool {
    use SendStatus::*;
    let retried = old.role == Role::Manual && old.send_status == Some(Failed);
    let same_time = old.timestamp == new.timestamp || retried;
    let allowed = match (old.send_status, new.send_status) {
        (a, b) if a == b => true,
        (Some(Pending), Some(Sent | Failed | Unconfirmed)) => true,
        (Some(Sent | Unconfirmed), Some(Failed)) => true,
        (Some(Failed), Some(_)) => retried,
        // A receipt from the phone: forward only (sent, delivered, read, played).
        (Some(a), Some(b)) => a.after_receipt(b) == Some(b),
        _ => false,
    };
    // What the phone said stays said.
    let kept = |at: Option<_>, now: Option<_>| at.is_none() || at == now;
    allowed && same_time && (retried || (kept(old.delivered_at, new.delivered_at) && kept(old.read_at, new.read_at)))
}

/// Each contact's conversations, oldest first (the order relay lists them in).
pub fn by_contact(all: &[ConversationRecord]) -> BTreeMap<&str, Vec<&ConversationRecord>> {
    let mut oldest_first: Vec<&ConversationRecord> = all.iter().collect();
    oldest_first.sort_by_key(|i| (i.created_at, i.id));
    let mut theirs: BTreeMap<&str, Vec<&ConversationRecord>> = BTreeMap::new();
    for i in oldest_first {
        theirs.entry(i.target_contact.as_str()).or_default().push(i);
    }
    theirs
}

/// The invariants true at every moment of every conversation in `all`:
/// each instance (against how it was when last `seen`, if it was), and each
/// contact's conversations together.
pub fn check_conversations(all: &[ConversationRecord], seen: &HashMap<Uuid, ConversationRecord>) -> Checked {
    for instance in all {
        check_instance(instance, seen.get(&instance.id))?;
    }
    for theirs in by_contact(all).values() {
        check_contact(theirs)?;
    }
    Ok(())
}

/// How every conversation and transcript of a home looked last time, for
/// the tests that look at a running (or killed) daemon's home now and then.
#[derive(Default)]
pub struct Looks {
    pub seen: HashMap<Uuid, ConversationRecord>,
    pub transcripts: HashMap<Uuid, Vec<TranscriptMessage>>,
}

impl Looks {
    /// Panics unless the invariants hold for `instances` and their
    /// transcripts (read from `home`: complete lines, merged by id, as relay
    /// reads them), and nothing recorded at the last look was lost or
    /// rewritten since. `when` says which look it was.
    pub fn check(&mut self, home: &Path, instances: Vec<ConversationRecord>, when: &str) {
        assert_holds(check_conversations(&instances, &self.seen), when);
        let store = Store::open(&Home::at(home)).unwrap();
        for instance in &instances {
            let now = store.read_transcript(instance.id).unwrap();
            let before = self.transcripts.get(&instance.id).map(Vec::as_slice).unwrap_or_default();
            assert_holds(check_transcript(instance.id, before, &now), when);
            self.transcripts.insert(instance.id, now);
        }
        self.seen = instances.into_iter().map(|i| (i.id, i)).collect();
    }
}
