//! The daemon's life: start, status, stop, signals, stale files, port
//! conflicts, and the errors of a CLI without a daemon.

use crate::support::*;
use serde_json::Value;

#[test]
fn commands_without_a_daemon_say_to_run_relay_start() {
    let relay = Relay::sandbox();
    for args in [vec!["list"], vec!["status"], vec!["get", "12345678"], vec!["send", "12345678", "hi"]] {
        let stderr = relay.fails(&args, 3);
        assert!(stderr.contains("run `relay start`"), "{args:?}: {stderr}");
    }
    // With --json the error is one JSON document on stderr.
    let run = relay.run(&["status", "--json"]);
    assert_eq!(run.code, 3);
    let error: Value = serde_json::from_str(run.stderr.trim()).unwrap();
    assert_eq!(error["code"], "daemon_not_running");
    assert!(run.stdout.is_empty());
}

#[test]
fn commands_before_init_say_to_run_relay_init() {
    let relay = Relay::uninitialised();
    assert!(relay.fails(&["start"], 6).contains("relay init"));
    assert!(relay.fails(&["list"], 6).contains("relay init"));
}

#[test]
fn init_creates_an_owner_only_home_and_is_repeatable() {
    let relay = Relay::uninitialised();
    let done = relay.json(&["init", "--channel", "sandbox"]);
    assert_eq!(done["channel"], "sandbox");
    assert_eq!(done["created"], true);
    assert_eq!(file_mode(relay.path()), 0o700);
    assert_eq!(file_mode(&relay.path().join("config.json")), 0o600);
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(relay.path().join("config.json")).unwrap()).unwrap();
    assert_eq!(config["channel"], "sandbox");
    // Again, without flags: keeps the channel.
    let again = relay.json(&["init"]);
    assert_eq!(again["channel"], "sandbox");
    assert_eq!(again["created"], false);
}

#[test]
fn start_status_stop() {
    let relay = Relay::sandbox();
    let started = relay.json(&["start"]);
    let pid = started["pid"].as_i64().unwrap() as i32;
    assert_eq!(started["port"], relay.port);
    assert_eq!(started["already_running"], false);
    assert_eq!(relay.pid(), Some(pid));

    let status = relay.json(&["status"]);
    assert_eq!(status["pid"], pid);
    assert!(status["uptime_seconds"].is_u64());
    assert_eq!(status["whatsapp_connected"], false);
    assert_eq!(status["channel"]["kind"], "sandbox");
    assert_eq!(status["channel"]["connected"], true);
    assert_eq!(status["active_instance_count"], 0);
    assert_eq!(status["total_instance_count"], 0);
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert!(status["model"].is_null());

    // Every file relay keeps is owner-only.
    for file in ["api-token", "config.json", "daemon.pid", "daemon.port", "daemon.lock", "relay.log", "daemon.stderr"] {
        assert_eq!(file_mode(&relay.path().join(file)), 0o600, "{file}");
    }

    // Starting again says so and succeeds.
    let again = relay.json(&["start"]);
    assert_eq!(again["already_running"], true);
    assert_eq!(again["pid"], pid);
    assert!(relay.ok(&["start"]).contains("already running"));

    let stopped = relay.json(&["stop"]);
    assert_eq!(stopped["pid"], pid);
    // `stop` returns once the process is gone and has cleaned up after itself.
    assert!(!relay.daemon_alive(pid));
    assert!(!relay.path().join("daemon.pid").exists());
    assert!(!relay.path().join("api-token").exists());
    assert!(relay.ok(&["stop"]).contains("not running"));
    relay.fails(&["status"], 3);
}

#[test]
fn a_stale_pid_file_is_cleaned_up() {
    let relay = Relay::sandbox();
    std::fs::write(relay.path().join("daemon.pid"), "999999\n").unwrap();
    let run = relay.run(&["start"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("stale pid file"), "{}", run.stderr);
    assert_ne!(relay.pid(), Some(999999));
    relay.ok(&["status"]);
}

#[test]
fn a_port_taken_by_another_program_is_a_clear_error() {
    let relay = Relay::sandbox();
    let _squatter = std::net::TcpListener::bind(("127.0.0.1", relay.port)).unwrap();
    let stderr = relay.fails(&["start"], 1);
    assert!(stderr.contains(&format!("port {} on 127.0.0.1 is already in use", relay.port)), "{stderr}");
    assert!(relay.pid().is_none());
}

#[test]
fn a_second_daemon_on_the_same_home_refuses_to_start() {
    let relay = Relay::started();
    let other_port = free_port().to_string();
    let run = relay.command(&["daemon", "--port", &other_port]).output().unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("already running"));
    relay.ok(&["status"]);
}

#[test]
fn sigterm_stops_the_daemon_gracefully() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let relay = Relay::started();
        let pid = relay.pid().unwrap();
        unsafe { libc::kill(pid, signal) };
        // The same clean-up as `relay stop`: wait until the lock is free.
        let done = std::time::Instant::now();
        while relay.path().join("daemon.pid").exists() || relay.daemon_alive(pid) {
            assert!(done.elapsed().as_secs() < 10, "daemon did not stop on signal {signal}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(relay.ok(&["stop"]).contains("not running"));
    }
}

#[test]
fn health_needs_no_token_and_names_the_pid() {
    let relay = Relay::started();
    let host = format!("127.0.0.1:{}", relay.port);
    let (status, body) = raw_http(relay.port, "GET", "/health", &[("Host", &host)], b"");
    assert_eq!(status, 200);
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["pid"], relay.pid().unwrap());
}

#[test]
fn the_log_is_written_and_never_holds_message_text_at_info() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.ok(&["send", &id, "secret-text-for-the-contact"]);
    relay.ok(&["sandbox", "say", CONTACT, "secret-reply-from-the-contact"]);
    let token = relay.token();
    relay.ok(&["stop"]);
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    assert!(log.contains("daemon started") && log.contains("transition"), "{log}");
    assert!(!log.contains("secret-"), "message bodies must stay out of the log at info: {log}");
    assert!(!log.contains(&token), "the API token must never be logged");
}

#[test]
fn a_damaged_config_is_named_and_not_mistaken_for_a_missing_one() {
    let relay = Relay::sandbox();
    std::fs::write(relay.path().join("config.json"), "{\"channel\": \"sandbox\", \"chanel\": 1}").unwrap();
    let run = relay.run(&["start", "--json"]);
    assert_eq!(run.code, 2);
    let error: Value = serde_json::from_str(run.stderr.trim()).unwrap();
    assert_eq!(error["code"], "invalid_config");
    assert!(error["error"].as_str().unwrap().contains("chanel"), "{error}");
    // A setting that would make every turn fail is refused with its name.
    std::fs::write(relay.path().join("config.json"), r#"{"channel": "sandbox", "agent": {"max_rounds": 0}}"#).unwrap();
    assert!(relay.fails(&["start"], 2).contains("agent.max_rounds must be at least 1"));
}

#[test]
fn a_daemon_that_fails_to_start_names_the_file_and_leaves_no_token() {
    let relay = Relay::sandbox();
    std::fs::create_dir_all(relay.path().join("instances")).unwrap();
    let damaged = relay.path().join("instances/0badf00d-0000-4000-8000-000000000000.json");
    std::fs::write(&damaged, "{\"id\": ").unwrap();
    let stderr = relay.fails(&["start"], 1);
    assert!(stderr.contains("0badf00d-0000-4000-8000-000000000000.json") && stderr.contains("damaged"), "{stderr}");
    for leftover in ["api-token", "daemon.pid", "daemon.port"] {
        assert!(!relay.path().join(leftover).exists(), "{leftover} left behind");
    }
}

#[test]
fn start_with_another_port_finds_the_running_daemon() {
    let relay = Relay::started();
    let other = free_port().to_string();
    let started = std::time::Instant::now();
    let again = relay.json(&["start", "--port", &other]);
    assert_eq!(again["already_running"], true);
    assert_eq!(again["port"], relay.port);
    assert!(started.elapsed().as_secs() < 5);
}

/// What a daemon killed a moment ago leaves: its pid file (a pid now gone)
/// and its port file, and its lock still held, because a killed process lets
/// go of its files only when its last thread has exited, which under load can
/// be seconds after its main thread is a zombie. Here the test holds the lock
/// for it, and serves the dead daemon's port just long enough to see `relay
/// start` probe it.
struct DyingDaemon {
    lock: Option<std::fs::File>,
    port_listener: std::net::TcpListener,
}

impl DyingDaemon {
    fn leave_in(relay: &Relay) -> DyingDaemon {
        let port_listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = port_listener.local_addr().unwrap().port();
        std::fs::write(relay.path().join("daemon.pid"), "999999\n").unwrap();
        std::fs::write(relay.path().join("daemon.port"), format!("{port}\n")).unwrap();
        std::fs::write(relay.path().join("api-token"), "relay_stale").unwrap();
        let lock = std::fs::File::create(relay.path().join("daemon.lock")).unwrap();
        lock.try_lock().unwrap();
        DyingDaemon { lock: Some(lock), port_listener }
    }

    /// Returns once `relay start` has dialled the dead daemon's port, that is,
    /// once it has found the lock held.
    fn probed(&self) {
        self.port_listener.set_nonblocking(true).unwrap();
        let started = std::time::Instant::now();
        loop {
            match self.port_listener.accept() {
                Ok(_) => return,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(started.elapsed().as_secs() < 60, "relay start never looked at the port");
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// The last thread exits: the lock is released and the port is closed.
    fn gone(mut self) {
        self.lock.take();
    }
}

#[test]
fn start_waits_for_a_killed_daemon_to_let_go_of_its_lock_then_starts() {
    let relay = Relay::sandbox();
    let dying = DyingDaemon::leave_in(&relay);
    let start = {
        let command = relay.command(&["start", "--json"]);
        std::thread::spawn(move || {
            let mut command = command;
            command.output().unwrap()
        })
    };
    dying.probed();
    dying.gone();
    let run = start.join().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "relay start: {stdout}{stderr}");
    let started: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(started["already_running"], false, "{started}");
    assert_eq!(started["port"], relay.port);
    assert_ne!(started["pid"], 999999);
    // And status agrees: a daemon answers.
    assert_eq!(relay.json(&["status"])["pid"], started["pid"]);
}

#[test]
fn start_names_what_holds_the_lock_when_it_never_lets_go() {
    let relay = Relay::sandbox();
    let _dying = DyingDaemon::leave_in(&relay);
    let stderr = relay.fails(&["start"], 1);
    // The holder is this test process.
    let me = format!("pid {} (", std::process::id());
    assert!(stderr.contains(&me) && stderr.contains("holds this relay home's lock"), "{stderr}");
    assert!(stderr.contains(&format!("kill -9 {}", std::process::id())), "{stderr}");
}

#[test]
fn a_running_daemon_is_found_without_config_json() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    // Mid-edit, broken, or gone: the daemon has read it already.
    for config in [Some("{\"channel\": \"sandb"), Some("not json at all"), None] {
        match config {
            Some(text) => std::fs::write(relay.path().join("config.json"), text).unwrap(),
            None => std::fs::remove_file(relay.path().join("config.json")).unwrap(),
        }
        let listed = relay.json(&["list"]);
        assert_eq!(listed[0]["id"], id.as_str(), "{config:?}");
        assert_eq!(relay.json(&["status"])["pid"], relay.pid().unwrap());
        assert_eq!(relay.json(&["start"])["already_running"], true);
        // Without RELAY_PORT too: the port file says where it runs.
        let run = relay.command(&["get", &id, "--json"]).env_remove("RELAY_PORT").output().unwrap();
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    }
    relay.ok(&["stop"]);
    // Stopped, a broken config matters again (to the next start).
    std::fs::write(relay.path().join("config.json"), "not json at all").unwrap();
    relay.fails(&["start"], 2);
}

#[test]
fn a_wrong_port_while_a_daemon_runs_names_the_right_one() {
    let relay = Relay::started();
    let wrong = free_port();
    let run = relay.command(&["status"]).env("RELAY_PORT", wrong.to_string()).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    let said = format!("relay is running on port {}, not {wrong} (RELAY_PORT)", relay.port);
    assert!(stderr.contains(&said), "{stderr}");
    let flag = relay.fails(&["list", "--port", &wrong.to_string()], 2);
    assert!(flag.contains(&format!("relay is running on port {}, not {wrong} (--port)", relay.port)), "{flag}");
    // `start` with the same wrong port does not contradict it: it names the
    // running daemon and its port.
    let run = relay.command(&["start", "--json"]).env("RELAY_PORT", wrong.to_string()).output().unwrap();
    let started: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(started["already_running"], true);
    assert_eq!(started["port"], relay.port);
}

#[test]
fn stop_on_a_home_it_cannot_write_stops_the_daemon() {
    let relay = Relay::started();
    let pid = relay.pid().unwrap();
    // The home and its files read-only for whoever runs `relay stop`.
    chmod_home(relay.path(), 0o500, 0o400);
    let run = without_root_file_powers(&mut relay.command(&["stop", "--json"])).output().unwrap();
    chmod_home(relay.path(), 0o700, 0o600);
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "{stdout}{stderr}");
    let stopped: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(stopped["was_running"], true, "{stopped}");
    assert_eq!(stopped["pid"], pid);
    assert!(!relay.daemon_alive(pid));
}

#[test]
fn stop_that_cannot_read_the_lock_says_so_and_not_that_relay_is_stopped() {
    let relay = Relay::started();
    std::fs::set_permissions(relay.path().join("daemon.lock"), std::os::unix::fs::PermissionsExt::from_mode(0o000))
        .unwrap();
    let run = without_root_file_powers(&mut relay.command(&["stop"])).output().unwrap();
    std::fs::set_permissions(relay.path().join("daemon.lock"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot tell whether relay is running") && stderr.contains("daemon.lock"), "{stderr}");
    relay.ok(&["status"]);
}

#[test]
fn linking_without_reaching_whatsapp_shows_each_attempt_and_gives_up() {
    let closed = free_port();
    let refused = format!("ws://127.0.0.1:{closed}/ws");
    // A name that never resolves (RFC 2606), wherever the test runs.
    let unresolvable = "ws://relay-link-test.invalid/ws";
    for (url, cause) in [
        (refused.as_str(), format!("127.0.0.1:{closed} refused the connection")),
        (unresolvable, "cannot resolve relay-link-test.invalid".into()),
    ] {
        let relay = Relay::uninitialised();
        // Long enough for a first attempt on a busy machine (a resolver
        // can take seconds to say a name does not exist).
        let mut command = relay.command(&["init", "--channel", "whatsapp", "--link", "--timeout", "15s"]);
        command.env("RELAY_WHATSAPP_URL", url);
        let run = run_within(command, std::time::Duration::from_secs(60));
        assert_eq!(run.code, 1, "{url}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains(&format!("Attempt 1 to reach WhatsApp failed: {cause}")), "{url}: {}", run.stdout);
        assert!(run.stderr.contains("cannot reach WhatsApp: gave up after 15s"), "{url}: {}", run.stderr);
        assert!(run.stderr.contains(&cause), "{url}: the last cause is named: {}", run.stderr);
        // It let go of the home: a start now is not told relay is running.
        assert!(!relay.path().join("daemon.pid").exists());
    }
}

#[test]
fn linking_through_a_daemon_that_cannot_reach_whatsapp_gives_up() {
    let relay = Relay::init("whatsapp");
    let refused = format!("ws://127.0.0.1:{}/ws", free_port());
    let mut start = relay.command(&["start"]);
    start.env("RELAY_WHATSAPP_URL", &refused);
    assert!(start.status().unwrap().success());
    let run = run_within(relay.command(&["init", "--link", "--timeout", "3s"]), std::time::Duration::from_secs(60));
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("the daemon did not reach WhatsApp within 3s"), "{}", run.stderr);
    relay.ok(&["status"]);
}
