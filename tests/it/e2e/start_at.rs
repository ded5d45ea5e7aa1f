//! `relay create --start-at` end to end with the real binary, as a new user
//! tries it: a conversation set a few seconds ahead waits in CREATED and
//! starts then, one set for later still waits after a restart, and wrong
//! times are refused with the reason. (The paused-clock account, with quiet
//! hours and the cap, is `engine::start_at`.)

use chrono::{DateTime, Duration, Utc};

use crate::support::Relay;
use crate::support::model::{sends_each_turn, with_model};

/// A London number (+44 20): Great Britain keeps one time, Europe/London.
const LONDON: &str = "+442079460123";

/// A time `ahead` from now, written with an offset as a caller would.
fn in_santiago(ahead: Duration) -> String {
    let offset = chrono::FixedOffset::west_opt(3 * 3600).unwrap();
    (Utc::now() + ahead).with_timezone(&offset).format("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

fn time(value: &serde_json::Value) -> DateTime<Utc> {
    value.as_str().unwrap_or_else(|| panic!("not a time: {value}")).parse().unwrap()
}

/// End to end: one conversation starts 3 seconds ahead, another in an hour.
/// Both wait in CREATED saying why (`relay get`, `relay status`); after a
/// restart the later one still waits, and the first has sent its first
/// message, not before its start.
#[test]
fn a_conversation_set_to_start_later_waits_in_created_through_a_restart_and_starts_then() {
    let (relay, _model) = with_model(sends_each_turn(|_| "Hello".into()));
    let soon = in_santiago(Duration::seconds(3));
    let run = relay.run(&[
        "create",
        "--objective",
        "Confirm the delivery date",
        "--contact",
        crate::support::CONTACT,
        "--todo",
        "Ask which day suits",
        "--tz",
        "America/Santiago",
        "--start-at",
        &soon,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first = run.stdout.trim().to_string();
    assert!(uuid::Uuid::parse_str(&first).is_ok(), "stdout is the id alone: {}", run.stdout);
    assert!(run.stderr.contains("in America/Santiago (the zone given)"), "{}", run.stderr);
    let later = relay.json(&[
        "create",
        "--objective",
        "Agree on a time",
        "--contact",
        LONDON,
        "--todo",
        "Ask for a time",
        "--start-at",
        &in_santiago(Duration::hours(1)),
    ]);
    let later_at = time(&later["start"]["at"]);
    assert_eq!(later["state"], "CREATED");
    assert_eq!(
        (&later["start"]["time_zone"], &later["start"]["zone_source"]),
        (&"Europe/London".into(), &"country".into())
    );

    let later_id = later["id"].as_str().unwrap();
    let held = relay.wait_for(later_id, "the hold", |i| i["waiting_for"] == "start_at");
    assert_eq!((held["state"].as_str(), time(&held["next_send_at"])), (Some("CREATED"), later_at));
    let shown = relay.ok(&["get", later_id]);
    assert!(shown.contains("the next message waits for the start time it was created with: until"), "{shown}");
    assert!(shown.contains("start at    "), "{shown}");
    assert!(relay.ok(&["status"]).contains("for the start time it was created with"));

    relay.ok(&["stop"]);
    relay.ok(&["start"]);
    let started = relay.wait_for(&first, "the first message", |i| i["first_delivered_at"].is_string());
    let sent = time(&relay.transcript(&first)[0]["timestamp"]);
    assert!(sent >= time(&started["start_at"]), "sent at {sent}, before its start {}", started["start_at"]);
    let still = relay.get(later_id);
    assert_eq!((&still["state"], &still["waiting_for"]), (&"CREATED".into(), &"start_at".into()));
    assert_eq!(time(&still["next_send_at"]), later_at);
}

/// End to end, wrong input as a new user writes it: garbage and a time
/// with no day are refused before the daemon is asked; a time passed, one
/// too far ahead, one the clocks skip or show twice are refused by the
/// daemon with the reason, and nothing is created. A contact whose zone
/// relay cannot tell from the number is read in courtesy.default_tz, and
/// the answer says so.
#[test]
fn wrong_start_times_are_refused_with_the_reason_and_an_assumed_zone_is_named() {
    let relay = Relay::sandbox();
    relay.edit_config(|config| config["courtesy"]["default_tz"] = "Etc/UTC".into());
    relay.ok(&["start"]);
    let create = |contact: &str, start: &str| {
        let args = ["create", "--objective", "o", "--contact", contact, "--todo", "t", "--start-at", start];
        relay.run(&args)
    };
    for (start, says) in [
        ("soon", "'soon' is not a start time: give a time with its offset"),
        ("10:00", "'10:00' has no day: give today 10:00, tomorrow 10:00"),
        ("2026-02-30 10:00", "2026-02-30 is not a day of the calendar"),
        ("2020-01-01 10:00", "has already passed: it is"),
        ("2099-01-01T10:00:00Z", "is more than 30 days ahead"),
        // London's clocks skip 01:00-02:00 on 2026-03-29 and show 01:00-02:00 twice on 2026-10-25.
        (
            "2026-03-29 01:30",
            "2026-03-29 01:30 does not exist in Europe/London: the clocks go forward from 01:00 to 02:00",
        ),
        (
            "2026-10-25 01:30",
            "say which with its offset: 2026-10-25T01:30:00+01:00 (the first) or 2026-10-25T01:30:00+00:00",
        ),
    ] {
        let run = create(LONDON, start);
        assert_eq!(run.code, 2, "{start}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(says), "{start}: {}", run.stderr);
    }
    assert!(relay.instances().is_empty(), "nothing was created");

    // +1 is several zones: relay reads the time in courtesy.default_tz, and says so.
    let tomorrow = (Utc::now() + Duration::days(1)).format("%Y-%m-%d").to_string();
    let run = create("+12025550123", &format!("{tomorrow} 10:00"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("relay: starts {tomorrow} 10:00 +00:00 in Etc/UTC (courtesy.default_tz")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("give --tz if it is wrong"), "{}", run.stderr);
    let answer = relay.json(&[
        "create",
        "--objective",
        "o",
        "--contact",
        "+12025550124",
        "--todo",
        "t",
        "--start-at",
        "tomorrow 3pm",
    ]);
    assert_eq!(answer["start"]["zone_source"], "default");
    let before = Utc::now();
    let soon =
        relay.json(&["create", "--objective", "o", "--contact", "+12025550125", "--todo", "t", "--start-at", "in 2h"]);
    let at = time(&soon["start"]["at"]) - Duration::hours(2);
    assert!(at >= before - Duration::seconds(1) && at <= Utc::now(), "in 2h is {}", soon["start"]["at"]);
    assert_eq!(answer["start"]["local"].as_str().unwrap()[11..], *"15:00 +00:00");
}
