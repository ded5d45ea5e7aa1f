//! The simulated phones: what each contact's phone holds, has read and
//! answers with receipts, and the simulated reach-out lock; and reading the
//! sandbox's files, which are the simulation's (written without fsync).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::api::{OutboxEntry, PhoneAction, PhoneResponse, SendStatus};
use crate::store::StoreError;

/// The simulated phones, by contact (E.164).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Phones {
    pub(super) offline: BTreeSet<String>,
    /// Messages sent while the phone was offline, by id.
    pub(super) held: BTreeMap<String, Vec<String>>,
    /// Messages read while the phone was offline: their receipts go out
    /// when it is back.
    #[serde(default)]
    pub(super) read_held: BTreeMap<String, Vec<String>>,
    /// The last message each contact read.
    #[serde(default)]
    pub(super) last_read: BTreeMap<String, String>,
    /// Messages delivered and not read yet: the outbox's after `last_read`,
    /// less those held.
    #[serde(skip)]
    pub(super) unread: BTreeMap<String, Vec<String>>,
    /// WhatsApp's reach-out lock, simulated (`relay sandbox lock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) lock: Option<SimulatedLock>,
    /// Contacts that wrote, or had a message delivered: not new to this
    /// number, so the lock does not hold messages to them.
    #[serde(default)]
    pub(super) known: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct SimulatedLock {
    pub(super) until: chrono::DateTime<chrono::Utc>,
    pub(super) reported: bool,
}

impl Phones {
    /// The lock, while it holds.
    pub(super) fn lock(&self) -> Option<SimulatedLock> {
        self.lock.filter(|l| l.until > crate::clock::now())
    }

    /// Whether WhatsApp would refuse a message to `contact` now (error 463).
    pub(super) fn refuses(&self, contact: &str) -> bool {
        self.lock().is_some() && !self.known.contains(contact)
    }
}

/// What the sandbox says of a message refused by its lock, as WhatsApp's
/// error 463 reads in relay.
pub(super) const REFUSED_463: &str =
    "the contact has not messaged this number and WhatsApp limits first contact (error 463)";

/// Receipts a phone sends: (message id, what it says).
pub(super) type Receipts = Vec<(String, SendStatus)>;

impl Phones {
    /// A message reaches the phone, unless it is offline.
    pub(super) fn sent(&mut self, contact: &str, id: &str) -> Receipts {
        let list = if self.offline.contains(contact) { &mut self.held } else { &mut self.unread };
        list.entry(contact.to_string()).or_default().push(id.to_string());
        if self.offline.contains(contact) {
            Vec::new()
        } else {
            self.known.insert(contact.to_string());
            vec![(id.to_string(), SendStatus::Delivered)]
        }
    }

    /// What each phone has not read: what relay sent it after the last
    /// message its contact read, less what it holds.
    pub(super) fn unread_from(&mut self, outbox: &[OutboxEntry]) {
        for entry in outbox {
            let Some(id) = &entry.message_id else { continue };
            let unread = self.unread.entry(entry.contact.clone()).or_default();
            if self.last_read.get(&entry.contact) == Some(id) {
                unread.clear();
            } else if !self.held.get(&entry.contact).is_some_and(|held| held.contains(id)) {
                unread.push(id.clone());
            }
        }
    }

    pub(super) fn act(&mut self, contact: &str, action: PhoneAction) -> (Receipts, PhoneResponse) {
        let mut receipts = Vec::new();
        match action {
            PhoneAction::Offline => {
                self.offline.insert(contact.to_string());
            }
            PhoneAction::Online => {
                self.offline.remove(contact);
                let held = self.held.remove(contact).unwrap_or_default();
                if !held.is_empty() {
                    self.known.insert(contact.to_string());
                }
                receipts.extend(held.iter().map(|id| (id.clone(), SendStatus::Delivered)));
                let read = self.read_held.remove(contact).unwrap_or_default();
                receipts.extend(read.into_iter().map(|id| (id, SendStatus::Read)));
                self.unread.entry(contact.to_string()).or_default().extend(held);
            }
            PhoneAction::Read => {
                let unread = self.unread.remove(contact).unwrap_or_default();
                if let Some(last) = unread.last() {
                    self.last_read.insert(contact.to_string(), last.clone());
                }
                // Read on the phone; an offline phone tells no one yet.
                if self.offline.contains(contact) {
                    self.read_held.entry(contact.to_string()).or_default().extend(unread);
                } else {
                    receipts.extend(unread.into_iter().map(|id| (id, SendStatus::Read)));
                }
            }
        }
        let count = |status| receipts.iter().filter(|(_, s)| *s == status).count() as u32;
        let response = PhoneResponse {
            contact: contact.to_string(),
            online: !self.offline.contains(contact),
            delivered: count(SendStatus::Delivered),
            read: count(SendStatus::Read),
            held: self.held.get(contact).map_or(0, |h| h.len() as u32),
        };
        (receipts, response)
    }
}

/// The outbox in `path`: a line a power cut cut short, or left as zeros, is
/// skipped (the outbox is appended without fsync).
pub(super) fn read_outbox(path: &Path) -> Result<Vec<OutboxEntry>, StoreError> {
    let (read, damaged) = crate::store::read_jsonl_skipping(path)?;
    if damaged > 0 {
        tracing::warn!(lines = damaged, "lines of the sandbox's outbox did not read; they are skipped");
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outbox_a_power_cut_damaged_reads_its_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sandbox-outbox.jsonl");
        let entry = |text: &str| {
            let entry = OutboxEntry {
                contact: "+56912345678".into(),
                text: text.into(),
                timestamp: chrono::Utc::now(),
                message_id: Some(format!("SANDBOX-{text}")),
                media: None,
            };
            serde_json::to_string(&entry).unwrap()
        };
        let (first, second) = (entry("first"), entry("second"));
        let damaged = format!("{first}\n\0\0\0\0\n{}\n{second}\n{{\"contact\":\"+5691", &second[..20]);
        std::fs::write(&path, damaged).unwrap();
        let texts: Vec<String> = read_outbox(&path).unwrap().into_iter().map(|e| e.text).collect();
        assert_eq!(texts, ["first", "second"]);
        assert!(read_outbox(&dir.path().join("none.jsonl")).unwrap().is_empty());
    }
}
