//! What is generated: each step of a case, and its outcome when it reaches
//! the agent or the channel.

use super::*;

/// One step of a case. Instances are picked by an index into those created
/// so far (modulo their number), so a sequence stays meaningful as it shrinks.
#[derive(Debug, Clone)]
pub(super) enum Op {
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
    /// The contact's phone sends a receipt for a message the channel took:
    /// delivered, read or played, in any order and repeated.
    Receipt(usize, usize),
    /// `shutdown`, then a new engine on the same home, channel and agent.
    Restart,
}

/// An idempotency key from the pool; `retry` repeats the request it was
/// last used for (when it was used for the same kind of request).
#[derive(Debug, Clone, Copy)]
pub(super) struct Key {
    pub(super) slot: u8,
    pub(super) retry: bool,
}

/// What the agent does in one turn.
#[derive(Debug, Clone, Copy)]
pub(super) enum Act {
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
pub(super) enum SendOutcome {
    Ok,
    /// Takes this long (ms), then succeeds. Past 10 s it outlasts shutdown's
    /// drain, so a restart finds the message pending (then unconfirmed).
    Slow(u64),
    Rejected,
    Failed,
    /// Cannot send at all, and stays so until [`Op::ChannelBack`] or a restart.
    Unavailable,
}

pub(super) fn key() -> impl Strategy<Value = Option<Key>> {
    prop::option::weighted(0.4, (0..KEYS, any::<bool>()).prop_map(|(slot, retry)| Key { slot, retry }))
}

pub(super) fn op() -> impl Strategy<Value = Op> {
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
        1 => pick.clone().prop_map(Op::LateRefusal),
        2 => (pick, 0..3usize).prop_map(|(pick, status)| Op::Receipt(pick, status)),
        1 => Just(Op::Restart),
    ]
}

pub(super) fn act() -> impl Strategy<Value = Act> {
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

pub(super) fn send_outcome() -> impl Strategy<Value = SendOutcome> {
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
pub(super) struct Input {
    pub(super) ops: Vec<Op>,
    pub(super) acts: Vec<Act>,
    pub(super) sends: Vec<SendOutcome>,
}

pub(super) fn input() -> impl Strategy<Value = Input> {
    (
        prop::collection::vec(op(), 1..=MAX_STEPS),
        prop::collection::vec(act(), 1..=12),
        prop::collection::vec(send_outcome(), 1..=12),
    )
        .prop_map(|(ops, acts, sends)| Input { ops, acts, sends })
}
