//! A conversation's record on disk, as two files side by side:
//!
//! - `instances/<id>.json`, the record as of its last checkpoint (pretty);
//! - `instances/<id>.jsonl`, each later version of it, one compact line
//!   each; the last complete line that parses is the record.
//!
//! A change is one append and one fsync to a file that exists already: no
//! new inode, no rename, no folder fsync, which is what a replace cost on
//! every change. The log is folded into the checkpoint when it passes
//! [`LOG_LIMIT`] and when the conversation ends, so an ended conversation is
//! its `.json` alone and a live one's log stays small.
//!
//! Crash safety rests on one order: a version is in the log (durably)
//! before the checkpoint takes it, and the log is emptied (durably) only
//! after. So every line in the log is as new as the checkpoint or newer.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::record::ConversationRecord;
use super::{StoreError, atomic, read_error, read_json, to_pretty_json, write_error};

/// Past this many bytes of log, the next change writes a checkpoint.
pub const LOG_LIMIT: u64 = 64 * 1024;

/// The log beside a record's checkpoint.
pub fn log_path(checkpoint: &Path) -> PathBuf {
    checkpoint.with_extension("jsonl")
}

/// How a version of a record reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Durable once the write returns.
    Now,
    /// Appended without fsync, made durable by the log's next synced write
    /// (an fsync covers every earlier write to the file) or a checkpoint:
    /// for a change another file already holds durably, which a power cut
    /// may take back to the version before.
    WithNextWrite,
}

/// Writes `record`, durable once this returns.
pub fn save(checkpoint: &Path, record: &ConversationRecord) -> Result<(), StoreError> {
    write(checkpoint, record, Durability::Now)
}

/// Writes `record` as `durability` says; a new record, a checkpoint and an
/// end are always durable at once.
pub fn write(checkpoint: &Path, record: &ConversationRecord, durability: Durability) -> Result<(), StoreError> {
    let log = log_path(checkpoint);
    let ended = record.state.is_terminal();
    let replace =
        || atomic::replace(checkpoint, &to_pretty_json(record)).map_err(|source| write_error(checkpoint, source));
    if !checkpoint.exists() {
        // A new conversation's first version is its checkpoint. Its empty log
        // is made first, so the checkpoint's folder fsync covers both and no
        // change pays for creating a file.
        if !ended {
            let created = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&log);
            created.map_err(|source| write_error(&log, source))?;
        }
        return replace();
    }
    if ended && !log.exists() {
        return replace();
    }
    let line = serde_json::to_vec(record).expect("records serialise");
    let appended = match durability == Durability::WithNextWrite && !ended {
        true => atomic::append_line_unsynced(&log, &line),
        false => atomic::append_line_sized(&log, &line),
    };
    let length = appended.map_err(|source| write_error(&log, source))?;
    if ended || length > LOG_LIMIT {
        fold(checkpoint, &log, record, ended)?;
    }
    Ok(())
}

/// The checkpoint takes `record` (the log's last line already), then the
/// log is emptied, or removed once the conversation has ended.
fn fold(checkpoint: &Path, log: &Path, record: &ConversationRecord, ended: bool) -> Result<(), StoreError> {
    atomic::replace(checkpoint, &to_pretty_json(record)).map_err(|source| write_error(checkpoint, source))?;
    let emptied = if ended {
        fs::remove_file(log).and_then(|()| atomic::sync_parent(log))
    } else {
        OpenOptions::new().write(true).open(log).and_then(|file| {
            file.set_len(0)?;
            file.sync_all()
        })
    };
    emptied.map_err(|source| write_error(log, source))
}

/// The record: the log's last complete line that parses, else the
/// checkpoint. A line that does not parse was cut by a crash before its
/// change was acknowledged, so the version before it is the record.
pub fn load(checkpoint: &Path) -> Result<ConversationRecord, StoreError> {
    let log = log_path(checkpoint);
    let bytes = match fs::read(&log) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(read_error(&log, source)),
    };
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(&bytes[..0], |end| &bytes[..end]);
    let mut lines = complete.split(|b| *b == b'\n').rev().filter(|line| !line.is_empty());
    match lines.find_map(|line| serde_json::from_slice(line).ok()) {
        Some(record) => Ok(record),
        None => read_json(checkpoint),
    }
}

#[cfg(test)]
#[path = "record_file_tests.rs"]
mod tests;
