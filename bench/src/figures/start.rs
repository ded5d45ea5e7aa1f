//! Daemon start to ready: `relay start` returning (it spawns the daemon and
//! returns once the daemon answers), sandbox channel, next to `relay
//! --version` (one exec of the same binary: the floor of any relay command).

use std::time::Instant;

use crate::relay::{Relay, quiet};
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

pub fn run(relay: &Relay, runs: usize) -> Section {
    let mut section = Section::new(
        "Daemon start to ready",
        &format!(
            "`relay start` from spawn to exit, which is when the daemon answers `/health`; then `relay stop` (not timed). \
             {runs} runs on a sandbox home holding 10 conversations. Target ≤ 100 ms. Start with 10,000 conversations on disk is in the scale table."
        ),
        &["command", "median", "p99", "target"],
    );
    let mut starts = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        relay.start();
        starts.push(started.elapsed());
        relay.stop();
    }
    let starts = Samples::from_durations(starts);
    let mut version = quiet(relay.command(&["--version"]));
    let floor = Samples::time(runs, 3, || assert!(version.status().unwrap().success()));
    section.row(vec!["`relay start`".into(), ms(starts.median()), ms(starts.p99()), verdict(starts.median() <= 100.0)]);
    section.row(vec!["`relay --version` (reference)".into(), ms(floor.median()), ms(floor.p99()), "reference".into()]);
    section
}
