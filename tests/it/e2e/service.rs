//! `relay service` on the real binary, with the user's folders (HOME,
//! XDG_CONFIG_HOME) in a temporary directory and no service manager to
//! reach (XDG_RUNTIME_DIR empty, no session bus), as on this machine and
//! in CI: the unit it writes, install twice, uninstall, status, doctor,
//! `relay start`/`stop` falling back, and wrong input. The same under a
//! real user systemd: `service_systemd.rs`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::support::*;

/// A user's folders, temporary: where the unit goes, and a runtime folder
/// with no manager in it.
pub struct User {
    pub dir: tempfile::TempDir,
}

impl User {
    pub fn new() -> User {
        let user = User { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir(user.runtime()).unwrap();
        user
    }

    fn runtime(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    pub fn units(&self) -> PathBuf {
        self.dir.path().join("config/systemd/user")
    }

    /// `relay ARGS` for `relay`'s home, as this user.
    pub fn command(&self, relay: &Relay, args: &[&str]) -> Command {
        let mut command = relay.command(args);
        command
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_RUNTIME_DIR", self.runtime())
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
        command
    }

    pub fn run(&self, relay: &Relay, args: &[&str]) -> Run {
        self.command(relay, args).output().unwrap().into()
    }

    /// Runs and expects exit `code`.
    pub fn expect(&self, relay: &Relay, args: &[&str], code: i32) -> Run {
        let run = self.run(relay, args);
        assert_eq!(run.code, code, "relay {args:?}: {}{}", run.stdout, run.stderr);
        run
    }

    pub fn json(&self, relay: &Relay, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let run = self.expect(relay, &all, 0);
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", run.stdout))
    }
}

/// `systemctl` is there to enable a unit by its files.
fn has_systemctl() -> bool {
    Command::new("systemctl").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn unit_of(user: &User, relay: &Relay) -> (String, PathBuf) {
    let status = user.json(relay, &["service", "status"]);
    let name = status["name"].as_str().unwrap().to_string();
    let path = PathBuf::from(status["path"].as_str().unwrap());
    assert_eq!(path, user.units().join(&name), "{status:#}");
    (name, path)
}

#[test]
fn install_writes_a_unit_that_runs_this_relay_for_this_home() {
    let (user, relay) = (User::new(), Relay::sandbox());
    let (name, path) = unit_of(&user, &relay);
    assert!(name.starts_with("relay-") && name.ends_with(".service"), "{name}");
    let run = user.expect(&relay, &["service", "install"], 0);
    assert!(run.stdout.contains(&format!("Wrote {}", path.display())), "{}", run.stdout);
    // No manager here: it says what it could not do and how to start the daemon.
    assert!(run.stderr.contains("no systemd user manager could be reached"), "{}", run.stderr);
    assert!(run.stderr.contains("`relay start`"), "{}", run.stderr);
    let unit = std::fs::read_to_string(&path).unwrap();
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_relay")).unwrap();
    assert!(unit.contains(&format!("\nExecStart=\"{}\" daemon\n", exe.display())), "{unit}");
    assert!(unit.contains(&format!("\nEnvironment=\"RELAY_HOME={}\"\n", relay.path().display())), "{unit}");
    assert!(unit.contains("\nRestart=on-failure\n") && unit.contains("\nRestartPreventExitStatus=2 6\n"), "{unit}");
    if has_systemctl() {
        // Enabled by its files: the manager starts it when it next starts.
        assert!(user.units().join("default.target.wants").join(&name).exists());
        assert!(run.stderr.contains("the unit is enabled"), "{}", run.stderr);
    }
    // Nothing was started.
    assert!(relay.pid().is_none());
}

#[test]
fn the_default_home_gets_relay_service() {
    let user = User::new();
    let relay = Relay::uninitialised();
    let default_home = user.dir.path().join(".relay-agent");
    let as_user = |args: &[&str]| {
        let mut command = user.command(&relay, args);
        command.env_remove("RELAY_HOME");
        Run::from(command.output().unwrap())
    };
    assert_eq!(as_user(&["init", "--channel", "sandbox"]).code, 0);
    let run = as_user(&["service", "install"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let unit = std::fs::read_to_string(user.units().join("relay.service")).unwrap();
    assert!(unit.contains(&format!("\nEnvironment=\"RELAY_HOME={}\"\n", default_home.display())), "{unit}");
}

#[test]
fn install_twice_changes_nothing_and_says_so_and_a_changed_file_is_rewritten() {
    let (user, relay) = (User::new(), Relay::sandbox());
    let (_, path) = unit_of(&user, &relay);
    assert_eq!(user.json(&relay, &["service", "install"])["written"], true);
    let written = std::fs::read_to_string(&path).unwrap();
    let again = user.expect(&relay, &["service", "install"], 0);
    assert!(again.stdout.contains("Already installed, unchanged"), "{}", again.stdout);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    // A file of another relay (a binary moved): status and doctor say so, install rewrites it.
    std::fs::write(&path, written.replace("ExecStart=\"/", "ExecStart=\"/old")).unwrap();
    assert_eq!(user.json(&relay, &["service", "status"])["current"], false);
    let doctor = user.json_doctor(&relay);
    assert!(service_check(&doctor)["detail"].as_str().unwrap().contains("is not what this relay"), "{doctor:#}");
    assert_eq!(user.json(&relay, &["service", "install"])["written"], true);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    assert_eq!(user.json(&relay, &["service", "status"])["current"], true);
}

#[test]
fn uninstall_removes_it_and_again_says_there_is_nothing_to_remove() {
    let (user, relay) = (User::new(), Relay::sandbox());
    let (name, path) = unit_of(&user, &relay);
    user.expect(&relay, &["service", "install"], 0);
    let run = user.expect(&relay, &["service", "uninstall"], 0);
    assert!(run.stdout.contains(&format!("Removed {}", path.display())), "{}", run.stdout);
    assert!(!path.exists() && !user.units().join("default.target.wants").join(&name).exists());
    let again = user.expect(&relay, &["service", "uninstall"], 0);
    assert!(
        again.stdout.contains("No relay service is installed for this home: nothing to remove"),
        "{}",
        again.stdout
    );
    assert_eq!(user.json(&relay, &["service", "uninstall"])["was_installed"], false);
}

#[test]
fn status_reports_the_file_and_what_could_be_learnt() {
    let (user, relay) = (User::new(), Relay::sandbox());
    let before = user.json(&relay, &["service", "status"]);
    assert_eq!((before["installed"].clone(), before["manager"].clone()), (false.into(), "systemd".into()));
    let text = user.expect(&relay, &["service", "status"], 0).stdout;
    assert!(text.contains("installed  no: `relay service install`"), "{text}");
    user.expect(&relay, &["service", "install"], 0);
    let after = user.json(&relay, &["service", "status"]);
    assert_eq!(after["installed"], true, "{after:#}");
    assert_eq!(after["home"], relay.path().display().to_string());
    assert!(after["unreachable"].as_str().unwrap().contains("Failed to connect to bus") || !has_systemctl());
    if has_systemctl() {
        assert_eq!(after["enabled"], true, "{after:#}");
    }
    let text = user.expect(&relay, &["service", "status"], 0).stdout;
    for line in ["installed  yes", "state      unknown: the service manager cannot be reached", "file       "] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
}

impl User {
    fn json_doctor(&self, relay: &Relay) -> Value {
        let run = self.run(relay, &["doctor", "--offline", "--json"]);
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr))
    }
}

pub fn service_check(report: &Value) -> &Value {
    report["checks"].as_array().unwrap().iter().find(|c| c["name"] == "service").expect("a service check")
}

#[test]
fn doctor_shows_whether_the_service_is_installed_and_whether_its_manager_answers() {
    let (user, relay) = (User::new(), Relay::sandbox());
    let none = user.json_doctor(&relay);
    let check = service_check(&none);
    assert_eq!(check["status"], "ok", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("not installed"), "{check}");
    user.expect(&relay, &["service", "install"], 0);
    let installed = user.json_doctor(&relay);
    let check = service_check(&installed);
    assert_eq!(check["status"], "warning", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("cannot be reached"), "{check}");
    assert!(check["fix"].as_str().unwrap().contains("relay start"), "{check}");
    let text = user.run(&relay, &["doctor", "--offline"]).stdout;
    assert!(text.lines().any(|l| l.starts_with("warning  service ")), "{text}");
}

#[test]
fn start_and_stop_say_they_go_without_a_manager_they_cannot_reach() {
    let (user, relay) = (User::new(), Relay::sandbox());
    user.expect(&relay, &["service", "install"], 0);
    let started = user.expect(&relay, &["start"], 0);
    assert!(started.stderr.contains("its manager cannot be reached") && started.stderr.contains("without it"));
    assert!(started.stdout.starts_with("relay started (pid"), "{}", started.stdout);
    // One daemon: a second start finds it.
    assert!(user.expect(&relay, &["start"], 0).stdout.contains("already running"));
    let stopped = user.expect(&relay, &["stop"], 0);
    assert!(stopped.stderr.contains("stopping the daemon without it"), "{}", stopped.stderr);
    assert!(stopped.stdout.starts_with("relay stopped (pid"), "{}", stopped.stdout);
    assert!(relay.pid().is_none());
}

#[test]
fn install_leaves_a_running_daemon_alone_when_no_manager_can_take_over() {
    // The daemon `relay start` started keeps running: stopping it would leave none.
    let (user, relay) = (User::new(), Relay::sandbox());
    relay.ok(&["start"]);
    let pid = relay.pid().unwrap();
    user.expect(&relay, &["service", "install"], 0);
    assert_eq!(relay.pid(), Some(pid));
    relay.ok(&["stop"]);
}

#[test]
fn wrong_input_is_refused_with_what_to_do() {
    let (user, relay) = (User::new(), Relay::uninitialised());
    let unknown = user.expect(&relay, &["service", "frob"], 2);
    assert!(unknown.stderr.contains("unrecognized subcommand 'frob'"), "{}", unknown.stderr);
    let bare = user.expect(&relay, &["service"], 2);
    assert!(bare.stderr.contains("install, uninstall, status"), "{}", bare.stderr);
    // A home not initialised: no unit for a daemon that could not start.
    let not_init = user.expect(&relay, &["service", "install"], 6);
    assert!(not_init.stderr.contains("relay init"), "{}", not_init.stderr);
    assert!(!user.units().exists(), "a unit was written for a home not initialised");
    // A config.json the daemon would refuse.
    relay.ok(&["init", "--channel", "sandbox"]);
    std::fs::write(relay.path().join("config.json"), "{ not json").unwrap();
    let broken = user.expect(&relay, &["service", "install"], 2);
    assert!(broken.stderr.contains("config.json"), "{}", broken.stderr);
    assert!(!user.units().exists());
}

/// The exit codes the unit does not restart on are the daemon's own for
/// what a restart cannot fix.
#[test]
fn the_daemon_exits_2_on_a_config_it_cannot_use_and_6_on_a_home_not_initialised() {
    let relay = Relay::uninitialised();
    let run = run_within(relay.command(&["daemon"]), std::time::Duration::from_secs(20));
    assert_eq!(run.code, 6, "{}", run.stderr);
    relay.ok(&["init", "--channel", "sandbox"]);
    std::fs::write(relay.path().join("config.json"), "{ not json").unwrap();
    let run = run_within(relay.command(&["daemon"]), std::time::Duration::from_secs(20));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(relay::service::NO_RESTART_EXIT_CODES, [2, 6]);
}
