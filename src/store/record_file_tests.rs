use std::fs;

use proptest::prelude::*;

use super::*;
use crate::api::HeartbeatConfig;
use crate::fsm::State;

fn record(objective: &str) -> ConversationRecord {
    ConversationRecord::new(objective.into(), "+56912345678".into(), Vec::new(), HeartbeatConfig::default())
}

fn versions(record: &ConversationRecord, n: usize) -> Vec<ConversationRecord> {
    (0..n).map(|k| ConversationRecord { media_received: k as u32, ..record.clone() }).collect()
}

#[test]
fn a_change_is_a_line_of_the_log_and_the_checkpoint_stays() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("a.json");
    let all = versions(&record("o"), 3);
    save(&checkpoint, &all[0]).unwrap();
    let first = fs::read(&checkpoint).unwrap();
    for version in &all[1..] {
        save(&checkpoint, version).unwrap();
        assert_eq!(&load(&checkpoint).unwrap(), version);
    }
    assert_eq!(fs::read(&checkpoint).unwrap(), first, "the checkpoint is written only when the log is folded");
    assert_eq!(fs::read_to_string(log_path(&checkpoint)).unwrap().lines().count(), 2);
}

#[test]
fn a_new_conversation_has_its_empty_log_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("a.json");
    save(&checkpoint, &record("o")).unwrap();
    assert_eq!(fs::metadata(log_path(&checkpoint)).unwrap().len(), 0, "made with the checkpoint, not by a change");
}

#[test]
fn a_record_written_before_logs_gets_one_at_its_next_change() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("a.json");
    let all = versions(&record("o"), 2);
    fs::write(&checkpoint, to_pretty_json(&all[0])).unwrap();
    assert_eq!(load(&checkpoint).unwrap(), all[0]);
    save(&checkpoint, &all[1]).unwrap();
    assert_eq!(load(&checkpoint).unwrap(), all[1]);
    assert_eq!(fs::read_to_string(log_path(&checkpoint)).unwrap().lines().count(), 1);
}

#[test]
fn a_log_past_its_limit_is_folded_into_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("a.json");
    let big = record(&"x".repeat(8 * 1024));
    let all = versions(&big, 12);
    for version in &all {
        save(&checkpoint, version).unwrap();
    }
    let log = fs::metadata(log_path(&checkpoint)).unwrap().len();
    assert!(log <= LOG_LIMIT, "the log was folded ({log} bytes)");
    let written: ConversationRecord = serde_json::from_slice(&fs::read(&checkpoint).unwrap()).unwrap();
    assert!(written.media_received > 0, "the checkpoint took a later version");
    assert_eq!(load(&checkpoint).unwrap(), all[11]);
}

#[test]
fn an_ended_conversation_is_its_checkpoint_alone() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("a.json");
    let mut all = versions(&record("o"), 3);
    all[2].state = State::Completed;
    for version in &all {
        save(&checkpoint, version).unwrap();
    }
    assert!(!log_path(&checkpoint).exists());
    let written: ConversationRecord = serde_json::from_slice(&fs::read(&checkpoint).unwrap()).unwrap();
    assert_eq!(written, all[2]);
}

/// What a crash can leave at the log's end: part of a line, or a line of
/// something else with its newline (blocks the disk never wrote).
fn torn_tail() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 1..200).prop_map(|mut bytes| {
            bytes.retain(|b| *b != b'\n');
            bytes
        }),
        proptest::collection::vec(any::<u8>(), 0..200).prop_map(|mut bytes| {
            bytes.retain(|b| *b != b'\n');
            bytes.push(b'\n');
            bytes
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// After any number of changes (folds included, some written to wait
    /// for the next fsync) and whatever a crash left at the log's end, the
    /// record is the last version written, and the next change goes on
    /// from it.
    #[test]
    fn the_record_is_the_last_version_written_whatever_a_crash_left(
        changes in 1usize..40,
        lazily in proptest::collection::vec(any::<bool>(), 40),
        size in 0usize..6_000,
        tail in proptest::option::of(torn_tail()),
        cut in prop::sample::Index::arbitrary(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let checkpoint = dir.path().join("a.json");
        let all = versions(&record(&"y".repeat(size)), changes + 1);
        for (version, lazily) in all[..changes].iter().zip(&lazily) {
            let durability = if *lazily { Durability::WithNextWrite } else { Durability::Now };
            write(&checkpoint, version, durability).unwrap();
        }
        let log = log_path(&checkpoint);
        if let Some(tail) = &tail {
            // A torn copy of the next version's line, or garbage.
            let mut next = serde_json::to_vec(&all[changes]).unwrap();
            next.truncate(cut.index(next.len()));
            let junk = if tail.len() % 2 == 0 { next } else { tail.clone() };
            let mut bytes = fs::read(&log).unwrap_or_default();
            bytes.extend(junk);
            fs::write(&log, bytes).unwrap();
        }
        prop_assert_eq!(&load(&checkpoint).unwrap(), &all[changes - 1]);
        save(&checkpoint, &all[changes]).unwrap();
        prop_assert_eq!(&load(&checkpoint).unwrap(), &all[changes]);
    }
}
