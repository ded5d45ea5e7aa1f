//! The contact messages already handed to a conversation, by WhatsApp id,
//! so one WhatsApp delivers again reaches the conversation once, across
//! restarts too.
//!
//! whatsapp-rust keeps no such record: a message that decrypts is reported
//! each time the server delivers it (only a repeated Signal step is dropped,
//! `whatsapp-rust-0.7.0/src/message/receive.rs` 782-792). Ids are unique per
//! chat and sender (`src/types/durability_hook.rs` 19-25), so the key is the
//! three. The last [`CAPACITY`] are kept in `whatsapp-inbound-ids.jsonl`
//! (see docs/storage.md): a redelivery comes within minutes or hours, never
//! thousands of messages later.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use whatsapp_rust::prelude::Jid;

use crate::store::{Journal, atomic};

/// How many recent message ids are remembered.
pub const CAPACITY: usize = 4096;

/// One line of the journal: a message taken.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SeenId {
    pub chat: String,
    pub sender: String,
    pub id: String,
}

impl SeenId {
    /// The key of a message: its chat and sender without a device part.
    pub fn of(chat: &Jid, sender: &Jid, id: &str) -> SeenId {
        SeenId { chat: chat.to_non_ad().to_string(), sender: sender.to_non_ad().to_string(), id: id.to_string() }
    }
}

pub struct Seen {
    journal: Journal,
    capacity: usize,
    ids: HashSet<SeenId>,
    order: VecDeque<SeenId>,
}

impl Seen {
    /// The ids in `path`, compacted if it has grown. A file relay cannot
    /// read is reported in the log and ignored (not rewritten): forgetting
    /// ids at worst lets a repeat through, better than taking no message.
    pub fn open(path: PathBuf) -> Seen {
        Seen::with_capacity(path, CAPACITY)
    }

    pub fn with_capacity(path: PathBuf, capacity: usize) -> Seen {
        if let Err(error) = atomic::drop_torn_tail_of(&path) {
            tracing::warn!(path = %path.display(), %error, "cannot tidy the list of WhatsApp messages taken");
        }
        let journal = Journal::at(path);
        let lines: Vec<SeenId> = journal.load().unwrap_or_else(|error| {
            tracing::warn!(%error, "the list of WhatsApp messages taken is unreadable; starting a new one");
            Vec::new()
        });
        let keep = &lines[lines.len().saturating_sub(capacity)..];
        if lines.len() > 2 * capacity
            && let Err(error) = journal.rewrite(keep)
        {
            tracing::warn!(%error, "cannot compact the list of WhatsApp messages taken");
        }
        let mut seen = Seen { journal, capacity, ids: HashSet::new(), order: VecDeque::new() };
        for id in keep {
            seen.remember(id.clone());
        }
        seen
    }

    pub fn contains(&self, id: &SeenId) -> bool {
        self.ids.contains(id)
    }

    /// Records a message taken (durably, before this returns).
    pub fn record(&mut self, id: SeenId) {
        if self.ids.contains(&id) {
            return;
        }
        if let Err(error) = self.journal.append(&id) {
            tracing::warn!(%error, "cannot record a WhatsApp message taken");
        }
        self.remember(id);
    }

    fn remember(&mut self, id: SeenId) {
        if self.order.len() == self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        self.order.push_back(id.clone());
        self.ids.insert(id);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn key(n: usize) -> SeenId {
        SeenId {
            chat: "56912345678@s.whatsapp.net".into(),
            sender: "56912345678@s.whatsapp.net".into(),
            id: format!("ID{n}"),
        }
    }

    #[test]
    fn the_device_part_is_not_part_of_the_key() {
        let device: Jid = "56912345678:3@s.whatsapp.net".parse().unwrap();
        let user: Jid = "56912345678@s.whatsapp.net".parse().unwrap();
        assert_eq!(SeenId::of(&user, &device, "A"), SeenId::of(&user, &user, "A"));
    }

    proptest! {
        // Each case appends durably (fsync) up to 80 times: fewer cases.
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any sequence of messages, reopened at any point: an id is
        /// remembered exactly while it is among the last `capacity` taken,
        /// and the file stays within twice that (compacted on opening).
        #[test]
        fn the_last_ids_are_remembered_across_reopening(
            taken in proptest::collection::vec(0usize..40, 0..80),
            reopen_at in proptest::collection::btree_set(0usize..80, 0..4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("ids.jsonl");
            let capacity = 8;
            let mut seen = Seen::with_capacity(path.clone(), capacity);
            let mut recent: VecDeque<usize> = VecDeque::new();
            for (i, n) in taken.iter().enumerate() {
                if reopen_at.contains(&i) {
                    seen = Seen::with_capacity(path.clone(), capacity);
                }
                prop_assert_eq!(seen.contains(&key(*n)), recent.contains(n), "message {} at step {}", n, i);
                if !recent.contains(n) {
                    seen.record(key(*n));
                    if recent.len() == capacity {
                        recent.pop_front();
                    }
                    recent.push_back(*n);
                }
            }
            let lines = std::fs::read_to_string(&path).unwrap_or_default().lines().count();
            prop_assert!(lines <= taken.len());
            drop(seen);
            let reopened = Seen::with_capacity(path.clone(), capacity);
            for n in 0..40 {
                prop_assert_eq!(reopened.contains(&key(n)), recent.contains(&n));
            }
            if lines > 2 * capacity {
                let after = std::fs::read_to_string(&path).unwrap().lines().count();
                prop_assert_eq!(after, capacity);
            }
        }
    }
}
