//! The event log: every change to a conversation (created, transition,
//! message in or out, todo, question, answer) as a numbered event in
//! `events.jsonl`, for whoever follows relay from outside: `relay events`,
//! `GET /events`, webhooks.
//!
//! Sequence numbers increase by one per event across all conversations and
//! carry on after a restart, so a follower resumes with "after N" and gets no
//! gap and no duplicate. An event is on disk (fsync) before anyone hears of
//! it: a number handed out is never handed out again, even after a crash.
//! Appends running at once share their fsyncs (group commit).
//! Followers that fall behind the in-memory broadcast read the file again.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::Utc;
use tokio::sync::broadcast;
use uuid::Uuid;

use crate::api::{ConversationEvent, EventData};
use crate::store::{StoreError, atomic, read_jsonl};

/// Events kept for followers in memory; one further behind reads the file.
const LIVE_BUFFER: usize = 1024;

pub struct EventLog {
    path: PathBuf,
    file: Mutex<Appender>,
    /// The last sequence number known to be on disk. Held while syncing, so
    /// one fsync at a time runs, and each covers every line written before it.
    synced: Mutex<u64>,
    live: broadcast::Sender<Arc<ConversationEvent>>,
}

struct Appender {
    /// Opened on first use, so a home that is never written gets no file.
    file: Option<Arc<File>>,
    /// The file's length: where a failed write is cut back to.
    len: u64,
    last_seq: u64,
    /// Written but not yet synced, oldest first: told to followers, in
    /// order, once on disk.
    unpublished: std::collections::VecDeque<Arc<ConversationEvent>>,
}

impl EventLog {
    /// Opens the log at `path`, dropping a last line a crash cut short.
    pub fn open(path: PathBuf) -> Result<EventLog, StoreError> {
        if path.exists() {
            atomic::drop_torn_tail_of(&path).map_err(|source| StoreError::Write { path: show(&path), source })?;
        }
        let last_seq = read_jsonl::<SeqOnly>(&path)?.last().map_or(0, |e| e.seq);
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        let appender = Appender { file: None, len: 0, last_seq, unpublished: Default::default() };
        Ok(EventLog { path, file: Mutex::new(appender), synced: Mutex::new(last_seq), live })
    }

    /// The sequence number of the last event written (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.file.lock().expect("event log lock").last_seq
    }

    /// Writes the next event, makes it durable, and tells the followers.
    /// Numbers are handed out in file order; followers hear of an event
    /// only once it is on disk, so no number is ever handed out twice.
    ///
    /// Group commit: the line is written under one lock, the fsync happens
    /// under another, and an fsync covers every line written before it
    /// started. Conversations writing at once share fsyncs instead of
    /// queueing for one each.
    pub fn append(&self, instance_id: Uuid, data: EventData) -> Result<Arc<ConversationEvent>, StoreError> {
        let failed = |source| StoreError::Write { path: show(&self.path), source };
        let (event, file) = {
            let mut appender = self.file.lock().expect("event log lock");
            let event = ConversationEvent { seq: appender.last_seq + 1, at: Utc::now(), instance_id, data };
            let mut line = serde_json::to_vec(&event).expect("events serialise");
            line.push(b'\n');
            let file = self.write(&mut appender, &line).map_err(failed)?;
            appender.last_seq = event.seq;
            let event = Arc::new(event);
            appender.unpublished.push_back(event.clone());
            (event, file)
        };
        let synced = {
            let mut synced = self.synced.lock().expect("event log sync lock");
            if *synced < event.seq {
                // Everything written up to now goes down with this fsync.
                let upto = self.last_seq();
                file.sync_data().map_err(failed)?;
                *synced = upto;
            }
            *synced
        };
        let mut appender = self.file.lock().expect("event log lock");
        while appender.unpublished.front().is_some_and(|e| e.seq <= synced) {
            let durable = appender.unpublished.pop_front().expect("just seen");
            let _ = self.live.send(durable);
        }
        Ok(event)
    }

    /// Appends `line` (not yet synced); returns the file, for the sync.
    fn write(&self, appender: &mut Appender, line: &[u8]) -> io::Result<Arc<File>> {
        if appender.file.is_none() {
            let file = OpenOptions::new().append(true).create(true).mode(0o600).open(&self.path)?;
            atomic::sync_parent(&self.path)?;
            appender.len = file.metadata()?.len();
            appender.file = Some(Arc::new(file));
        }
        let file = appender.file.clone().expect("opened above");
        if let Err(error) = (&*file).write_all(line) {
            // Take back whatever part got in, so the next line starts clean.
            let _ = file.set_len(appender.len);
            return Err(error);
        }
        appender.len += line.len() as u64;
        Ok(file)
    }

    /// Stored events after `after`, oldest first, that `keep` accepts.
    pub fn read_after(
        &self,
        after: u64,
        keep: impl Fn(&ConversationEvent) -> bool,
    ) -> Result<Vec<ConversationEvent>, StoreError> {
        // Events are appended in order: skip the lines before `after` cheaply.
        let all: Vec<ConversationEvent> = read_jsonl(&self.path)?;
        let start = all.partition_point(|e| e.seq <= after);
        Ok(all.into_iter().skip(start).filter(|e| keep(e)).collect())
    }

    /// New events as they are written. Subscribe before reading what is
    /// stored, then skip what the read already returned.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ConversationEvent>> {
        self.live.subscribe()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads only the number of each line when opening.
#[derive(serde::Deserialize)]
struct SeqOnly {
    seq: u64,
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

impl super::Engine {
    /// The events after `after` (of one conversation, or all), oldest first:
    /// those stored, then, with `follow`, each new one as it is written,
    /// until the engine goes away. A follower that falls behind the live
    /// buffer catches up from the file, so it misses nothing.
    pub fn events(
        &self,
        after: u64,
        instance: Option<Uuid>,
        follow: bool,
    ) -> impl futures_util::Stream<Item = Result<Arc<ConversationEvent>, StoreError>> + Send + 'static {
        struct Follower {
            engine: super::Engine,
            live: broadcast::Receiver<Arc<ConversationEvent>>,
            backlog: std::collections::VecDeque<Arc<ConversationEvent>>,
            last: u64,
            instance: Option<Uuid>,
            follow: bool,
            failed: bool,
        }
        impl Follower {
            fn wanted(&self, event: &ConversationEvent) -> bool {
                self.instance.is_none_or(|id| event.instance_id == id)
            }
            /// Reads what is stored after `last` into the backlog.
            fn catch_up(&mut self) -> Result<(), StoreError> {
                let instance = self.instance;
                let stored = self
                    .engine
                    .shared
                    .events
                    .read_after(self.last, |e| instance.is_none_or(|id| e.instance_id == id))?;
                self.backlog.extend(stored.into_iter().map(Arc::new));
                Ok(())
            }
        }
        // Subscribe before reading: an event written in between comes both
        // ways, and the sequence number drops the second.
        let mut follower = Follower {
            engine: self.clone(),
            live: self.shared.events.subscribe(),
            backlog: Default::default(),
            last: after,
            instance,
            follow,
            failed: false,
        };
        let first = follower.catch_up();
        futures_util::stream::unfold((follower, Some(first)), |(mut f, first)| async move {
            if let Some(Err(error)) = first {
                f.failed = true;
                return Some((Err(error), (f, None)));
            }
            if f.failed {
                return None;
            }
            loop {
                if let Some(event) = f.backlog.pop_front() {
                    f.last = f.last.max(event.seq);
                    return Some((Ok(event), (f, None)));
                }
                if !f.follow {
                    return None;
                }
                match f.live.recv().await {
                    Ok(event) if event.seq <= f.last => {}
                    Ok(event) => {
                        if f.wanted(&event) {
                            f.last = event.seq;
                            return Some((Ok(event), (f, None)));
                        }
                        f.last = event.seq;
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        if let Err(error) = f.catch_up() {
                            f.failed = true;
                            return Some((Err(error), (f, None)));
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }

    /// The sequence number of the last event written.
    pub fn last_event_seq(&self) -> u64 {
        self.shared.events.last_seq()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::State;

    fn created() -> EventData {
        EventData::Created { state: State::Created, target_contact: "+56912345678".into() }
    }

    #[test]
    fn numbers_carry_on_after_a_reopen_and_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let log = EventLog::open(path.clone()).unwrap();
        let id = Uuid::new_v4();
        assert_eq!(log.append(id, created()).unwrap().seq, 1);
        assert_eq!(log.append(id, created()).unwrap().seq, 2);
        drop(log);
        let mut text = std::fs::read(&path).unwrap();
        text.extend_from_slice(b"{\"seq\":3,\"at\":\"cut sh");
        std::fs::write(&path, text).unwrap();
        let log = EventLog::open(path).unwrap();
        assert_eq!(log.last_seq(), 2);
        assert_eq!(log.append(id, created()).unwrap().seq, 3);
        let seqs: Vec<u64> = log.read_after(1, |_| true).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
    }

    #[test]
    fn appends_at_once_share_fsyncs_and_followers_hear_them_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(EventLog::open(dir.path().join("events.jsonl")).unwrap());
        let mut live = log.subscribe();
        let writers: Vec<_> = (0..8)
            .map(|_| {
                let log = log.clone();
                std::thread::spawn(move || {
                    let id = Uuid::new_v4();
                    (0..50).map(|_| log.append(id, created()).unwrap().seq).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut seqs: Vec<u64> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
        seqs.sort();
        assert_eq!(seqs, (1..=400).collect::<Vec<_>>());
        let heard: Vec<u64> = (0..400).map(|_| live.try_recv().unwrap().seq).collect();
        assert_eq!(heard, (1..=400).collect::<Vec<_>>(), "in order, each once");
        let stored: Vec<u64> = log.read_after(0, |_| true).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(stored, heard);
    }

    #[test]
    fn followers_hear_each_event_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path().join("events.jsonl")).unwrap();
        let mut live = log.subscribe();
        let written = log.append(Uuid::new_v4(), created()).unwrap();
        assert_eq!(live.try_recv().unwrap(), written);
        assert_eq!(log.read_after(0, |_| true).unwrap(), vec![(*written).clone()]);
    }
}
