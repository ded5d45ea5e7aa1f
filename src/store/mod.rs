//! Persistence in the relay home, as plain files a person can read:
//!
//! - `instances/<id>.json` and `<id>.jsonl`: one conversation, its last
//!   checkpoint and each version since, one a line ([`record_file`]);
//! - `ended.jsonl`: a line for each ended conversation, what lists and
//!   lookups need of it ([`ended`]);
//! - `transcripts/<id>.jsonl`: its messages, append-only, one JSON object a line;
//! - `unrouted.jsonl`: messages from contacts with no live conversation;
//! - `idempotency.jsonl`: the idempotency keys of the last day;
//! - `events/<first seq>.jsonl`: every change as a numbered event, a file a
//!   day (written by `engine::events`);
//! - `do-not-contact.json`: the numbers relay does not write to ([`OptOutList`]);
//! - `first-contact.json`: the numbers relay has exchanged messages with,
//!   WhatsApp's reach-out lock and the day's first contacts ([`FirstContactBook`]);
//! - `media/<id>/<name>`: the photos, voice notes and files of a
//!   conversation, owner-only ([`MediaStore`]).
//!
//! Per-instance files keep every write O(1) in the number of conversations.
//! Every write is durable (fsync) before it returns, so nothing the API
//! acknowledges can be lost.

pub mod atomic;
pub mod ended;
mod first_contact;
pub mod media;
mod optout;
mod record;
pub mod record_file;

pub use ended::{Conversations, EndedConversation};
pub use first_contact::FirstContactBook;
pub use media::{MediaStore, StoredFile};
pub use optout::OptOutList;
pub use record::ConversationRecord;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::api::{MediaInfo, MediaStatus, SendStatus, TranscriptMessage, UnroutedMessage};
use crate::home::Home;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path} is damaged ({source}); it was not written by relay as it is, so fix or move it aside")]
    Corrupt { path: String, source: serde_json::Error },
    /// A media file's name or path that is not one relay gives (a bug, or
    /// a transcript edited by hand): refused before anything is touched.
    #[error("refused the media file name {name:?}: it {problem}")]
    BadName { name: String, problem: String },
}

/// An append-only file of JSON records, one a line: appended durably one at
/// a time, read back oldest first, and replaced whole (atomically) when its
/// owner compacts it. What the records are is the owner's business.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
}

impl Journal {
    pub fn at(path: PathBuf) -> Journal {
        Journal { path }
    }

    /// Every record so far, oldest first (none if the file does not exist).
    pub fn load<T: DeserializeOwned>(&self) -> Result<Vec<T>, StoreError> {
        read_jsonl(&self.path)
    }

    /// Appends `record`; durable once this returns.
    pub fn append<T: Serialize>(&self, record: &T) -> Result<(), StoreError> {
        let line = serde_json::to_vec(record).expect("journal records serialise");
        atomic::append_line(&self.path, &line).map_err(|source| write_error(&self.path, source))
    }

    /// Appends `records` in one write; durable once this returns. A failed
    /// write takes back what part of it got in.
    pub fn append_all<T: Serialize>(&self, records: &[T]) -> Result<(), StoreError> {
        let lines: Vec<Vec<u8>> =
            records.iter().map(|r| serde_json::to_vec(r).expect("journal records serialise")).collect();
        atomic::append_line(&self.path, &lines.join(&b'\n')).map_err(|source| write_error(&self.path, source))
    }

    /// Replaces the whole journal with `records` (to drop expired ones).
    pub fn rewrite<T: Serialize>(&self, records: &[T]) -> Result<(), StoreError> {
        let mut text = Vec::new();
        for record in records {
            text.extend(serde_json::to_vec(record).expect("journal records serialise"));
            text.push(b'\n');
        }
        atomic::replace(&self.path, &text).map_err(|source| write_error(&self.path, source))
    }
}

#[derive(Debug, Clone)]
pub struct Store {
    instances: PathBuf,
    ended: ended::EndedIndex,
    transcripts: PathBuf,
    unrouted: PathBuf,
    clean_shutdown: PathBuf,
    keys: Journal,
    sent_ids: Journal,
    events: PathBuf,
    legacy_events: PathBuf,
    do_not_contact: PathBuf,
    first_contact: PathBuf,
    media: MediaStore,
}

impl Store {
    /// Opens (and creates, owner-only) the store's folders in `home`.
    pub fn open(home: &Home) -> io::Result<Store> {
        home.create()?;
        Ok(Store {
            instances: home.instances_dir(),
            ended: ended::EndedIndex::at(home.ended_file()),
            transcripts: home.transcripts_dir(),
            unrouted: home.unrouted_file(),
            clean_shutdown: home.clean_shutdown_file(),
            keys: Journal::at(home.idempotency_file()),
            sent_ids: Journal::at(home.sent_ids_file()),
            events: home.events_dir(),
            legacy_events: home.legacy_events_file(),
            do_not_contact: home.do_not_contact_file(),
            first_contact: home.first_contact_file(),
            media: MediaStore::open(home),
        })
    }

    /// The do-not-contact list, as the file holds it.
    pub fn open_opt_outs(&self) -> Result<OptOutList, StoreError> {
        OptOutList::open(self.do_not_contact.clone())
    }

    /// What relay remembers of first contacts, as the file holds it.
    pub fn open_first_contacts(&self) -> Result<FirstContactBook, StoreError> {
        FirstContactBook::open(self.first_contact.clone())
    }

    /// The conversations' media files (`media/`).
    pub fn media(&self) -> &MediaStore {
        &self.media
    }

    /// Where the event log lives (`engine::events` writes it), and where
    /// versions before segments kept it.
    pub fn events_paths(&self) -> (PathBuf, PathBuf) {
        (self.events.clone(), self.legacy_events.clone())
    }

    fn instance_path(&self, id: Uuid) -> PathBuf {
        self.instances.join(format!("{id}.json"))
    }

    fn transcript_path(&self, id: Uuid) -> PathBuf {
        self.transcripts.join(format!("{id}.jsonl"))
    }

    /// Writes `instance`; one that has ended gets its line in the index of
    /// ended conversations too.
    pub fn save_instance(&self, instance: &ConversationRecord) -> Result<(), StoreError> {
        self.write_instance(instance, record_file::Durability::Now)
    }

    /// [`Store::save_instance`], as `durability` says.
    pub fn write_instance(
        &self,
        instance: &ConversationRecord,
        durability: record_file::Durability,
    ) -> Result<(), StoreError> {
        record_file::write(&self.instance_path(instance.id), instance, durability)?;
        if instance.state.is_terminal()
            && let Err(error) = self.ended.append(&EndedConversation::of(instance))
        {
            // The instance is written, and it is the truth: the next start
            // reads it from its file and writes its line.
            tracing::warn!(instance = %instance.id, %error, "cannot add an ended conversation to the index");
        }
        Ok(())
    }

    /// The conversations of the home: the live ones whole, the ended ones
    /// by their lines in `ended.jsonl` (see [`ended`]).
    pub fn load_conversations(&self) -> Result<Conversations, StoreError> {
        self.ended.load(&self.instances, record_file::load)
    }

    /// One instance, as on disk.
    pub fn load_instance(&self, id: Uuid) -> Result<ConversationRecord, StoreError> {
        record_file::load(&self.instance_path(id))
    }

    /// Every instance on disk, oldest first. Leftover temp files from a crash
    /// are removed; a file that does not parse stops the load with its path.
    /// Every conversation, read from its file (tests and tools: the daemon
    /// reads [`Store::load_conversations`]).
    pub fn load_instances(&self) -> Result<Vec<ConversationRecord>, StoreError> {
        let entries = fs::read_dir(&self.instances).map_err(|source| read_error(&self.instances, source))?;
        let mut instances = Vec::new();
        for entry in entries {
            let path = entry.map_err(|source| read_error(&self.instances, source))?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name.ends_with(atomic::TEMP_SUFFIX) {
                let _ = fs::remove_file(&path);
                continue;
            }
            if !name.ends_with(".json") {
                continue;
            }
            instances.push(record_file::load(&path)?);
        }
        instances.sort_by_key(|a| (a.created_at, a.id));
        Ok(instances)
    }

    pub fn append_message(&self, message: &TranscriptMessage) -> Result<(), StoreError> {
        let path = self.transcript_path(message.instance_id);
        let line = serde_json::to_vec(message).expect("messages serialise");
        atomic::append_line(&path, &line).map_err(|source| write_error(&path, source))
    }

    /// The transcript of one conversation, oldest first (empty if none yet).
    /// A message written again (with its delivery error) keeps its place and
    /// takes its latest form.
    pub fn read_transcript(&self, id: Uuid) -> Result<Vec<TranscriptMessage>, StoreError> {
        let lines: Vec<TranscriptMessage> = read_jsonl(&self.transcript_path(id))?;
        let mut messages: Vec<TranscriptMessage> = Vec::with_capacity(lines.len());
        let mut position = std::collections::HashMap::with_capacity(lines.len());
        for message in lines {
            match position.get(&message.id) {
                Some(&at) => messages[at] = message,
                None => {
                    position.insert(message.id, messages.len());
                    messages.push(message);
                }
            }
        }
        Ok(messages)
    }

    /// After a crash: every message still `pending` (the channel had it when
    /// relay stopped) is rewritten `unconfirmed`, never sent again. Returns
    /// how many. Only transcripts holding the pending marker are parsed.
    pub fn settle_interrupted_sends(&self) -> Result<usize, StoreError> {
        self.rewrite_where(None, br#""send_status":"pending""#, |message| {
            (message.send_status == Some(SendStatus::Pending))
                .then(|| TranscriptMessage { send_status: Some(SendStatus::Unconfirmed), ..message.clone() })
        })
    }

    /// After a stop (clean or not): a contact's file still `pending` was
    /// being fetched, and the fetch is gone with the process. Each is
    /// rewritten `failed` with `why`, and the message's text made again by
    /// `relabel` (the engine's label: the store knows no labels). Returns how
    /// many. `only`: the conversations to look at (all when none).
    pub fn settle_interrupted_media(
        &self,
        only: Option<&[Uuid]>,
        why: &str,
        relabel: impl Fn(&MediaInfo) -> String,
    ) -> Result<usize, StoreError> {
        self.rewrite_where(only, br#""status":"pending""#, |message| {
            let media = message.media.as_ref().filter(|m| m.status == MediaStatus::Pending)?;
            let failed = MediaInfo { status: MediaStatus::Failed, error: Some(why.to_string()), ..(**media).clone() };
            Some(TranscriptMessage { content: relabel(&failed), media: Some(Box::new(failed)), ..message.clone() })
        })
    }

    /// Appends, for every transcript message `rewrite` gives a new form of,
    /// that form (the latest line wins). Only transcripts whose bytes hold
    /// `marker` are parsed, of the conversations `only` names (of all when
    /// none). Returns how many were rewritten.
    fn rewrite_where(
        &self,
        only: Option<&[Uuid]>,
        marker: &[u8],
        rewrite: impl Fn(&TranscriptMessage) -> Option<TranscriptMessage>,
    ) -> Result<usize, StoreError> {
        let ids: Vec<Uuid> = match only {
            Some(only) => only.to_vec(),
            None => {
                let entries = match fs::read_dir(&self.transcripts) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
                    Err(source) => return Err(read_error(&self.transcripts, source)),
                };
                let mut ids = Vec::new();
                for entry in entries {
                    let path = entry.map_err(|source| read_error(&self.transcripts, source))?.path();
                    ids.extend(path.file_stem().and_then(|s| s.to_str()).and_then(|s| Uuid::parse_str(s).ok()));
                }
                ids
            }
        };
        let mut rewritten = 0;
        for id in ids {
            let path = self.transcript_path(id);
            let bytes = match fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => return Err(read_error(&path, source)),
            };
            if !bytes.windows(marker.len()).any(|w| w == marker) {
                continue;
            }
            for message in self.read_transcript(id)? {
                if let Some(new) = rewrite(&message) {
                    self.append_message(&new)?;
                    rewritten += 1;
                }
            }
        }
        Ok(rewritten)
    }

    /// Marks that the daemon stopped with no send left unsettled, so the next
    /// start may skip [`Store::settle_interrupted_sends`].
    pub fn mark_clean_shutdown(&self) -> Result<(), StoreError> {
        atomic::replace(&self.clean_shutdown, b"").map_err(|source| write_error(&self.clean_shutdown, source))
    }

    /// Whether the last daemon shut down cleanly; the mark is removed (and
    /// the removal made durable) so a crash from now on is noticed.
    pub fn take_clean_shutdown(&self) -> Result<bool, StoreError> {
        match fs::remove_file(&self.clean_shutdown) {
            Ok(()) => {
                atomic::sync_parent(&self.clean_shutdown)
                    .map_err(|source| write_error(&self.clean_shutdown, source))?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(write_error(&self.clean_shutdown, source)),
        }
    }

    /// The channel's ids of recent sends (`sent-ids.jsonl`), for receipts.
    pub fn sent_ids(&self) -> Journal {
        self.sent_ids.clone()
    }

    /// The journal of idempotency keys (`idempotency.jsonl`).
    pub fn keys(&self) -> &Journal {
        &self.keys
    }

    /// Keeps a message from a contact with no live conversation.
    pub fn append_unrouted(&self, message: &UnroutedMessage) -> Result<(), StoreError> {
        let line = serde_json::to_vec(message).expect("messages serialise");
        atomic::append_line(&self.unrouted, &line).map_err(|source| write_error(&self.unrouted, source))
    }

    /// How many unrouted messages are kept (a torn last line does not count).
    pub fn count_unrouted(&self) -> Result<u64, StoreError> {
        Ok(read_jsonl::<serde_json::Value>(&self.unrouted)?.len() as u64)
    }
}

/// [`read_jsonl`] for a file appended without fsync, which a power cut may
/// leave with a line cut short or zeroed: such lines are skipped, and
/// their number returned with what read.
pub fn read_jsonl_skipping<T: DeserializeOwned>(path: &Path) -> Result<(Vec<T>, usize), StoreError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(source) => return Err(read_error(path, source)),
    };
    let text = String::from_utf8_lossy(&bytes);
    let (read, damaged): (Vec<_>, Vec<_>) = text
        .lines()
        .filter(|line| !line.trim_matches(['\0', ' ']).is_empty())
        .map(serde_json::from_str::<T>)
        .partition(Result::is_ok);
    Ok((read.into_iter().flatten().collect(), damaged.len()))
}

/// Reads a JSONL file. A last line without its newline is a write still in
/// progress (or cut by a crash) and is skipped; any other bad line is an error.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, StoreError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(read_error(path, source)),
    };
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    complete
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).map_err(|source| corrupt(path, source)))
        .collect()
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, StoreError> {
    let bytes = fs::read(path).map_err(|source| read_error(path, source))?;
    serde_json::from_slice(&bytes).map_err(|source| corrupt(path, source))
}

pub fn to_pretty_json<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("store types serialise");
    bytes.push(b'\n');
    bytes
}

fn write_error(path: &Path, source: io::Error) -> StoreError {
    StoreError::Write { path: path.display().to_string(), source }
}

fn read_error(path: &Path, source: io::Error) -> StoreError {
    StoreError::Read { path: path.display().to_string(), source }
}

fn corrupt(path: &Path, source: serde_json::Error) -> StoreError {
    StoreError::Corrupt { path: path.display().to_string(), source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Role;

    #[test]
    fn a_torn_last_line_is_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Home::at(dir.path())).unwrap();
        let id = Uuid::new_v4();
        let msg = TranscriptMessage::new(id, Role::Contact, "hola".into());
        store.append_message(&msg).unwrap();
        let path = store.transcript_path(id);
        let mut text = fs::read_to_string(&path).unwrap();
        text.push_str("{\"id\":\"trunc");
        fs::write(&path, text).unwrap();
        assert_eq!(store.read_transcript(id).unwrap(), vec![msg]);
    }

    #[test]
    fn a_message_written_again_keeps_its_place_and_takes_its_latest_form() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Home::at(dir.path())).unwrap();
        let id = Uuid::new_v4();
        let first = TranscriptMessage::new(id, Role::Agent, "hola".into());
        let second = TranscriptMessage::new(id, Role::Contact, "hi".into());
        store.append_message(&first).unwrap();
        store.append_message(&second).unwrap();
        let refused = TranscriptMessage { delivery_error: Some("463".into()), ..first.clone() };
        store.append_message(&refused).unwrap();
        assert_eq!(store.read_transcript(id).unwrap(), vec![refused, second]);
    }

    #[test]
    fn a_missing_transcript_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Home::at(dir.path())).unwrap();
        assert!(store.read_transcript(Uuid::new_v4()).unwrap().is_empty());
    }
}
