//! Scale: the daemon's per-operation cost with 10, 1,000 and 10,000
//! conversations on disk, each waiting for its contact (live, with a timer
//! armed). Operations go over one kept-alive HTTP connection, so what is
//! timed is relay's work; `GET /health` on the same connection is the floor.
//! A full agent turn runs against the scripted model server.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::Http;
use crate::model::{Model, Phase};
use crate::relay::{FRESH, Relay, contact, create_body};
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

pub struct Sizes {
    pub sizes: Vec<usize>,
    pub runs: usize,
    pub turns: usize,
}

/// What one size measured, per operation.
struct AtSize {
    size: usize,
    start: Duration,
    rss_idle: f64,
    rss_after: f64,
    ops: Vec<(&'static str, Samples)>,
}

pub fn run(bin: &std::path::Path, model: &Model, plan: &Sizes) -> (Section, Section) {
    let results: Vec<AtSize> = plan.sizes.iter().map(|&size| at_size(bin, model, size, plan)).collect();
    let base = &results[0];
    let mut ops = Section::new(
        "Scale",
        &format!(
            "Per-operation latency over HTTP with N conversations on disk, all live (`WAITING_FOR_REPLY`, timer armed), \
             each on its own contact; {} runs per operation ({} for list at the largest size, {} turns). \
             A turn is a contact message (`POST /sandbox/messages`) until the model receives the result of its \
             `send_message` call, i.e. the reply was sent and recorded. Target: at {} within 2x of at {} (list, one page of 100 newest first: under 10 ms).",
            plan.runs,
            (plan.runs / 10).max(10),
            plan.turns,
            results.last().unwrap().size,
            base.size
        ),
        &["operation", "conversations", "median", "p99", "vs the same at the smallest size", "target"],
    );
    for (n, (name, _)) in base.ops.iter().enumerate() {
        for r in &results {
            let s = &r.ops[n].1;
            let ratio = s.median() / base.ops[n].1.median();
            let largest = r.size == results.last().unwrap().size;
            let target = match *name {
                "GET /health (reference)" => "reference".into(),
                // Listing everything is linear by nature: its cost per conversation is what must hold.
                "list (one page)" => {
                    let shown = r.size.min(relay::api::paging::DEFAULT_LIMIT);
                    format!("{:.1} µs per conversation shown", s.median() * 1e3 / shown as f64)
                }
                _ if largest => verdict(ratio <= 2.0),
                _ => String::new(),
            };
            ops.row(vec![
                name.to_string(),
                r.size.to_string(),
                ms(s.median()),
                ms(s.p99()),
                format!("{ratio:.2}x"),
                target,
            ]);
        }
    }
    let mut memory = Section::new(
        "Start and memory by size",
        "`relay start` with N conversations on disk (one run), and the daemon's RSS right after it and after the \
         operations above (which add conversations of their own).",
        &["conversations", "`relay start`", "RSS after start", "RSS after the operations"],
    );
    for r in &results {
        memory.row(vec![
            r.size.to_string(),
            ms(r.start.as_secs_f64() * 1e3),
            format!("{:.1} MiB", r.rss_idle),
            format!("{:.1} MiB", r.rss_after),
        ]);
    }
    (ops, memory)
}

fn at_size(bin: &std::path::Path, model: &Model, size: usize, plan: &Sizes) -> AtSize {
    println!("scale: {size} conversations");
    let relay = Relay::new(bin, model.base_url());
    relay.start();
    let template = relay.template(&mut relay.http(), "Chase the invoice");
    relay.stop();
    let seeded = relay.seed(size - 1, &template, |_, _| {});
    let started = Instant::now();
    relay.start();
    let start = started.elapsed();
    let rss_idle = relay.rss_mib();
    let mut http = relay.http();
    let runs = plan.runs;
    let id = |k: usize| seeded[k % seeded.len()].id.to_string();

    let health = Samples::time(runs, 10, || drop(http.expect("GET", "/health", None, 200)));
    let mut k = 0;
    let get = Samples::time(runs, 10, || {
        k += 1;
        http.expect("GET", &format!("/instances/{}", id(k)), None, 200);
    });
    let list_runs = if size == *plan.sizes.last().unwrap() { (runs / 10).max(10) } else { runs };
    // One page, as `relay list` asks for it (100 conversations, or all of
    // them below that).
    let list = Samples::time(list_runs, 2, || {
        let body = http.expect("GET", "/instances", None, 200);
        assert!(body.len() > size.min(relay::api::paging::DEFAULT_LIMIT) * 100);
    });
    let (mut pause, mut resume) = (Vec::new(), Vec::new());
    for k in 0..runs {
        let id = id(k);
        pause.push(timed(|| http.expect("POST", &format!("/instances/{id}/pause"), None, 200)));
        resume.push(timed(|| http.expect("POST", &format!("/instances/{id}/resume"), None, 200)));
    }
    let (mut turn, mut asked) = (Vec::new(), Vec::new());
    for k in 0..plan.turns {
        let marker = format!("turn-{size}-{k}");
        let body = json!({"contact": seeded[k % seeded.len()].target_contact, "text": format!("[bench:{marker}] Tuesday works")});
        let sent_at = Instant::now();
        http.expect("POST", "/sandbox/messages", Some(&body.to_string()), 200);
        asked.push(model.wait(&marker, Phase::Asked) - sent_at);
        turn.push(model.wait(&marker, Phase::Sent) - sent_at);
    }
    let mut create = Vec::new();
    for k in 0..runs {
        let marker = format!("create-{size}-{k}");
        let body = create_body(&format!("[bench:{marker}] Confirm the delivery"), &contact(FRESH + k), 86_400_000);
        create.push(timed(|| {
            let created: Value = serde_json::from_str(&http.expect("POST", "/instances", Some(&body), 201)).unwrap();
            assert!(created["id"].is_string());
        }));
        // Its first turn runs before the next create, so creates are timed alone.
        model.wait(&marker, Phase::Sent);
    }
    let rss_after = relay.rss_mib();
    check_all_waiting(&mut http, size + runs);
    relay.stop();
    AtSize {
        size,
        start,
        rss_idle,
        rss_after,
        ops: vec![
            ("GET /health (reference)", health),
            ("get", get),
            ("list (one page)", list),
            ("pause", Samples::from_durations(pause)),
            ("resume", Samples::from_durations(resume)),
            ("create", Samples::from_durations(create)),
            ("contact message → model request", Samples::from_durations(asked)),
            ("full agent turn", Samples::from_durations(turn)),
        ],
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> Duration {
    let started = Instant::now();
    drop(f());
    started.elapsed()
}

/// The figures mean something only if every conversation did what it
/// should: each waits for its contact (the last turn may still be closing).
fn check_all_waiting(http: &mut Http, expected: usize) {
    // Every state but waiting, as one list (pages hold 1000 at most).
    let others: Vec<&str> = relay::api::State::ALL
        .iter()
        .filter(|s| **s != relay::api::State::WaitingForReply)
        .map(|s| s.as_str())
        .collect();
    let stuck_path = format!("/instances?limit=1000&state={}", others.join(","));
    for _ in 0..1_000 {
        let status: Value = serde_json::from_str(&http.expect("GET", "/status", None, 200)).unwrap();
        assert_eq!(status["total_instance_count"], expected);
        let stuck: Vec<relay::api::ConversationInstance> =
            serde_json::from_str(&http.expect("GET", &stuck_path, None, 200)).unwrap();
        if stuck.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("some conversations never went back to waiting for their contact");
}
