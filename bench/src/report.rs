//! The report: the machine it ran on, then one table per figure. It
//! replaces the generated part of docs/benchmarks.md (between the markers)
//! and leaves the hand-written analysis around it alone.

use std::fmt::Write as _;
use std::process::Command;

pub const BEGIN: &str = "<!-- relay-bench: begin (generated, do not edit) -->";
pub const END: &str = "<!-- relay-bench: end -->";

/// One figure's table, with a line on how it was measured.
pub struct Section {
    pub title: String,
    pub how: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Section {
    pub fn new(title: &str, how: &str, header: &[&str]) -> Section {
        Section {
            title: title.into(),
            how: how.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        println!("  {}", cells.join(" | "));
        self.rows.push(cells);
    }

    fn markdown(&self, out: &mut String) {
        let _ = writeln!(out, "### {}\n\n{}\n", self.title, self.how);
        let _ = writeln!(out, "| {} |", self.header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(self.header.len()));
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out.push('\n');
    }
}

/// "met", or "missed" with the figure: a target in words.
pub fn verdict(met: bool) -> String {
    if met { "met".into() } else { "**missed**".into() }
}

pub fn render(mode: &str, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}\n");
    let _ = writeln!(out, "## Last run\n");
    let _ = writeln!(out, "- date: {}", chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"));
    let _ = writeln!(out, "- mode: {mode}");
    let _ = writeln!(out, "- machine: {}", machine());
    let _ = writeln!(out, "- relay: {}", command("git", &["describe", "--always", "--dirty"]));
    let _ = writeln!(out, "- toolchain: {}", command("rustc", &["--version"]));
    let _ = writeln!(out, "- references: {}", references());
    out.push('\n');
    for section in sections {
        section.markdown(&mut out);
    }
    let _ = writeln!(out, "{END}");
    out
}

/// Puts `generated` between the markers of `existing` (or appends it).
pub fn splice(existing: &str, generated: &str) -> String {
    match (existing.find(BEGIN), existing.find(END)) {
        (Some(begin), Some(end)) if begin < end => {
            format!("{}{}{}", &existing[..begin], generated.trim_end(), &existing[end + END.len()..])
        }
        _ => format!("{}\n{}", existing.trim_end(), generated),
    }
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cpu}, {cores} cores, {mem_gib:.0} GiB, Linux {}", kernel.trim())
}

fn references() -> String {
    let curl = command("curl", &["--version"]);
    let curl = curl.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    let node = command("node", &["--version"]);
    format!("{curl}, node {node}")
}

fn command(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_string())
        .unwrap_or_else(|| "not found".into())
}
