//! Heartbeat accuracy: N conversations whose follow-up timers all fall due
//! within the same minute. Lateness is when the engine fired a heartbeat
//! (its `heartbeat_fires` history entry) minus when it was due. Every fire
//! starts a follow-up turn against the scripted model server, so the timers
//! fire under the load they cause. Also the daemon's memory with N live
//! conversations, idle and at the peak of the storm.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::model::{Model, Phase};
use crate::relay::Relay;
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

const WINDOW: Duration = Duration::from_secs(60);

/// How long after the last follow-up the daemon's memory is read again.
pub const AFTER: Duration = Duration::from_secs(35);

pub fn run(bin: &std::path::Path, model: &Model, n: usize) -> (Section, Vec<String>) {
    println!("heartbeats: {n} conversations due within {WINDOW:?}");
    let relay = Relay::new(bin, model.base_url());
    relay.start();
    let rss_empty = relay.rss_mib();
    let template = relay.template(&mut relay.http(), "[bench:hb] Chase the invoice");
    relay.stop();
    model.drain();
    // Far enough ahead for the seeding and the start, whatever the size.
    let lead = Duration::from_secs(10) + Duration::from_micros(n as u64 * 1_000);
    let first = Utc::now() + lead;
    let mut due = HashMap::new();
    relay.seed(n, &template, |k, copy| {
        let at = first + WINDOW.mul_f64(k as f64 / n as f64);
        copy.next_heartbeat_at = Some(at);
        due.insert(copy.id, at);
    });
    relay.start();
    assert!(Utc::now() < first, "the daemon started after the first timer was due: raise the lead");
    let rss_idle = relay.rss_mib();

    let began = Instant::now();
    let (mut done, mut rss_peak) = (0, rss_idle);
    while done < n && began.elapsed() < lead + WINDOW + Duration::from_secs(240) {
        done += model.count("hb", Phase::Sent, n - done, Duration::from_secs(1));
        rss_peak = rss_peak.max(relay.rss_mib());
    }
    let storm = began.elapsed();
    assert_eq!(done, n, "only {done} of {n} follow-ups reached the model");
    // What the daemon gives back once the follow-ups are out: their turns
    // end, and the heap is trimmed (every 30 s, `daemon::memory`).
    std::thread::sleep(AFTER);
    let rss_end = relay.rss_mib();
    relay.stop();
    // The reference for what is left: the same conversations (a follow-up
    // longer each) read by a fresh daemon, so only their live data.
    relay.start();
    let rss_restarted = relay.rss_mib();
    // And once one of them has had a turn, read as the storm's figure is
    // (after a trim): what the first model call loads for good (rig-core's
    // model catalog, the HTTP client) is not the storm's.
    let contact = relay.store().load_instances().unwrap()[0].target_contact.clone();
    let said = serde_json::json!({"contact": contact, "text": "[bench:hb-one] Tuesday works"});
    relay.http().expect("POST", "/sandbox/messages", Some(&said.to_string()), 200);
    model.wait("hb-one", Phase::Sent);
    std::thread::sleep(AFTER);
    let rss_one_turn = relay.rss_mib();
    relay.stop();

    let instances = relay.store().load_instances().unwrap();
    let lateness: Vec<f64> = instances
        .iter()
        .filter_map(|i| {
            let due = due.get(&i.id)?;
            let fired = i.history.iter().find(|e| e.trigger == "heartbeat_fires").expect("a heartbeat fired");
            Some((fired.timestamp - *due).num_microseconds().unwrap() as f64 / 1e3)
        })
        .collect();
    assert_eq!(lateness.len(), n);
    let s = Samples::from_ms(lateness);
    let mut section = Section::new(
        "Heartbeat accuracy",
        &format!(
            "{n} conversations whose timers fall due evenly within one minute; each fire runs a follow-up turn \
             (scripted model, sandbox send). All {n} follow-ups were sent {:.0} s after the daemon started. \
             Lateness = the `heartbeat_fires` history entry minus the due time. Target: p99 < 1 s.",
            storm.as_secs_f64()
        ),
        &["conversations", "p50", "p99", "max", "earliest", "target"],
    );
    section.row(vec![n.to_string(), ms(s.median()), ms(s.p99()), ms(s.max()), ms(s.min()), verdict(s.p99() < 1_000.0)]);
    let memory = vec![
        format!("{:.1} MiB", rss_empty),
        format!("{:.1} MiB", rss_idle),
        format!("{:.1} MiB", rss_peak),
        format!("{:.1} MiB", rss_end),
        format!("{:.1} MiB", rss_restarted),
        format!("{:.1} MiB", rss_one_turn),
    ];
    (section, memory)
}
