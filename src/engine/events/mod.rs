//! The event log: every change to a conversation (created, transition,
//! message in or out, todo, question, answer) as a numbered event in
//! `events/` (a segment a day: see [`segments`]), for whoever follows relay
//! from outside: `relay events`, `GET /events`, webhooks.
//!
//! Sequence numbers increase by one per event across all conversations and
//! carry on after a restart, so a follower resumes with "after N" and gets no
//! gap and no duplicate. An event is on disk (fsync) before anyone hears of
//! it: a number handed out is never handed out again, even after a crash.
//! A thread of its own does the fsyncs, one for every batch of events
//! written meanwhile (group commit), so a conversation never waits for one.
//! (A thread, not a task: an fsync blocks, and it would block whichever
//! runtime worker ran it.) Dropping the log wakes it to sync the rest and end.
//! Followers that fall behind the in-memory broadcast read the files again.
//! Segments older than `events.keep` are removed whole ([`EventLog::prune`]);
//! a reader asking for what they held is told where the log now starts.

mod segments;

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

use chrono::NaiveDate;

use crate::api::{ConversationEvent, EventData};
use crate::store::{StoreError, atomic};
use segments::{Lines, Segments};

/// Events kept for followers in memory; one further behind reads the file.
const LIVE_BUFFER: usize = 1024;

pub struct EventLog {
    segments: Segments,
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
    /// The segment written to: its first event's number and UTC day.
    segment: Option<(u64, NaiveDate)>,
    /// Its file, opened on first use, so a home that is never written gets
    /// no file.
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
    /// Opens the log in the folder `dir` (moving in `legacy`, the single
    /// `events.jsonl` of earlier versions), dropping a last line a crash
    /// cut short, and starts its syncer thread (which ends when the log is
    /// dropped).
    pub fn open(dir: PathBuf, legacy: &Path) -> Result<Arc<EventLog>, StoreError> {
        let segments = Segments::new(dir);
        let failed = |source| StoreError::Write { path: show(segments.dir()), source };
        segments.adopt(legacy).map_err(failed)?;
        let (segment, last_seq) = Self::resume(&segments).map_err(failed)?;
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        let appender = Appender {
            segment,
            file: None,
            len: 0,
            last_seq,
            synced: last_seq,
            unpublished: VecDeque::new(),
            closed: false,
        };
        let core = Arc::new(Core { state: Mutex::new(appender), written: Condvar::new(), live });
        let for_syncer = core.clone();
        let syncer = std::thread::Builder::new()
            .name("relay-events".into())
            .spawn(move || syncer(&for_syncer))
            .map_err(failed)?;
        Ok(Arc::new(EventLog { segments, core, syncer: Some(syncer) }))
    }

    /// Where writing goes on: the newest segment (its torn last line
    /// dropped) and the last number written. An empty newest segment (a
    /// crash right after it was made) is removed: the next event makes it
    /// again.
    fn resume(segments: &Segments) -> std::io::Result<(Option<(u64, NaiveDate)>, u64)> {
        let firsts = segments.firsts()?;
        let Some(&first) = firsts.last() else { return Ok((None, 0)) };
        let path = segments.path(first);
        atomic::drop_torn_tail_of(&path)?;
        let file = File::open(&path)?;
        match (segments::first_header(&file)?, segments::last_header(&file)?) {
            (Some(opening), Some(last)) => Ok((Some((first, opening.at.date_naive())), last.seq)),
            _ => {
                std::fs::remove_file(&path)?;
                atomic::sync_dir(segments.dir())?;
                Ok((None, first.saturating_sub(1)))
            }
        }
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
        self.write(&mut appender, &event, &line)
            .map_err(|source| StoreError::Write { path: show(self.segments.dir()), source })?;
        appender.last_seq = event.seq;
        let event = Arc::new(event);
        appender.unpublished.push_back(event.clone());
        drop(appender);
        self.core.written.notify_one();
        Ok(event)
    }

    fn write(&self, appender: &mut Appender, event: &ConversationEvent, line: &[u8]) -> io::Result<()> {
        let day = event.at.date_naive();
        // A new segment for a new day, or once this one is full.
        let full = appender.len > 0 && appender.len + line.len() as u64 > segments::MAX_SEGMENT_BYTES;
        if appender.segment.is_none_or(|(_, started)| started != day) || full {
            if let Some(old) = appender.file.take() {
                // Its events on disk now: the syncer syncs only the newest file.
                old.sync_data()?;
            }
            appender.segment = Some((event.seq, day));
            appender.len = 0;
        }
        if appender.file.is_none() {
            let (first, _) = appender.segment.expect("chosen above");
            let path = self.segments.path(first);
            let file = OpenOptions::new().append(true).create(true).mode(0o600).open(&path)?;
            atomic::sync_parent(&path)?;
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
        file.sync_data().map_err(|source| StoreError::Write { path: show(self.segments.dir()), source })?;
        self.core.publish(upto);
        Ok(())
    }

    /// Stored events after `after`, oldest first, that `keep` accepts (of
    /// those still kept: see [`EventLog::gone`]). Reads from the segment
    /// `after` falls in, from just before its first event after `after`.
    pub fn read_after(
        &self,
        after: u64,
        keep: impl Fn(&ConversationEvent) -> bool,
    ) -> Result<Vec<ConversationEvent>, StoreError> {
        // Only what is on disk: the rest reaches followers once it is.
        let synced = self.lock().synced;
        let unreadable = |source| StoreError::Read { path: show(self.segments.dir()), source };
        let firsts = self.segments.firsts().map_err(unreadable)?;
        let from = firsts.partition_point(|first| *first <= after.saturating_add(1)).saturating_sub(1);
        let mut events = Vec::new();
        for (n, first) in firsts[from.min(firsts.len())..].iter().enumerate() {
            if *first > synced {
                break;
            }
            let path = self.segments.path(*first);
            let file = match File::open(&path) {
                Ok(file) => file,
                // Removed meanwhile ([`EventLog::prune`]): what is left follows.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => return Err(StoreError::Read { path: show(&path), source }),
            };
            let start = if n == 0 { segments::start_after(&file, after) } else { Ok(0) };
            let lines = start.and_then(|start| Lines::from(file, start));
            for line in lines.map_err(|source| StoreError::Read { path: show(&path), source })? {
                let line = line.map_err(|source| StoreError::Read { path: show(&path), source })?;
                let event: ConversationEvent = serde_json::from_slice(&line)
                    .map_err(|source| StoreError::Corrupt { path: show(&path), source })?;
                if event.seq > synced {
                    return Ok(events);
                }
                if event.seq > after && keep(&event) {
                    events.push(event);
                }
            }
        }
        Ok(events)
    }

    /// The number of the oldest event kept (the next to be written, if none
    /// is).
    pub fn oldest_seq(&self) -> Result<u64, StoreError> {
        let firsts =
            self.segments.firsts().map_err(|source| StoreError::Read { path: show(self.segments.dir()), source })?;
        Ok(firsts.first().copied().unwrap_or_else(|| self.last_seq() + 1))
    }

    /// Whether events after `after` were removed ([`EventLog::prune`]):
    /// the oldest kept, if so. `after` 0 asks for whatever is kept.
    pub fn gone(&self, after: u64) -> Result<Option<u64>, StoreError> {
        let oldest = self.oldest_seq()?;
        Ok((after > 0 && after.saturating_add(1) < oldest).then_some(oldest))
    }

    /// Removes the oldest segments whose every event is older than
    /// `before`, never the one being written; returns how many. What is
    /// left stays readable from any `after` within it.
    pub fn prune(&self, before: chrono::DateTime<chrono::Utc>) -> Result<usize, StoreError> {
        let failed = |source| StoreError::Write { path: show(self.segments.dir()), source };
        let writing = self.lock().segment.map(|(first, _)| first);
        let firsts = self.segments.firsts().map_err(failed)?;
        let mut removed = 0;
        // Oldest first, and only while they are old: the log stays one run.
        for first in firsts.iter().take(firsts.len().saturating_sub(1)) {
            if Some(*first) == writing {
                break;
            }
            let path = self.segments.path(*first);
            let last = File::open(&path).and_then(|file| segments::last_header(&file)).map_err(failed)?;
            if last.is_some_and(|last| last.at >= before) {
                break;
            }
            std::fs::remove_file(&path).map_err(failed)?;
            removed += 1;
        }
        if removed > 0 {
            atomic::sync_dir(self.segments.dir()).map_err(failed)?;
        }
        Ok(removed)
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

    /// Removes the event log's days older than `events.keep`; returns how many.
    pub(super) fn prune_events(&self) -> Result<usize, StoreError> {
        let keep = chrono::Duration::from_std(self.settings.events_keep).unwrap_or(chrono::Duration::MAX);
        match crate::clock::now().checked_sub_signed(keep) {
            Some(before) => self.events.prune(before),
            None => Ok(0),
        }
    }
}

impl super::Engine {
    /// The events after `after` (of one conversation, or all), oldest first:
    /// those stored, then, with `follow`, each new one as it is written,
    /// until the engine goes away. A follower that falls behind the live
    /// buffer catches up from the files, so it misses nothing. Events after
    /// `after` that are no longer kept (`events.keep`) are an error that
    /// names the oldest kept; `after` 0 is whatever is kept.
    pub fn events(
        &self,
        after: u64,
        instance: Option<Uuid>,
        follow: bool,
    ) -> Result<
        impl futures_util::Stream<Item = Result<Arc<ConversationEvent>, StoreError>> + Send + 'static,
        super::EngineError,
    > {
        if let Some(oldest) = self.shared.events.gone(after)? {
            return Err(super::EngineError::EventsGone { after, oldest });
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
        Ok(futures_util::stream::unfold((follower, Some(first)), |(mut f, first)| async move {
            if let Some(Err(error)) = first {
                f.failed = true;
                return Some((Err(error), (f, None)));
            }
            let next = f.next().await?;
            Some((next, (f, None)))
        }))
    }

    /// The sequence number of the last event written.
    pub fn last_event_seq(&self) -> u64 {
        self.shared.events.last_seq()
    }
}

/// One reader of the event log: what is stored after `last`, then (when
/// following) what comes live, of one conversation or all.
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
        let stored =
            self.engine.shared.events.read_after(self.last, |e| instance.is_none_or(|id| e.instance_id == id))?;
        self.backlog.extend(stored.into_iter().map(Arc::new));
        Ok(())
    }
    /// The next event; None at the end, and after an error (given once).
    async fn next(&mut self) -> Option<Result<Arc<ConversationEvent>, StoreError>> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(event) = self.backlog.pop_front() {
                self.last = self.last.max(event.seq);
                return Some(Ok(event));
            }
            if !self.follow {
                return None;
            }
            match self.live.recv().await {
                Ok(event) if event.seq <= self.last => {}
                Ok(event) => {
                    self.last = event.seq;
                    if self.wanted(&event) {
                        return Some(Ok(event));
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if let Err(error) = self.catch_up() {
                        self.failed = true;
                        return Some(Err(error));
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests;
