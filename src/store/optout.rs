//! `do-not-contact.json`: the do-not-contact list (see [`crate::courtesy`]),
//! in memory and on disk, replaced atomically on every change.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use uuid::Uuid;

use super::StoreError;
use crate::contact::Contact;
use crate::courtesy::optout::{OptOut, OptOutOverride};

/// The list, in memory and on disk.
pub struct OptOutList {
    path: PathBuf,
    by_contact: Mutex<BTreeMap<String, OptOut>>,
}

impl OptOutList {
    /// The list at `path` (empty if there is none yet).
    pub fn open(path: PathBuf) -> Result<OptOutList, StoreError> {
        let by_contact = match std::fs::read(&path) {
            Ok(bytes) => {
                let entries: Vec<OptOut> = serde_json::from_slice(&bytes).map_err(|e| super::corrupt(&path, e))?;
                entries.into_iter().map(|e| (e.contact.clone(), e)).collect()
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(super::read_error(&path, e)),
        };
        Ok(OptOutList { path, by_contact: Mutex::new(by_contact) })
    }

    pub fn get(&self, contact: &Contact) -> Option<OptOut> {
        self.by_contact.lock().expect("opt-out lock").get(contact.as_str()).cloned()
    }

    pub fn all(&self) -> Vec<OptOut> {
        self.by_contact.lock().expect("opt-out lock").values().cloned().collect()
    }

    /// Lists `entry.contact` (an entry already there is kept as it was).
    /// Returns the entry as listed, and whether this call listed it.
    pub fn add(&self, entry: OptOut) -> Result<(OptOut, bool), StoreError> {
        self.change(|list| {
            let added = !list.contains_key(&entry.contact);
            (list.entry(entry.contact.clone()).or_insert(entry).clone(), added)
        })
    }

    /// Takes `contact` off the list; returns what it was.
    pub fn remove(&self, contact: &Contact) -> Result<Option<OptOut>, StoreError> {
        self.change(|list| list.remove(contact.as_str()))
    }

    /// Records that conversation `instance_id` was created for `contact`
    /// anyway, for `reason`.
    pub fn record_override(&self, contact: &Contact, instance_id: Uuid, reason: &str) -> Result<(), StoreError> {
        self.change(|list| {
            if let Some(entry) = list.get_mut(contact.as_str()) {
                let at = crate::clock::now();
                entry.overrides.push(OptOutOverride { instance_id, at, reason: reason.to_string() });
            }
        })
    }

    /// Changes the list and writes it, all or nothing: a failed write
    /// leaves memory as the disk has it.
    fn change<T>(&self, edit: impl FnOnce(&mut BTreeMap<String, OptOut>) -> T) -> Result<T, StoreError> {
        let mut list = self.by_contact.lock().expect("opt-out lock");
        let mut next = list.clone();
        let result = edit(&mut next);
        let entries: Vec<&OptOut> = next.values().collect();
        super::atomic::replace(&self.path, &super::to_pretty_json(&entries))
            .map_err(|e| super::write_error(&self.path, e))?;
        *list = next;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::courtesy::optout::OptOutSource;

    fn entry(contact: &str) -> OptOut {
        OptOut {
            contact: contact.into(),
            since: crate::clock::now(),
            source: OptOutSource::Contact,
            reason: "asked".into(),
            instance_id: None,
            overrides: vec![],
        }
    }

    #[test]
    fn the_list_survives_a_reopen_and_an_override_is_kept_with_its_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("do-not-contact.json");
        let list = OptOutList::open(path.clone()).unwrap();
        let contact = Contact::parse("+56912345678").unwrap();
        list.add(entry(contact.as_str())).unwrap();
        let id = Uuid::new_v4();
        list.record_override(&contact, id, "they called back").unwrap();
        let again = OptOutList::open(path).unwrap();
        let kept = again.get(&contact).unwrap();
        assert_eq!(kept.overrides[0].instance_id, id);
        assert!(kept.refusal().starts_with("+56912345678 asked on "));
        assert!(again.remove(&contact).unwrap().is_some());
        assert!(again.get(&contact).is_none());
    }
}
