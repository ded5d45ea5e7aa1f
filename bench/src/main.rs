//! relay-bench: measures relay against its anchors and writes the figures
//! into docs/benchmarks.md (between its markers; the prose around them is
//! written by hand).
//!
//! ```text
//! cargo run --release -p relay-bench            # full run, ~10 minutes
//! cargo run --release -p relay-bench -- --quick # small sizes, ~2 minutes
//! ```
//!
//! Options: `--quick`, `--out PATH` (default: the workspace's
//! docs/benchmarks.md), `--print` (write nothing). It uses the release
//! `relay` binary next to itself, building it first when run by cargo.
//!
//! One module per figure under `figures/`; each returns its table.

mod figures;
mod http;
mod model;
mod relay;
mod report;
mod stats;

use std::path::{Path, PathBuf};
use std::process::Command;

use figures::{catchup, cli, connections, heartbeat, months, overhead, scale, start};
use report::Section;

struct Plan {
    mode: &'static str,
    cli_runs: usize,
    start_runs: usize,
    scale: scale::Sizes,
    heartbeats: usize,
    overhead_runs: usize,
    months: months::Plan,
    /// Idle connections in the storm.
    storm: usize,
    /// Events in the large log.
    events: u64,
}

impl Plan {
    fn full() -> Plan {
        Plan {
            mode: "full",
            cli_runs: 200,
            start_runs: 30,
            scale: scale::Sizes { sizes: vec![10, 1_000, 10_000], runs: 200, turns: 100 },
            heartbeats: 10_000,
            overhead_runs: 500,
            months: months::Plan { size: 100_000, runs: 200, turns: 100 },
            // The machine's file limit is 20,000: what is left after the bench's own.
            storm: 19_000,
            events: 1_000_000,
        }
    }

    fn quick() -> Plan {
        Plan {
            mode: "quick (small sizes; the figures in the docs come from a full run)",
            cli_runs: 40,
            start_runs: 10,
            scale: scale::Sizes { sizes: vec![10, 100, 1_000], runs: 50, turns: 30 },
            heartbeats: 1_000,
            overhead_runs: 100,
            months: months::Plan { size: 2_000, runs: 50, turns: 20 },
            storm: 2_000,
            events: 50_000,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let mut plan = Plan::full();
    let mut out = Some(workspace.join("docs/benchmarks.md"));
    let mut only: Option<Vec<String>> = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--quick" => plan = Plan::quick(),
            "--print" => out = None,
            "--out" => out = Some(PathBuf::from(rest.next().expect("--out needs a path"))),
            "--only" => {
                let names = rest.next().expect("--only needs figure names");
                only = Some(names.split(',').map(str::to_string).collect());
                out = None;
            }
            "-h" | "--help" => {
                println!(
                    "relay-bench [--quick] [--out PATH | --print] [--only cli,start,scale,heartbeat,overhead,months,connections,catchup]: \
                     measures relay, writes docs/benchmarks.md (not with --only)"
                );
                return;
            }
            other => {
                eprintln!("relay-bench: unknown argument {other:?} (try --help)");
                std::process::exit(2);
            }
        }
    }
    let bin = relay_binary(&workspace);
    let model = model::Model::start();

    // Each figure starts on a quiet disk: the writeback of the one before
    // (10,000 seeded files) would otherwise land in its fsyncs.
    let runs = |name: &str| {
        let wanted = only.as_ref().is_none_or(|o| o.iter().any(|n| n == name));
        if wanted {
            let _ = Command::new("sync").status();
        }
        wanted
    };
    let mut sections: Vec<Section> = Vec::new();
    if runs("cli") || runs("start") {
        let relay = relay::Relay::new(&bin, model.base_url());
        relay.start();
        let template = relay.template(&mut relay.http(), "Chase the invoice");
        relay.stop();
        relay.seed(9, &template, |_, _| {});
        relay.start();
        if runs("cli") {
            println!("CLI round trip");
            sections.push(cli::run(&relay, &template.0.id.to_string(), plan.cli_runs));
        }
        relay.stop();
        if runs("start") {
            println!("daemon start");
            sections.push(start::run(&relay, plan.start_runs));
        }
    }
    let mut by_size = None;
    if runs("scale") {
        let (ops, memory) = scale::run(&bin, &model, &plan.scale);
        sections.push(ops);
        by_size = Some(memory);
    }
    let mut memory = None;
    if runs("heartbeat") {
        let (accuracy, rss) = heartbeat::run(&bin, &model, plan.heartbeats);
        sections.push(accuracy);
        memory = Some(rss);
    }
    if runs("overhead") {
        sections.push(overhead::run(plan.overhead_runs));
    }
    if runs("months") {
        sections.push(months::run(&bin, &model, &plan.months));
    }
    if runs("connections") {
        sections.push(connections::run(&bin, &model, plan.storm, plan.months.runs));
    }
    if runs("catchup") {
        sections.push(catchup::run(&bin, &model, plan.events, plan.months.runs));
    }
    sections.extend(by_size);
    if let Some(memory) = memory {
        sections.push(memory_section(plan.heartbeats, memory));
    }

    let generated = report::render(plan.mode, &sections);
    match out {
        None => println!("{generated}"),
        Some(path) => {
            let existing = std::fs::read_to_string(&path).unwrap_or_default();
            std::fs::write(&path, report::splice(&existing, &generated)).expect("write the report");
            println!("wrote {}", path.display());
        }
    }
}

fn memory_section(n: usize, memory: Vec<String>) -> Section {
    let mut rss =
        Section::new("Memory", "The daemon's resident set (VmRSS) on the sandbox channel.", &["daemon", "RSS"]);
    let labels = [
        "idle, no conversations".to_string(),
        format!("{n} live conversations, idle"),
        format!("peak while all {n} follow up within a minute"),
        format!("{} s after those {n} follow-ups", heartbeat::AFTER.as_secs()),
        format!("the same {n} conversations, on a fresh start (reference: their live data)"),
        format!(
            "that fresh daemon, {} s after one of them had a turn (reference: live data and what a first turn loads once)",
            heartbeat::AFTER.as_secs()
        ),
    ];
    for (label, value) in labels.into_iter().zip(memory) {
        rss.row(vec![label, value]);
    }
    rss
}

/// The release `relay` next to this binary; under cargo, built first so it is never stale.
fn relay_binary(workspace: &Path) -> PathBuf {
    if let Ok(cargo) = std::env::var("CARGO") {
        let status = Command::new(cargo)
            // The same packages as `cargo run -p relay-bench`, so the same
            // features: a build of relay alone would compile everything again.
            .args(["build", "--release", "--workspace", "--bins"])
            .current_dir(workspace)
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo build --release --bin relay failed");
    }
    let bin = std::env::current_exe().unwrap().with_file_name("relay");
    assert!(bin.exists(), "{} is missing: run `cargo build --release --bin relay` first", bin.display());
    bin
}
