//! `ended.jsonl`: a line for each ended conversation, holding what lists,
//! filters and id lookups need of it. Ended conversations never change
//! (their state is final, and a receipt that comes later goes to the
//! transcript), so a line written once stays true. A start reads this one
//! file instead of every ended conversation's, and the daemon keeps these
//! lines in memory instead of the conversations.
//!
//! The instance files stay the truth: the index is derived from them. A
//! conversation whose line is missing (relay stopped between the two
//! writes) is read from its file at the next start and its line written
//! then; a line whose file is gone, or that cannot be read, is dropped.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{StoreError, atomic, read_error, write_error};
use crate::api::State;
use crate::store::ConversationRecord;

/// What relay keeps in memory of an ended conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndedConversation {
    pub id: Uuid,
    pub state: State,
    pub target_contact: String,
    pub created_at: DateTime<Utc>,
    /// The contact sent files: media retention reads its transcript.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_media: bool,
    /// The files the Main Agent gave it to send, which stay while it does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
    /// relay exchanged messages with the contact (a message of relay's was
    /// delivered, or the contact wrote): the number is not new.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reached: bool,
}

impl EndedConversation {
    pub fn of(instance: &ConversationRecord) -> EndedConversation {
        EndedConversation {
            id: instance.id,
            state: instance.state,
            target_contact: instance.target_contact.clone(),
            created_at: instance.created_at,
            has_media: instance.media_received > 0,
            attachments: instance.attachments.iter().map(|a| a.path.clone()).collect(),
            reached: instance.reached_contact(),
        }
    }
}

/// The conversations of a home, as a start needs them.
#[derive(Debug, Default)]
pub struct Conversations {
    /// Those not yet ended, whole, oldest first.
    pub live: Vec<ConversationRecord>,
    /// The ended ones, by their index lines, oldest first.
    pub ended: Vec<EndedConversation>,
}

/// The index file.
#[derive(Debug, Clone)]
pub(super) struct EndedIndex {
    path: PathBuf,
}

impl EndedIndex {
    pub(super) fn at(path: PathBuf) -> EndedIndex {
        EndedIndex { path }
    }

    /// Adds the line of a conversation that has just ended.
    pub(super) fn append(&self, ended: &EndedConversation) -> Result<(), StoreError> {
        let line = serde_json::to_vec(ended).expect("index lines serialise");
        atomic::append_line(&self.path, &line).map_err(|source| write_error(&self.path, source))
    }

    /// The lines that read, by id, and whether any did not (a torn or
    /// damaged line: the file is written again at this start).
    fn read(&self) -> Result<(HashMap<Uuid, EndedConversation>, bool), StoreError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((HashMap::new(), false)),
            Err(source) => return Err(read_error(&self.path, source)),
        };
        let mut lines = HashMap::new();
        let mut unread = false;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<EndedConversation>(line) {
                Ok(ended) => drop(lines.insert(ended.id, ended)),
                Err(_) => unread = true,
            }
        }
        Ok((lines, unread))
    }

    /// Every conversation in `instances` (the folder of instance files):
    /// the ended ones from their lines where they have one, the rest (and
    /// ended ones without a line, which get one) from their files. The
    /// index is written again when it does not match the folder.
    pub(super) fn load(
        &self,
        instances: &Path,
        read_instance: impl Fn(&Path) -> Result<ConversationRecord, StoreError>,
    ) -> Result<Conversations, StoreError> {
        let (mut indexed, unread) = self.read()?;
        let listed = indexed.len();
        let mut found = Conversations::default();
        let mut unindexed = 0;
        let entries = fs::read_dir(instances).map_err(|source| read_error(instances, source))?;
        for entry in entries {
            let path = entry.map_err(|source| read_error(instances, source))?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name.ends_with(atomic::TEMP_SUFFIX) {
                let _ = fs::remove_file(&path);
                continue;
            }
            let Some(stem) = name.strip_suffix(".json") else { continue };
            if let Some(ended) = Uuid::parse_str(stem).ok().and_then(|id| indexed.remove(&id)) {
                found.ended.push(ended);
                continue;
            }
            let instance = read_instance(&path)?;
            match instance.state.is_terminal() {
                true => {
                    unindexed += 1;
                    found.ended.push(EndedConversation::of(&instance));
                }
                false => found.live.push(instance),
            }
        }
        found.live.sort_by_key(|a| (a.created_at, a.id));
        found.ended.sort_by_key(|a| (a.created_at, a.id));
        // Lines left over name conversations whose files are gone.
        let stale = indexed.len();
        if unread || unindexed > 0 || stale > 0 {
            self.rewrite(&found.ended)?;
            tracing::info!(
                listed,
                added = unindexed,
                dropped = stale,
                damaged = unread,
                "the index of ended conversations was written again from their files"
            );
        }
        Ok(found)
    }

    fn rewrite(&self, ended: &[EndedConversation]) -> Result<(), StoreError> {
        let mut text = Vec::with_capacity(ended.len() * 160);
        for line in ended {
            text.extend(serde_json::to_vec(line).expect("index lines serialise"));
            text.push(b'\n');
        }
        atomic::replace(&self.path, &text).map_err(|source| write_error(&self.path, source))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::api::HeartbeatConfig;
    use crate::home::Home;
    use crate::store::Store;

    /// What the instance files say, read one by one: what the index must
    /// always agree with.
    fn truth(store: &Store) -> (Vec<ConversationRecord>, Vec<EndedConversation>) {
        let all = store.load_instances().unwrap();
        let (ended, live): (Vec<_>, Vec<_>) = all.into_iter().partition(|i| i.state.is_terminal());
        (live, ended.iter().map(EndedConversation::of).collect())
    }

    /// What can happen to the index between starts.
    #[derive(Debug, Clone)]
    enum Damage {
        /// relay stopped between an instance's write and its line.
        LoseLine(prop::sample::Index),
        /// A conversation's files were removed by hand.
        RemoveFile(prop::sample::Index),
        /// A line cut short, or edited into something else.
        Garbage(String),
        /// The file removed.
        Delete,
    }

    fn damage() -> impl Strategy<Value = Damage> {
        prop_oneof![
            any::<prop::sample::Index>().prop_map(Damage::LoseLine),
            any::<prop::sample::Index>().prop_map(Damage::RemoveFile),
            "[ -~]{0,40}".prop_map(Damage::Garbage),
            Just(Damage::Delete),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever became of the index (lines lost, files removed, garbage,
        /// no file at all), a start finds exactly the conversations the
        /// instance files hold, and leaves an index that a second start
        /// takes as it is.
        #[test]
        fn a_start_finds_what_the_files_hold_whatever_became_of_the_index(
            states in proptest::collection::vec(prop::sample::select(State::ALL.to_vec()), 0..24),
            damages in proptest::collection::vec(damage(), 0..4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let home = Home::at(dir.path());
            let store = Store::open(&home).unwrap();
            for (n, state) in states.iter().enumerate() {
                let mut instance =
                    ConversationRecord::new("o".into(), format!("+5691234{n:04}"), Vec::new(), HeartbeatConfig::default());
                instance.state = *state;
                instance.media_received = (n % 3 == 0) as u32;
                store.save_instance(&instance).unwrap();
            }
            let index = home.ended_file();
            for damage in damages {
                let text = fs::read_to_string(&index).unwrap_or_default();
                let mut lines: Vec<&str> = text.lines().collect();
                match damage {
                    Damage::LoseLine(at) if !lines.is_empty() => drop(lines.remove(at.index(lines.len()))),
                    Damage::RemoveFile(at) => {
                        let files: Vec<_> = fs::read_dir(home.instances_dir()).unwrap().map(|e| e.unwrap().path()).collect();
                        if !files.is_empty() {
                            fs::remove_file(&files[at.index(files.len())]).unwrap();
                        }
                    }
                    Damage::Garbage(ref junk) => lines.push(junk),
                    Damage::Delete => lines.clear(),
                    Damage::LoseLine(_) => {}
                }
                let mut written = lines.join("\n");
                if !written.is_empty() && !matches!(damage, Damage::Garbage(_)) {
                    written.push('\n');
                }
                fs::write(&index, written).unwrap();
            }
            let (live, ended) = truth(&store);
            let found = store.load_conversations().unwrap();
            prop_assert_eq!(&found.live, &live);
            prop_assert_eq!(&found.ended, &ended);
            // Mended: the next start reads the same, and writes nothing.
            let mended = fs::read(&index).unwrap_or_default();
            let again = store.load_conversations().unwrap();
            prop_assert_eq!(again.ended, ended);
            prop_assert_eq!(fs::read(&index).unwrap_or_default(), mended);
        }
    }
}
