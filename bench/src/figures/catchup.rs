//! Event catch-up: reading the events after a given `seq` costs what it
//! returns, not the log's size. A log of N events is seeded in daily
//! segments (`events/<first seq>.jsonl`, as the daemon writes them); the
//! same reads on a log of 1,000 events are the reference, in the same run.

use std::io::Write;

use chrono::{Duration as Days, Utc};
use relay::api::{ConversationEvent, EventData, TodoStatus};
use uuid::Uuid;

use crate::model::Model;
use crate::relay::Relay;
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

/// The events a catch-up near the end returns.
const TAIL: u64 = 100;
/// Days the seeded log spans (within `events.keep`, 90 days by default).
const DAYS: u64 = 40;

struct Measured {
    size: u64,
    tail: Samples,
    middle: Samples,
    all: Samples,
}

pub fn run(bin: &std::path::Path, model: &Model, size: u64, runs: usize) -> Section {
    let small = at(bin, model, 1_000, runs);
    let large = at(bin, model, size, runs);
    let mut section = Section::new(
        "Event catch-up",
        &format!(
            "`GET /events?after=N&follow=false` on a log of {} events in {DAYS} daily segments, against a log of {} \
             in the same run; {runs} runs each (fewer for the long reads). \"The last {TAIL}\": `after` = the last \
             seq - {TAIL}. \"From the middle\": `after` = half the log, every event from there, per event. \"All\": \
             every event, per event. Target: the last {TAIL} within 2x of the small log's (the cost is the events \
             returned, not the log).",
            large.size, small.size
        ),
        &["read", &format!("{} events", small.size), &format!("{} events", large.size), "ratio", "target"],
    );
    let row = |section: &mut Section, name: &str, s: f64, l: f64, target: String| {
        section.row(vec![name.into(), ms(s), ms(l), format!("{:.2}x", l / s), target]);
    };
    let (s, l) = (small.tail.median(), large.tail.median());
    row(&mut section, &format!("the last {TAIL}, median"), s, l, verdict(l / s <= 2.0));
    let per_event = |section: &mut Section, name: &str, s: f64, l: f64| {
        let cells =
            vec![name.into(), format!("{s:.2} µs"), format!("{l:.2} µs"), format!("{:.2}x", l / s), String::new()];
        section.row(cells);
    };
    let middle = |m: &Measured| m.middle.median() / (m.size - m.size / 2) as f64 * 1e3;
    per_event(&mut section, "from the middle, per event", middle(&small), middle(&large));
    let all = |m: &Measured| m.all.median() / m.size as f64 * 1e3;
    per_event(&mut section, "all, per event", all(&small), all(&large));
    section
}

fn at(bin: &std::path::Path, model: &Model, size: u64, runs: usize) -> Measured {
    println!("catch-up: a log of {size} events");
    let relay = Relay::new(bin, model.base_url());
    seed(&relay.path().join("events"), size);
    relay.start();
    let mut http = relay.http();
    let read = |http: &mut crate::http::Http, after: u64| {
        let body = http.expect("GET", &format!("/events?after={after}&follow=false"), None, 200);
        assert_eq!(events_in(&body), size - after, "events after {after}");
    };
    let tail = Samples::time(runs, 3, || read(&mut http, size - TAIL));
    let middle = Samples::time(runs.min(10), 1, || read(&mut http, size / 2));
    let all = Samples::time(runs.min(5), 1, || read(&mut http, 0));
    relay.stop();
    Measured { size, tail, middle, all }
}

/// The events in a Server-Sent Events body (a `data:` line each).
fn events_in(body: &str) -> u64 {
    body.lines().filter(|line| line.starts_with("data:")).count() as u64
}

/// `size` events of a made-up conversation, a segment a day over [`DAYS`]
/// days ending now, written as the daemon writes them.
fn seed(dir: &std::path::Path, size: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let instance = Uuid::new_v4();
    let per_day = size.div_ceil(DAYS);
    let start = Utc::now() - Days::days(DAYS as i64);
    let mut seq = 1;
    for day in 0..DAYS {
        if seq > size {
            break;
        }
        let mut file = std::io::BufWriter::new(std::fs::File::create(dir.join(format!("{seq:020}.jsonl"))).unwrap());
        let at = start + Days::days(day as i64);
        for _ in 0..per_day {
            if seq > size {
                break;
            }
            let data = EventData::Todo {
                todo_id: "1".into(),
                status: TodoStatus::Pending,
                answer: None,
                value: None,
                check: None,
                evidence: Vec::new(),
            };
            let event = ConversationEvent { seq, at, instance_id: instance, data };
            serde_json::to_writer(&mut file, &event).unwrap();
            file.write_all(b"\n").unwrap();
            seq += 1;
        }
        file.flush().unwrap();
    }
}
