//! relay's unit under a real systemd user manager, where one is reachable
//! from the test's environment (a desktop session, or `scripts/user-systemd`,
//! which makes a throwaway one in a private mount namespace: CI runs this
//! test so). Where none is, the test says why on stderr and passes.
//!
//! On a machine whose own user manager answers, this installs a unit named
//! for a temporary home into that user's unit folder, runs it, and
//! uninstalls it at the end, even when an assertion fails.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::service::service_check;
use crate::support::*;

fn no_manager() -> Option<String> {
    match Command::new("systemctl").args(["--user", "show-environment"]).output() {
        Ok(output) if output.status.success() => None,
        Ok(output) => Some(String::from_utf8_lossy(&output.stderr).trim().to_string()),
        Err(e) => Some(format!("systemctl: {e}")),
    }
}

/// `systemctl --user show UNIT -p PROPERTY`'s value.
fn property(unit: &str, name: &str) -> String {
    let output = Command::new("systemctl").args(["--user", "show", unit, "-p", name, "--value"]).output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Waits up to `within` for `done`, or fails saying `what`.
fn until(what: &str, within: Duration, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < within, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Uninstalls the unit however the test ends.
struct Installed<'a>(&'a Relay);

impl Drop for Installed<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["service", "uninstall"]);
    }
}

#[test]
fn service_under_a_real_user_systemd_restarts_a_crash_and_not_a_bad_config() {
    if let Some(why) = no_manager() {
        eprintln!(
            "skipped: no systemd user manager is reachable ({why}); `scripts/user-systemd cargo test --test it service_under_a_real_user_systemd` runs this test with one"
        );
        return;
    }
    let relay = Relay::sandbox();
    let unit = relay.json(&["service", "status"])["name"].as_str().unwrap().to_string();
    let _installed = Installed(&relay);
    let pid = installed_and_running(&relay, &unit);
    let pid = restarted_after_a_crash(&relay, &unit, pid);
    stopped_and_started_through_systemd(&relay, &unit, pid);
    not_restarted_on_a_config_it_cannot_use(&relay, &unit);
    let removed = relay.json(&["service", "uninstall"]);
    assert!(removed["stopped_pid"].is_u64(), "{removed:#}");
    assert!(relay.pid().is_none());
    assert_eq!(property(&unit, "LoadState"), "not-found");
}

/// Installed: the daemon `relay start` had started makes way, systemd runs
/// the daemon the unit names, for this home, and `relay start` finds it
/// rather than starting a second. Returns its pid.
fn installed_and_running(relay: &Relay, unit: &str) -> u64 {
    let before = relay.json(&["start"])["pid"].as_u64().unwrap();
    let installed = relay.json(&["service", "install"]);
    assert_eq!((installed["enabled"].clone(), installed["running"].clone()), (true.into(), true.into()));
    let pid = installed["pid"].as_u64().unwrap();
    assert_ne!(pid, before, "{installed:#}");
    assert!(!relay.daemon_alive(before as i32), "the first daemon still runs");
    assert_eq!(property(unit, "MainPID"), pid.to_string());
    assert_eq!(property(unit, "UnitFileState"), "enabled");
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_relay")).unwrap();
    assert!(property(unit, "ExecStart").contains(&format!("path={} ;", exe.display())));
    assert_eq!(property(unit, "Environment"), format!("RELAY_HOME={}", relay.path().display()));
    assert_eq!(relay.json(&["status"])["pid"], pid);
    let again = relay.json(&["start"]);
    assert_eq!((again["already_running"].clone(), again["pid"].clone()), (true.into(), pid.into()));
    let status = relay.json(&["service", "status"]);
    assert_eq!(status["observed"]["state"], "active", "{status:#}");
    let doctor: Value = serde_json::from_str(&relay.run(&["doctor", "--offline", "--json"]).stdout).unwrap();
    assert_ne!(service_check(&doctor)["status"], "failed", "{doctor:#}");
    pid
}

/// Killed: systemd starts it again after RestartSec. Returns the new pid.
fn restarted_after_a_crash(relay: &Relay, unit: &str, pid: u64) -> u64 {
    let killed = Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(killed.success());
    until("the restart after SIGKILL", Duration::from_secs(40), || {
        relay.pid().is_some_and(|p| p as u64 != pid) && property(unit, "ActiveState") == "active"
    });
    let new = relay.pid().unwrap() as u64;
    until("the new daemon to answer", Duration::from_secs(15), || relay.run(&["status", "--json"]).code == 0);
    new
}

/// `relay stop` goes through systemd, which leaves it stopped; `relay
/// start` goes through it too.
fn stopped_and_started_through_systemd(relay: &Relay, unit: &str, pid: u64) {
    let stopped = relay.json(&["stop"]);
    assert_eq!((stopped["service"].as_str(), stopped["pid"].as_u64()), (Some(unit), Some(pid)), "{stopped:#}");
    assert_eq!(property(unit, "ActiveState"), "inactive");
    assert!(relay.pid().is_none());
    let started = relay.json(&["start"]);
    assert_eq!(started["service"], unit, "{started:#}");
    assert_eq!(property(unit, "MainPID"), started["pid"].to_string());
}

/// A config.json the daemon cannot use: it exits 2, and systemd leaves it
/// failed rather than starting it again; doctor says so; fixed, `relay
/// start` clears the failure.
fn not_restarted_on_a_config_it_cannot_use(relay: &Relay, unit: &str) {
    relay.ok(&["stop"]);
    let config = relay.path().join("config.json");
    let good = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, "{ not json").unwrap();
    let started = Command::new("systemctl").args(["--user", "start", unit]).status().unwrap();
    assert!(started.success());
    until("the unit to fail", Duration::from_secs(15), || property(unit, "ActiveState") == "failed");
    assert_eq!((property(unit, "Result"), property(unit, "ExecMainStatus")), ("exit-code".into(), "2".into()));
    // Failed, not waiting to restart: RestartPreventExitStatus held.
    assert_eq!(property(unit, "SubState"), "failed");
    let doctor: Value = serde_json::from_str(&relay.run(&["doctor", "--offline", "--json"]).stdout).unwrap();
    let check = service_check(&doctor);
    assert_eq!(check["status"], "failed", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("exited with status 2"), "{check}");
    assert!(check["fix"].as_str().unwrap().contains("journalctl --user -u"), "{check}");
    std::fs::write(&config, good).unwrap();
    let again = relay.json(&["start"]);
    assert_eq!(again["service"], unit, "{again:#}");
}
