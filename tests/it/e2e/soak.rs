//! Soak (opt-in): 1,000 conversations with short heartbeats run for ten
//! minutes against the real binary (sandbox channel, scripted model), with
//! contacts replying now and then. The daemon's RSS and open file
//! descriptors are sampled throughout and must stay flat; at the end every
//! conversation must keep the invariants (support/invariants.rs).
//!
//! ```text
//! cargo test --release --test it soak:: -- --ignored --nocapture
//! RELAY_SOAK_SECS=60 RELAY_SOAK_CONVERSATIONS=200 cargo test --release --test it soak:: -- --ignored --nocapture
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::invariants;
use crate::support::model::{sends_each_turn, use_model};
use crate::support::*;
use relay::scripted_model::ScriptedModel;
use serde_json::{Value, json};

#[test]
#[ignore = "ten minutes; run it with --ignored (see the file header)"]
fn a_thousand_conversations_for_ten_minutes_keep_memory_and_descriptors_flat() {
    let secs: u64 = std::env::var("RELAY_SOAK_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(600);
    let count: usize = std::env::var("RELAY_SOAK_CONVERSATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);

    // Every turn: one message, then wait for the contact.
    let turns = Arc::new(AtomicUsize::new(0));
    let counted = turns.clone();
    let model = ScriptedModel::start_on_thread(sends_each_turn(move |_| {
        format!("Any news? ({})", counted.fetch_add(1, Ordering::Relaxed))
    }));
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"reply_window_ms": 100}));
    relay.ok(&["start"]);
    let pid = relay.pid().unwrap();

    let contact = |n: usize| format!("+1415555{:04}", n % 10_000);
    for n in 0..count {
        let body = json!({"objective": "Chase the invoice", "target_contact": contact(n),
            "todos": [{"text": "Get a payment date"}],
            // Follow-ups every 5 to 15 s, enough of them to last the run.
            "heartbeat_config": {"interval_ms": 5_000 + (n as u64 % 11) * 1_000, "max_followups": 100}})
        .to_string();
        let (status, answer) = relay.http("POST", "/instances", &[], Some(&body));
        assert_eq!(status, 201, "{answer}");
    }
    let start = sample(pid);
    // What relay holds in memory by design: every conversation (as in its
    // instance file) and, on the sandbox channel, the outbox.
    let stored = |relay: &Relay| {
        let outbox = std::fs::metadata(relay.path().join("sandbox-outbox.jsonl")).map_or(0, |m| m.len());
        (dir_bytes(&relay.path().join("instances")) + outbox) as f64 / (1024.0 * 1024.0)
    };
    let stored_at_start = stored(&relay);
    eprintln!("soak: {count} conversations created; at start {start}, kept data {stored_at_start:.1} MiB");

    let began = Instant::now();
    let mut replies = 0;
    let mut n = 0;
    let mut samples = vec![start];
    while began.elapsed() < Duration::from_secs(secs) {
        // A contact writes back about every 50 ms.
        let body = json!({"contact": contact(n * 7919 % count), "text": "still checking"}).to_string();
        let (status, _) = relay.http("POST", "/sandbox/messages", &[], Some(&body));
        assert_eq!(status, 200);
        replies += 1;
        n += 1;
        std::thread::sleep(Duration::from_millis(50));
        if n % 600 == 0 {
            let now = sample(pid);
            eprintln!(
                "soak: {:>4}s {now}, {} turns, kept data {:.1} MiB",
                began.elapsed().as_secs(),
                turns.load(Ordering::Relaxed),
                stored(&relay)
            );
            samples.push(now);
        }
    }
    let end = sample(pid);
    let status: Value = relay.json(&["status"]);
    let stored_at_end = stored(&relay);
    eprintln!(
        "soak: after {secs}s: {} model turns, {replies} contact messages, {} conversations live; \
         at end {end}, kept data {stored_at_end:.1} MiB",
        turns.load(Ordering::Relaxed),
        status["active_instance_count"]
    );
    assert!(relay.daemon_alive(pid));
    // All it went through kept every conversation valid.
    let records = relay::store::Store::open(&relay::home::Home::at(relay.path())).unwrap().load_instances().unwrap();
    invariants::Looks::default().check(relay.path(), records, "at the end of the soak");
    // At most agent.max_concurrent_model_calls (16) pooled connections to the model, and a few more.
    assert!(end.fds <= start.fds + 16 + 8, "descriptors grew: {start} -> {end}");
    // What may grow is what relay keeps by design: every conversation's
    // history, in memory as on disk, and the sandbox's outbox. Anything
    // beyond twice the growth of those files is a leak.
    let grown_mib = (end.rss_kib as f64 - start.rss_kib as f64) / 1024.0;
    let allowed_mib = 2.0 * (stored_at_end - stored_at_start) + 16.0;
    assert!(grown_mib <= allowed_mib, "memory grew {grown_mib:.1} MiB (allowed {allowed_mib:.1}): {start} -> {end}");
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum()
}

#[derive(Clone, Copy)]
struct Sample {
    rss_kib: u64,
    fds: usize,
}

impl std::fmt::Display for Sample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RSS {:.1} MiB, {} open descriptors", self.rss_kib as f64 / 1024.0, self.fds)
    }
}

fn sample(pid: i32) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    Sample { rss_kib, fds }
}
