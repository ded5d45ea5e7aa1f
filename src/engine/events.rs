//! The event log: every change to a conversation (created, transition,
//! message in or out, todo, question, answer) as a numbered event in
//! `events.jsonl`, for whoever follows relay from outside: `relay events`,
//! `GET /events`, webhooks.
//!
//! Sequence numbers increase by one per event across all conversations and
//! carry on after a restart, so a follower resumes with "after N" and gets no
//! gap and no duplicate. An event is on disk (fsync) before anyone hears of
//! it: a number handed out is never handed out again, even after a crash.
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
    live: broadcast::Sender<Arc<ConversationEvent>>,
}

struct Appender {
    /// Opened on first use, so a home that is never written gets no file.
    file: Option<File>,
    last_seq: u64,
}

impl EventLog {
    /// Opens the log at `path`, dropping a last line a crash cut short.
    pub fn open(path: PathBuf) -> Result<EventLog, StoreError> {
        if path.exists() {
            atomic::drop_torn_tail_of(&path).map_err(|source| StoreError::Write { path: show(&path), source })?;
        }
        let last_seq = read_jsonl::<SeqOnly>(&path)?.last().map_or(0, |e| e.seq);
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        Ok(EventLog { path, file: Mutex::new(Appender { file: None, last_seq }), live })
    }

    /// The sequence number of the last event written (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.file.lock().expect("event log lock").last_seq
    }

    /// Writes the next event and tells the followers. Numbers are handed out
    /// under the lock, in file order, and only to events that reached the disk.
    pub fn append(&self, instance_id: Uuid, data: EventData) -> Result<Arc<ConversationEvent>, StoreError> {
        let mut appender = self.file.lock().expect("event log lock");
        let event = ConversationEvent { seq: appender.last_seq + 1, at: Utc::now(), instance_id, data };
        let mut line = serde_json::to_vec(&event).expect("events serialise");
        line.push(b'\n');
        let written = self.write(&mut appender, &line);
        written.map_err(|source| StoreError::Write { path: show(&self.path), source })?;
        appender.last_seq = event.seq;
        let event = Arc::new(event);
        let _ = self.live.send(event.clone());
        Ok(event)
    }

    fn write(&self, appender: &mut Appender, line: &[u8]) -> io::Result<()> {
        if appender.file.is_none() {
            let file = OpenOptions::new().append(true).create(true).mode(0o600).open(&self.path)?;
            atomic::sync_parent(&self.path)?;
            appender.file = Some(file);
        }
        let file = appender.file.as_mut().expect("opened above");
        let len = file.metadata()?.len();
        if let Err(error) = file.write_all(line).and_then(|()| file.sync_data()) {
            // Take back whatever part got in, so the next line starts clean.
            let _ = file.set_len(len);
            return Err(error);
        }
        Ok(())
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
    fn followers_hear_each_event_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path().join("events.jsonl")).unwrap();
        let mut live = log.subscribe();
        let written = log.append(Uuid::new_v4(), created()).unwrap();
        assert_eq!(live.try_recv().unwrap(), written);
        assert_eq!(log.read_after(0, |_| true).unwrap(), vec![(*written).clone()]);
    }
}
