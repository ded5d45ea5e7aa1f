use super::*;
use crate::api::State;

fn created() -> EventData {
    EventData::Created { state: State::Created, target_contact: "+56912345678".into() }
}

/// A log in a fresh folder of `dir`.
fn open(dir: &tempfile::TempDir) -> Arc<EventLog> {
    EventLog::open(dir.path().join("events"), &dir.path().join("events.jsonl")).unwrap()
}

fn seqs(events: Vec<ConversationEvent>) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[test]
fn numbers_carry_on_after_a_reopen_and_a_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    let id = Uuid::new_v4();
    assert_eq!(log.append(id, created()).unwrap().seq, 1);
    assert_eq!(log.append(id, created()).unwrap().seq, 2);
    drop(log);
    let path = dir.path().join("events/00000000000000000001.jsonl");
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(b"{\"seq\":3,\"at\":\"cut sh");
    std::fs::write(&path, text).unwrap();
    let log = open(&dir);
    assert_eq!(log.last_seq(), 2);
    assert_eq!(log.append(id, created()).unwrap().seq, 3);
    log.flush().unwrap();
    assert_eq!(seqs(log.read_after(1, |_| true).unwrap()), [2, 3]);
}

/// The single `events.jsonl` of earlier versions becomes the first
/// segment: its numbers carry on, and every event reads back.
#[test]
fn a_log_from_before_segments_is_taken_in() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("events.jsonl");
    let id = Uuid::new_v4();
    let old: Vec<String> = (5..=7)
        .map(|seq| {
            let event = ConversationEvent { seq, at: crate::clock::now(), instance_id: id, data: created() };
            serde_json::to_string(&event).unwrap() + "\n"
        })
        .collect();
    std::fs::write(&legacy, old.concat()).unwrap();
    let log = open(&dir);
    assert!(!legacy.exists());
    assert_eq!(log.last_seq(), 7);
    assert_eq!(log.oldest_seq().unwrap(), 5);
    assert_eq!(log.append(id, created()).unwrap().seq, 8);
    log.flush().unwrap();
    assert_eq!(seqs(log.read_after(0, |_| true).unwrap()), [5, 6, 7, 8]);
    assert_eq!(seqs(log.read_after(6, |_| true).unwrap()), [7, 8]);
}

/// A log written over several days: a segment a day, read across them
/// from any `after`; pruning removes whole old days (never the one
/// being written), and asking for what they held is "gone".
#[tokio::test(start_paused = true)]
async fn days_are_segments_and_old_ones_are_pruned() {
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-20T23:00:00Z").unwrap().to_utc();
    crate::clock::pretend(start);
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    let id = Uuid::new_v4();
    // An event every 4 hours from the 20th at 23:00: 1 that day, 6 a day after.
    for _ in 0..18 {
        log.append(id, created()).unwrap();
        tokio::time::advance(Duration::from_secs(4 * 3600)).await;
    }
    log.flush().unwrap();
    let firsts = log.segments.firsts().unwrap();
    assert_eq!(firsts, [1, 2, 8, 14], "one a day: 20th, 21st, 22nd, 23rd");
    for after in 0..=18 {
        assert_eq!(seqs(log.read_after(after, |_| true).unwrap()), (after + 1..=18).collect::<Vec<_>>());
    }
    // The 20th and 21st are over before the 22nd.
    let before = chrono::DateTime::parse_from_rfc3339("2026-11-22T00:00:00Z").unwrap().to_utc();
    assert_eq!(log.prune(before).unwrap(), 2);
    assert_eq!(log.oldest_seq().unwrap(), 8);
    assert_eq!(log.gone(3).unwrap(), Some(8));
    assert_eq!(log.gone(6).unwrap(), Some(8));
    assert_eq!(log.gone(7).unwrap(), None, "after 7 starts at 8");
    assert_eq!(log.gone(0).unwrap(), None, "0 asks for what is kept");
    assert_eq!(seqs(log.read_after(0, |_| true).unwrap()), (8..=18).collect::<Vec<_>>());
    assert_eq!(seqs(log.read_after(12, |_| true).unwrap()), (13..=18).collect::<Vec<_>>());
    // Everything is old: all but the segment being written goes.
    assert_eq!(log.prune(crate::clock::now() + chrono::Duration::days(1)).unwrap(), 1);
    assert_eq!(log.oldest_seq().unwrap(), 14);
    assert_eq!(log.append(id, created()).unwrap().seq, 19);
    drop(log);
    let log = open(&dir);
    assert_eq!(log.last_seq(), 19);
    assert_eq!(seqs(log.read_after(0, |_| true).unwrap()), (14..=19).collect::<Vec<_>>());
}

/// A full segment is closed at its next event, whatever the day.
#[test]
fn a_full_segment_makes_way_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    let id = Uuid::new_v4();
    let text = "x".repeat(4_000);
    let big = || EventData::MessageIn {
        message_id: Uuid::new_v4(),
        untrusted_contact_text: text.clone(),
        media: None,
        act: None,
    };
    let each = serde_json::to_vec(&ConversationEvent { seq: 1, at: crate::clock::now(), instance_id: id, data: big() })
        .unwrap()
        .len() as u64;
    let count = 2 * segments::MAX_SEGMENT_BYTES / each + 10;
    for _ in 0..count {
        log.append(id, big()).unwrap();
    }
    log.flush().unwrap();
    let firsts = log.segments.firsts().unwrap();
    assert!(firsts.len() >= 3, "{firsts:?}");
    for first in &firsts {
        let len = std::fs::metadata(log.segments.path(*first)).unwrap().len();
        assert!(len <= segments::MAX_SEGMENT_BYTES, "{len}");
    }
    for after in [0, firsts[1] - 1, firsts[1], firsts[2] + 3, count - 1, count] {
        assert_eq!(seqs(log.read_after(after, |_| true).unwrap()), (after + 1..=count).collect::<Vec<_>>());
    }
}

#[test]
fn appends_from_many_threads_are_numbered_and_heard_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
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
    let log = open(&dir);
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
    let log = open(&dir);
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
