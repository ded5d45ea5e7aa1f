//! Months: a home after months of use, most of its conversations ended
//! (the target: 100,000 with 95,000 ended), against a home of 10 measured
//! in the same run. The ended ones share the live ones' contacts, as a
//! contact written to every week would. Operations go over one kept-alive
//! HTTP connection, as in the scale figure.

use std::time::{Duration, Instant};

use relay::api::{Outcome, State};
use serde_json::{Value, json};

use crate::http::Http;
use crate::model::{Model, Phase};
use crate::relay::{FRESH, Relay, contact, create_body};
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

pub struct Plan {
    /// Conversations in the large home (the small one holds 10).
    pub size: usize,
    pub runs: usize,
    pub turns: usize,
}

/// Of every 100 conversations, this many have ended.
const ENDED_PERCENT: usize = 95;

struct Measured {
    size: usize,
    ended: usize,
    /// The first start, which writes the index of ended conversations
    /// from their files (a home from before the index).
    first_start: Duration,
    start: Duration,
    rss: f64,
    ops: Vec<(&'static str, Samples)>,
}

pub fn run(bin: &std::path::Path, model: &Model, plan: &Plan) -> Section {
    let small = at(bin, model, 10, plan);
    let large = at(bin, model, plan.size, plan);
    let mut section = Section::new(
        "A home after months",
        &format!(
            "A home of {} conversations, {ENDED_PERCENT}% of them ended (their contacts have a live one each), \
             against a home of {} in the same run. `relay start` is timed twice: the first start after seeding \
             writes the index of ended conversations from their files (as a home from before the index would), \
             the second reads it. {} runs per operation, {} turns. Targets: start under 1 s, RSS under 150 MB, \
             get, create and a turn within 2x of the small home, one page of the list under 10 ms.",
            large.size, small.size, plan.runs, plan.turns
        ),
        &[
            "figure",
            &format!("{} conversations", small.size),
            &format!("{} ({} ended)", large.size, large.ended),
            "ratio",
            "target",
        ],
    );
    let start = |m: &Measured| m.start.as_secs_f64() * 1e3;
    let first = |m: &Measured| m.first_start.as_secs_f64() * 1e3;
    section.row(vec![
        "`relay start`, first (index written)".into(),
        ms(first(&small)),
        ms(first(&large)),
        format!("{:.1}x", first(&large) / first(&small)),
        String::new(),
    ]);
    section.row(vec![
        "`relay start`".into(),
        ms(start(&small)),
        ms(start(&large)),
        format!("{:.1}x", start(&large) / start(&small)),
        verdict(start(&large) < 1_000.0),
    ]);
    section.row(vec![
        "RSS after start".into(),
        format!("{:.1} MiB", small.rss),
        format!("{:.1} MiB", large.rss),
        format!("{:.1}x", large.rss / small.rss),
        verdict(large.rss < 150.0),
    ]);
    for ((name, s), (_, l)) in small.ops.iter().zip(&large.ops) {
        let ratio = l.median() / s.median();
        let target = match *name {
            "list (one page)" => verdict(l.median() < 10.0),
            "get (ended)" => String::new(),
            _ => verdict(ratio <= 2.0),
        };
        section.row(vec![
            format!("{name}, median (p99)"),
            format!("{} ({})", ms(s.median()), ms(s.p99())),
            format!("{} ({})", ms(l.median()), ms(l.p99())),
            format!("{ratio:.2}x"),
            target,
        ]);
    }
    section
}

fn at(bin: &std::path::Path, model: &Model, size: usize, plan: &Plan) -> Measured {
    println!("months: {size} conversations");
    let relay = Relay::new(bin, model.base_url());
    relay.start();
    let template = relay.template(&mut relay.http(), "Chase the invoice");
    relay.stop();
    let seeded_n = size - 1;
    let ended = seeded_n * ENDED_PERCENT / 100;
    let live = seeded_n - ended;
    // The live ones first, each on its own contact; then the ended ones,
    // on those same contacts.
    let seeded = relay.seed(seeded_n, &template, |k, i| {
        if k >= live {
            i.target_contact = contact((k - live) % live.max(1));
            i.state = State::Completed;
            i.outcome = Some(Outcome::Achieved);
            i.next_heartbeat_at = None;
        }
    });
    let started = Instant::now();
    relay.start();
    let first_start = started.elapsed();
    relay.stop();
    let _ = std::process::Command::new("sync").status();
    let started = Instant::now();
    relay.start();
    let start = started.elapsed();
    let rss = relay.rss_mib();
    let mut http = relay.http();
    let runs = plan.runs;
    let (live_ids, ended_ids): (Vec<_>, Vec<_>) = seeded.iter().partition(|i| i.state == State::WaitingForReply);
    let pick = |ids: &[&relay::store::ConversationRecord], k: usize| ids[k % ids.len()].id.to_string();

    let mut k = 0;
    let get_live = Samples::time(runs, 10, || {
        k += 1;
        http.expect("GET", &format!("/instances/{}", pick(&live_ids, k)), None, 200);
    });
    let get_ended = Samples::time(runs, 10, || {
        k += 1;
        let id = if ended_ids.is_empty() { pick(&live_ids, k) } else { pick(&ended_ids, k) };
        http.expect("GET", &format!("/instances/{id}"), None, 200);
    });
    let list = Samples::time(runs, 2, || drop(http.expect("GET", "/instances", None, 200)));
    let mut turn = Vec::new();
    for k in 0..plan.turns {
        let marker = format!("months-turn-{size}-{k}");
        let contact = &live_ids[k % live_ids.len()].target_contact;
        let body = json!({"contact": contact, "text": format!("[bench:{marker}] Tuesday works")});
        let sent_at = Instant::now();
        http.expect("POST", "/sandbox/messages", Some(&body.to_string()), 200);
        turn.push(model.wait(&marker, Phase::Sent) - sent_at);
    }
    let mut create = Vec::new();
    for k in 0..runs {
        let marker = format!("months-create-{size}-{k}");
        let body = create_body(&format!("[bench:{marker}] Confirm the delivery"), &contact(FRESH + k), 86_400_000);
        let started = Instant::now();
        let created: Value = serde_json::from_str(&http.expect("POST", "/instances", Some(&body), 201)).unwrap();
        create.push(started.elapsed());
        assert!(created["id"].is_string());
        model.wait(&marker, Phase::Sent);
    }
    check_counts(&mut http, size + runs, ended);
    relay.stop();
    Measured {
        size,
        ended,
        first_start,
        start,
        rss,
        ops: vec![
            ("get (live)", get_live),
            ("get (ended)", get_ended),
            ("list (one page)", list),
            ("create", Samples::from_durations(create)),
            ("full agent turn", Samples::from_durations(turn)),
        ],
    }
}

/// The figures mean something only if the daemon holds what was seeded.
fn check_counts(http: &mut Http, total: usize, ended: usize) {
    let status: Value = serde_json::from_str(&http.expect("GET", "/status", None, 200)).unwrap();
    assert_eq!(status["total_instance_count"], total, "{status}");
    assert_eq!(status["active_instance_count"], total - ended, "{status}");
}
