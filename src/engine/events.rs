//! The event log: every change to a conversation (created, transition,
//! message in or out, todo, question, answer) as a numbered event in
//! `events.jsonl`, for whoever follows relay from outside: `relay events`,
//! `GET /events`, webhooks.
//!
//! Sequence numbers increase by one per event across all conversations and
//! carry on after a restart, so a follower resumes with "after N" and gets no
//! gap and no duplicate. An event is on disk (fsync) before anyone hears of
//! it: a number handed out is never handed out again, even after a crash.
//! A thread of its own does the fsyncs, one for every batch of events
//! written meanwhile (group commit), so a conversation never waits for one.
//! (A thread, not a task: an fsync blocks, and it would block whichever
//! runtime worker ran it.) Dropping the log wakes it to sync the rest and end.
//! Followers that fall behind the in-memory broadcast read the file again.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::broadcast;
use uuid::Uuid;

use crate::api::{ConversationEvent, EventData};
use crate::store::{StoreError, atomic, read_jsonl};

/// Events kept for followers in memory; one further behind reads the file.
const LIVE_BUFFER: usize = 1024;

pub struct EventLog {
    path: PathBuf,
    core: Arc<Core>,
    /// Joined when the log is dropped.
    syncer: Option<JoinHandle<()>>,
}

/// What the log shares with its syncer thread: not the log itself, so the
/// thread keeps nothing alive and dropping the log can tell it to end.
struct Core {
    state: Mutex<Appender>,
    /// Wakes the syncer: something to sync, or the log is closed.
    written: Condvar,
    live: broadcast::Sender<Arc<ConversationEvent>>,
}

struct Appender {
    /// Opened on first use, so a home that is never written gets no file.
    file: Option<Arc<File>>,
    /// The file's length: where a failed write is cut back to.
    len: u64,
    /// The last sequence number written, and the last one known on disk.
    last_seq: u64,
    synced: u64,
    /// Written, not yet on disk, oldest first: told to followers once synced.
    unpublished: VecDeque<Arc<ConversationEvent>>,
    /// The log is dropped: the syncer syncs what is left and ends.
    closed: bool,
}

/// After a failed fsync, the syncer tries again this much later (sooner if
/// the log is closed meanwhile), rather than spin on a failing disk.
const RETRY_SYNC_AFTER: Duration = Duration::from_millis(200);

impl EventLog {
    /// Opens the log at `path`, dropping a last line a crash cut short, and
    /// starts its syncer thread (which ends when the log is dropped).
    pub fn open(path: PathBuf) -> Result<Arc<EventLog>, StoreError> {
        if path.exists() {
            atomic::drop_torn_tail_of(&path).map_err(|source| StoreError::Write { path: show(&path), source })?;
        }
        let last_seq = read_jsonl::<SeqOnly>(&path)?.last().map_or(0, |e| e.seq);
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        let appender =
            Appender { file: None, len: 0, last_seq, synced: last_seq, unpublished: VecDeque::new(), closed: false };
        let core = Arc::new(Core { state: Mutex::new(appender), written: Condvar::new(), live });
        let for_syncer = core.clone();
        let syncer = std::thread::Builder::new()
            .name("relay-events".into())
            .spawn(move || syncer(&for_syncer))
            .map_err(|source| StoreError::Write { path: show(&path), source })?;
        Ok(Arc::new(EventLog { path, core, syncer: Some(syncer) }))
    }

    fn lock(&self) -> MutexGuard<'_, Appender> {
        self.core.lock()
    }

    /// The sequence number of the last event written (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.lock().last_seq
    }

    /// Writes the next event. It is numbered in file order and handed to the
    /// syncer, which makes it durable and then tells the followers: nobody
    /// hears of an event before it is on disk, so no number is ever handed
    /// out twice, and the caller (an actor) never waits for an fsync here.
    pub fn append(&self, instance_id: Uuid, data: EventData) -> Result<Arc<ConversationEvent>, StoreError> {
        let mut appender = self.lock();
        let event = ConversationEvent { seq: appender.last_seq + 1, at: crate::clock::now(), instance_id, data };
        let mut line = serde_json::to_vec(&event).expect("events serialise");
        line.push(b'\n');
        self.write(&mut appender, &line).map_err(|source| StoreError::Write { path: show(&self.path), source })?;
        appender.last_seq = event.seq;
        let event = Arc::new(event);
        appender.unpublished.push_back(event.clone());
        drop(appender);
        self.core.written.notify_one();
        Ok(event)
    }

    fn write(&self, appender: &mut Appender, line: &[u8]) -> io::Result<()> {
        if appender.file.is_none() {
            let file = OpenOptions::new().append(true).create(true).mode(0o600).open(&self.path)?;
            atomic::sync_parent(&self.path)?;
            appender.len = file.metadata()?.len();
            appender.file = Some(Arc::new(file));
        }
        let file = appender.file.as_ref().expect("opened above");
        if let Err(error) = (&**file).write_all(line) {
            // Take back whatever part got in, so the next line starts clean.
            let _ = file.set_len(appender.len);
            return Err(error);
        }
        appender.len += line.len() as u64;
        Ok(())
    }

    /// Syncs what is written and tells the followers, now (the syncer does
    /// it within a few milliseconds anyway). For readers that must see every
    /// event written so far, and for shutdown.
    pub fn flush(&self) -> Result<(), StoreError> {
        let (file, upto) = {
            let appender = self.lock();
            match (&appender.file, appender.unpublished.back()) {
                (Some(file), Some(last)) => (file.clone(), last.seq),
                _ => return Ok(()),
            }
        };
        file.sync_data().map_err(|source| StoreError::Write { path: show(&self.path), source })?;
        self.core.publish(upto);
        Ok(())
    }

    /// Stored events after `after`, oldest first, that `keep` accepts.
    pub fn read_after(
        &self,
        after: u64,
        keep: impl Fn(&ConversationEvent) -> bool,
    ) -> Result<Vec<ConversationEvent>, StoreError> {
        // Only what is on disk: the rest reaches followers once it is.
        let synced = self.lock().synced;
        let all: Vec<ConversationEvent> = read_jsonl(&self.path)?;
        // Events are appended in order: skip the lines before `after` cheaply.
        let start = all.partition_point(|e| e.seq <= after);
        Ok(all.into_iter().skip(start).take_while(|e| e.seq <= synced).filter(|e| keep(e)).collect())
    }

    /// New events, once on disk. Subscribe before reading what is
    /// stored, then skip what the read already returned.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ConversationEvent>> {
        self.core.live.subscribe()
    }
}

impl Drop for EventLog {
    /// Wakes the syncer to sync what is still waiting and end, and waits for
    /// it (one fsync at most): once the log is gone, so is its thread, and
    /// followers have heard every event and then the end.
    fn drop(&mut self) {
        self.core.state.lock().unwrap_or_else(PoisonError::into_inner).closed = true;
        self.core.written.notify_one();
        if let Some(syncer) = self.syncer.take() {
            let _ = syncer.join();
        }
    }
}

impl Core {
    fn lock(&self) -> MutexGuard<'_, Appender> {
        self.state.lock().expect("event log lock")
    }

    /// Everything up to `upto` is on disk: tell the followers, in order.
    fn publish(&self, upto: u64) {
        let mut appender = self.lock();
        appender.synced = appender.synced.max(upto);
        while appender.unpublished.front().is_some_and(|e| e.seq <= upto) {
            let durable = appender.unpublished.pop_front().expect("just seen");
            let _ = self.live.send(durable);
        }
    }
}

/// The syncer thread: whenever events are waiting, one fsync for all of
/// them (group commit), then they are published. It runs off the async
/// runtime, so no conversation waits for it. It sleeps on the condvar until
/// there is something to sync or the log is closed; closed, it syncs what is
/// left and ends.
fn syncer(core: &Core) {
    loop {
        let (waiting, closed) = {
            let appender = core.lock();
            let appender =
                core.written.wait_while(appender, |a| a.unpublished.is_empty() && !a.closed).expect("event log lock");
            (appender.file.clone().zip(appender.unpublished.back().map(|e| e.seq)), appender.closed)
        };
        if let Some((file, upto)) = waiting {
            match file.sync_data() {
                Ok(()) => core.publish(upto),
                Err(error) if closed => tracing::error!(%error, "cannot sync the last events"),
                Err(error) => {
                    tracing::error!(%error, "cannot sync the event log; retrying");
                    let appender = core.lock();
                    let _ = core.written.wait_timeout_while(appender, RETRY_SYNC_AFTER, |a| !a.closed);
                }
            }
        }
        if closed {
            return;
        }
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

impl super::Shared {
    /// Records an event of conversation `id`. The change it describes is
    /// already on disk; an event that cannot be written is logged and lost
    /// (its number is not used), never a reason to undo the change.
    pub(crate) fn emit(&self, id: Uuid, data: EventData) {
        if let Err(error) = self.events.append(id, data) {
            tracing::error!(instance = %id, %error, "cannot record an event");
        }
    }
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
        // Everything written so far is readable (and later ones come live).
        if let Err(error) = self.shared.events.flush() {
            tracing::error!(%error, "cannot sync the event log");
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
        log.flush().unwrap();
        let seqs: Vec<u64> = log.read_after(1, |_| true).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
    }

    #[test]
    fn appends_from_many_threads_are_numbered_and_heard_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path().join("events.jsonl")).unwrap();
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
        let heard: Vec<u64> = (0..400).map(|_| live.blocking_recv().unwrap().seq).collect();
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
        // Not before it is on disk: the syncer publishes it.
        assert_eq!(live.blocking_recv().unwrap(), written);
        assert_eq!(log.read_after(0, |_| true).unwrap(), vec![(*written).clone()]);
    }

    /// Dropping the log ends its syncer there and then (nothing polls): what
    /// was waiting is synced and told first, then followers hear the end.
    #[test]
    fn dropping_the_log_tells_the_rest_and_ends_the_syncer() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path().join("events.jsonl")).unwrap();
        let mut live = log.subscribe();
        let written: Vec<_> = (0..3).map(|_| log.append(Uuid::new_v4(), created()).unwrap()).collect();
        // On a thread of its own, so a syncer that never ends fails the test
        // instead of hanging it (the drop waits for the syncer).
        let (done, dropped) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(log);
            let _ = done.send(());
        });
        dropped.recv_timeout(Duration::from_secs(5)).expect("the syncer ended");
        for event in written {
            assert_eq!(live.try_recv().unwrap(), event);
        }
        assert_eq!(live.try_recv(), Err(broadcast::error::TryRecvError::Closed));
    }
}
