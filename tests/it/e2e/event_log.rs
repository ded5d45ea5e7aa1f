//! The event log over months: a file a day in `events/`, old days removed
//! after `events.keep`, and a reader asking for what they held told where
//! the log now starts, by the real binary over the CLI and the API.

use serde_json::{Value, json};

use crate::support::*;

/// Event lines numbered `seqs`, at `at`, of one conversation.
fn lines(seqs: std::ops::RangeInclusive<u64>, at: &str) -> String {
    let id = uuid::Uuid::new_v4();
    seqs.map(|seq| {
        let event = json!({"seq": seq, "at": at, "instance_id": id, "type": "created", "state": "CREATED",
            "target_contact": "+56912345678"});
        format!("{event}\n")
    })
    .collect()
}

fn seqs(out: &str) -> Vec<u64> {
    out.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["seq"].as_u64().unwrap()).collect()
}

/// A sandbox home (not started) whose log has a day from long ago (events
/// 1 to 3) and one from yesterday (4 to 6); and its `events/`.
fn with_an_old_day_and_yesterday() -> (Relay, std::path::PathBuf) {
    let relay = Relay::sandbox();
    let dir = relay.path().join("events");
    std::fs::create_dir_all(&dir).unwrap();
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    std::fs::write(dir.join("00000000000000000001.jsonl"), lines(1..=3, "2025-01-01T10:00:00Z")).unwrap();
    std::fs::write(dir.join("00000000000000000004.jsonl"), lines(4..=6, &yesterday)).unwrap();
    (relay, dir)
}

/// A home whose log has a day from long ago (events 1 to 3) and one from
/// yesterday (4 to 6): at start the old day goes, yesterday's stays, and
/// the numbers carry on.
#[test]
fn old_days_go_after_events_keep_and_a_reader_is_told_where_the_log_starts() {
    let (relay, dir) = with_an_old_day_and_yesterday();
    relay.ok(&["start"]);
    assert!(!dir.join("00000000000000000001.jsonl").exists(), "older than events.keep (90 days)");

    // Whatever is kept, from the start; from within what is kept, the rest.
    assert_eq!(seqs(&relay.ok(&["events", "--json"])), [4, 5, 6]);
    assert_eq!(seqs(&relay.ok(&["events", "--json", "--after", "3"])), [4, 5, 6]);
    assert_eq!(seqs(&relay.ok(&["events", "--json", "--after", "5"])), [6]);
    // From within what went: told so, in words and for a program.
    let error = relay.fails(&["events", "--after", "1"], 4);
    assert!(
        error.contains(
            "events 2 to 3 are no longer kept (events.keep); the oldest kept is 4: ask for the events after 3"
        ),
        "{error}"
    );
    let (status, body) = relay.http("GET", "/events?after=2", &[], None);
    assert_eq!(status, 410, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((&body["code"], &body["oldest_seq"]), (&json!("gone"), &json!(4)));

    // New events carry on the numbers, in today's file.
    let id = relay.create(&[]);
    let after = relay.ok(&["events", "--json", "--after", "6"]);
    assert_eq!(seqs(&after)[0], 7, "{after}");
    assert!(after.contains(&id));
}

/// A webhook that got nothing for longer than `events.keep` goes on from
/// the oldest event kept, in order, and the log says which it never got.
#[test]
fn a_webhook_behind_what_is_kept_goes_on_from_the_oldest_kept() {
    let (relay, _) = with_an_old_day_and_yesterday();
    relay.ok(&["start"]);
    let (go, wait_for_go) = std::sync::mpsc::channel();
    go.send(()).unwrap();
    let (port, received) = crate::support::webhook_receiver::receiver(0, wait_for_go);
    relay.ok(&["webhook", "add", &format!("http://127.0.0.1:{port}/hook")]);
    relay.ok(&["stop"]);
    // It had got only event 1 (it was added long ago).
    let path = relay.path().join("webhooks.json");
    let mut hooks: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    hooks["webhooks"][0]["delivered_seq"] = json!(1);
    std::fs::write(&path, hooks.to_string()).unwrap();
    relay.ok(&["start"]);
    let seqs: Vec<String> = (0..3)
        .map(|_| {
            let (_, request) = received.recv_timeout(std::time::Duration::from_secs(10)).expect("a delivery");
            request.header("relay-event-seq").to_string()
        })
        .collect();
    assert_eq!(seqs, ["4", "5", "6"]);
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    assert!(log.contains("events no longer kept were never delivered") && log.contains("from=2 to=3"), "{log}");
}

/// A config with an `events.keep` outside a day to ten years is refused
/// before the daemon starts, naming the setting.
#[test]
fn an_events_keep_out_of_bounds_is_refused_by_name() {
    let relay = Relay::sandbox();
    relay.edit_config(|config| config["events"] = json!({"keep": "1h"}));
    let error = relay.fails(&["start"], 2);
    assert!(error.contains("events.keep must be from 1d to 3650d (it is 1h"), "{error}");
}
