//! CLI round trip: `relay list --json` and `relay get ID --json` against a
//! running daemon, next to `curl` on the same route with the same token (the
//! floor for any one-request CLI) and a Node script doing one `fetch` (the
//! floor for the seeds' TypeScript design). The commands take turns, so
//! noise falls on all of them alike.

use std::process::Command;
use std::time::Instant;

use crate::relay::{Relay, quiet};
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

/// One way to ask the daemon for a route.
struct Contender {
    name: String,
    command: Command,
    samples: Vec<f64>,
}

pub fn run(relay: &Relay, id: &str, runs: usize) -> Section {
    let mut section = Section::new(
        "CLI round trip",
        &format!(
            "Wall time from spawning the process to its exit, {runs} runs each, interleaved; a daemon holding 10 conversations. \
             Target: relay ≤ 1.3x curl."
        ),
        &["route", "command", "median", "p99", "vs curl (median)", "target"],
    );
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    for (route, args) in
        [("GET /instances", vec!["list", "--json"]), ("GET /instances/{id}", vec!["get", id, "--json"])]
    {
        let path = if args[0] == "list" { "/instances".to_string() } else { format!("/instances/{id}") };
        let url = format!("http://127.0.0.1:{}{path}", relay.port);
        let mut contenders = vec![
            Contender {
                name: format!("relay {}", args.join(" ").replace(id, "ID")),
                command: quiet(relay.command(&args)),
                samples: vec![],
            },
            Contender { name: "curl".into(), command: curl(&url, &relay.token()), samples: vec![] },
        ];
        if node {
            contenders.push(Contender {
                name: "node 20 fetch".into(),
                command: node_fetch(&url, &relay.token()),
                samples: vec![],
            });
        }
        for round in 0..runs + 3 {
            for c in &mut contenders {
                let started = Instant::now();
                let status = c.command.status().expect("spawn");
                let took = started.elapsed().as_secs_f64() * 1e3;
                assert!(status.success(), "{} failed", c.name);
                // The first rounds warm the page cache and the daemon.
                if round >= 3 {
                    c.samples.push(took);
                }
            }
        }
        let curl_median = Samples::from_ms(contenders[1].samples.clone()).median();
        for c in contenders {
            let s = Samples::from_ms(c.samples);
            let ratio = s.median() / curl_median;
            let target = if c.name.starts_with("relay") { verdict(ratio <= 1.3) } else { "reference".into() };
            section.row(vec![
                route.into(),
                format!("`{}`", c.name),
                ms(s.median()),
                ms(s.p99()),
                format!("{ratio:.2}x"),
                target,
            ]);
        }
    }
    section
}

fn curl(url: &str, token: &str) -> Command {
    let mut command = Command::new("curl");
    command.args(["-sf", "-o", "/dev/null", "-H", &format!("Authorization: Bearer {token}"), url]);
    quiet(command)
}

fn node_fetch(url: &str, token: &str) -> Command {
    let mut command = Command::new("node");
    command
        .args([
            "-e",
            "fetch(process.env.URL, {headers: {authorization: 'Bearer ' + process.env.TOKEN}})\
             .then(r => r.text()).then(t => process.stdout.write(t))",
        ])
        .env("URL", url)
        .env("TOKEN", token);
    quiet(command)
}
