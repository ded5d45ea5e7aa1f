//! `first-contact.json`: what relay remembers of first contacts (see
//! [`crate::courtesy::first_contact`]), in memory and on disk, replaced
//! atomically on every change.

use std::path::PathBuf;
use std::sync::Mutex;

use super::StoreError;
use crate::courtesy::FirstContacts;

pub struct FirstContactBook {
    path: PathBuf,
    book: Mutex<FirstContacts>,
    /// The file did not exist: the book is new (a home from before it, or
    /// a fresh one), and the numbers relay knows are still to be learned.
    fresh: bool,
}

impl FirstContactBook {
    pub fn open(path: PathBuf) -> Result<FirstContactBook, StoreError> {
        let (book, fresh) = match std::fs::read(&path) {
            Ok(bytes) => (serde_json::from_slice(&bytes).map_err(|e| super::corrupt(&path, e))?, false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (FirstContacts::default(), true),
            Err(e) => return Err(super::read_error(&path, e)),
        };
        Ok(FirstContactBook { path, book: Mutex::new(book), fresh })
    }

    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    pub fn read<T>(&self, look: impl FnOnce(&FirstContacts) -> T) -> T {
        look(&self.book.lock().expect("first-contact lock"))
    }

    /// Changes the book and writes it, all or nothing: a failed write
    /// leaves memory as the disk has it. An edit that changes nothing
    /// writes nothing.
    pub fn change<T>(&self, edit: impl FnOnce(&mut FirstContacts) -> T) -> Result<T, StoreError> {
        let mut book = self.book.lock().expect("first-contact lock");
        let mut next = book.clone();
        let result = edit(&mut next);
        if next != *book {
            super::atomic::replace(&self.path, &super::to_pretty_json(&next))
                .map_err(|e| super::write_error(&self.path, e))?;
            *book = next;
        }
        Ok(result)
    }

    /// `contact` has had a message delivered, or sent one: it is not new.
    pub fn know(&self, contact: &str) -> Result<(), StoreError> {
        if !self.read(|b| b.is_new(contact)) {
            return Ok(());
        }
        self.change(|b| {
            b.known.insert(contact.to_string());
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_book_survives_a_reopen_and_a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("first-contact.json");
        let book = FirstContactBook::open(path.clone()).unwrap();
        assert!(book.is_fresh());
        book.know("+56912345678").unwrap();
        let again = FirstContactBook::open(path.clone()).unwrap();
        assert!(!again.is_fresh());
        assert!(!again.read(|b| b.is_new("+56912345678")));
        // The file's folder is gone: the write fails, memory stays as it was.
        let gone = FirstContactBook { path: dir.path().join("missing/first-contact.json"), ..again };
        assert!(gone.know("+56911111111").is_err());
        assert!(gone.read(|b| b.is_new("+56911111111")));
    }
}
