//! Idempotency keys: a `create` or `send` retried with the same
//! `Idempotency-Key` returns the first result and does nothing twice, even
//! when the daemon restarted in between.
//!
//! A key is journaled (`idempotency.jsonl`) *before* its operation runs,
//! with the id the operation will produce: the new conversation's, or the
//! message's. A retry finds the key and answers with what exists under that
//! id; if nothing does (the first attempt died before its record was
//! written), it runs the operation again under the same id. Either way there
//! is never a second conversation or a second message.
//!
//! Requests that fail validation claim no key, so a corrected retry is free
//! to use it. Keys are forgotten after [`KEEP`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::EngineError;
use crate::store::{Store, StoreError};

/// How long a key is remembered.
pub const KEEP: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// One line of `idempotency.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub key: String,
    /// "create" or "send".
    pub operation: String,
    /// SHA-256 of the request, so a key reused for another request is refused.
    pub fingerprint: String,
    /// The conversation (create) or message (send) the operation produces.
    pub target: Uuid,
    pub at: DateTime<Utc>,
}

/// The keys of the last [`KEEP`], and which are being worked on right now.
pub(crate) struct Keys {
    store: Store,
    known: Mutex<HashMap<String, Known>>,
}

struct Known {
    record: KeyRecord,
    busy: bool,
}

/// A key held by one request until it is dropped.
pub(crate) struct Claim {
    keys: Arc<Keys>,
    key: String,
    /// What the operation produces (fresh, or the first attempt's).
    pub target: Uuid,
    /// Whether an earlier request already claimed the key.
    pub retried: bool,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(known) = self.keys.known.lock().expect("keys lock").get_mut(&self.key) {
            known.busy = false;
        }
    }
}

impl Keys {
    /// Loads the journal, dropping keys older than [`KEEP`].
    pub(crate) fn load(store: Store) -> Result<Keys, StoreError> {
        let records = store.keys().load::<KeyRecord>()?;
        let oldest = crate::clock::now() - KEEP;
        let fresh: Vec<KeyRecord> = records.iter().filter(|r| r.at >= oldest).cloned().collect();
        if fresh.len() < records.len() {
            store.keys().rewrite(&fresh)?;
        }
        let known = fresh.into_iter().map(|record| (record.key.clone(), Known { record, busy: false })).collect();
        Ok(Keys { store, known: Mutex::new(known) })
    }

    /// Claims `key` for `operation` on a request with this `fingerprint`.
    /// A new key is journaled (durably) with a fresh target before this returns.
    pub(crate) fn claim(
        self: &Arc<Self>,
        key: &str,
        operation: &str,
        fingerprint: String,
    ) -> Result<Claim, EngineError> {
        check_key(key)?;
        let mut known = self.known.lock().expect("keys lock");
        if let Some(entry) = known.get_mut(key) {
            if entry.record.operation != operation || entry.record.fingerprint != fingerprint {
                return Err(EngineError::KeyReused(key.to_string()));
            }
            if entry.busy {
                return Err(EngineError::KeyInUse(key.to_string()));
            }
            entry.busy = true;
            let target = entry.record.target;
            return Ok(Claim { keys: self.clone(), key: key.to_string(), target, retried: true });
        }
        let record = KeyRecord {
            key: key.to_string(),
            operation: operation.to_string(),
            fingerprint,
            target: Uuid::new_v4(),
            at: crate::clock::now(),
        };
        // Held under the lock: one fsync, and no second request can slip in.
        self.store.keys().append(&record)?;
        let target = record.target;
        known.insert(key.to_string(), Known { record, busy: true });
        Ok(Claim { keys: self.clone(), key: key.to_string(), target, retried: false })
    }
}

/// The SHA-256 of what identifies a request, in hex.
pub(crate) fn fingerprint(parts: &[&[u8]]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn check_key(key: &str) -> Result<(), EngineError> {
    match crate::api::limits::idempotency_key_problem(key) {
        Some(problem) => Err(EngineError::Invalid(problem)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::Home;

    fn keys(dir: &std::path::Path) -> Arc<Keys> {
        Arc::new(Keys::load(Store::open(&Home::at(dir)).unwrap()).unwrap())
    }

    #[test]
    fn a_key_keeps_its_target_across_restarts_and_refuses_other_requests() {
        let dir = tempfile::tempdir().unwrap();
        let first = keys(dir.path()).claim("k-1", "create", fingerprint(&[b"a"])).unwrap();
        assert!(!first.retried);
        let target = first.target;
        drop(first);

        let keys = keys(dir.path());
        let again = keys.claim("k-1", "create", fingerprint(&[b"a"])).unwrap();
        assert!(again.retried);
        assert_eq!(again.target, target);
        assert!(matches!(keys.claim("k-1", "create", fingerprint(&[b"a"])), Err(EngineError::KeyInUse(_))));
        drop(again);
        assert!(matches!(keys.claim("k-1", "create", fingerprint(&[b"b"])), Err(EngineError::KeyReused(_))));
        assert!(matches!(keys.claim("k-1", "send", fingerprint(&[b"a"])), Err(EngineError::KeyReused(_))));
    }

    #[test]
    fn old_keys_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Home::at(dir.path())).unwrap();
        let old = KeyRecord {
            key: "old".into(),
            operation: "create".into(),
            fingerprint: fingerprint(&[b"a"]),
            target: Uuid::new_v4(),
            at: crate::clock::now() - KEEP - chrono::TimeDelta::minutes(1),
        };
        store.keys().append(&old).unwrap();
        let keys = keys(dir.path());
        assert!(!keys.claim("old", "create", fingerprint(&[b"a"])).unwrap().retried);
        assert_eq!(
            store.keys().load::<KeyRecord>().unwrap().len(),
            1,
            "the journal was compacted, then the key journaled anew"
        );
    }

    #[test]
    fn keys_must_be_printable_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let keys = keys(dir.path());
        for bad in ["", "has space", "tab\t", "ñ", &"x".repeat(256)] {
            assert!(matches!(keys.claim(bad, "create", fingerprint(&[])), Err(EngineError::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn fingerprints_separate_their_parts() {
        assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
    }
}
