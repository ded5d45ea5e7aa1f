//! The CLI leaves nothing surprising behind: `relay init` refuses a port no
//! client could reach, and `relay demo`, however it is ended (Ctrl-C, or a
//! reader that stops early, as `relay demo | head -3`), stops its daemon and
//! removes its temporary home.

use std::io::{BufRead, BufReader, Lines};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

#[test]
fn init_refuses_port_0() {
    let relay = Relay::uninitialised();
    let stderr = relay.fails(&["init", "--channel", "sandbox", "--port", "0"], 2);
    assert!(stderr.contains("--port 0") && stderr.contains("from 1 to 65535"), "{stderr}");
    let stderr = String::from_utf8_lossy(
        &relay.command(&["init", "--channel", "sandbox"]).env("RELAY_PORT", "0").output().unwrap().stderr,
    )
    .into_owned();
    assert!(stderr.contains("RELAY_PORT=0"), "{stderr}");
    assert!(!relay.path().join("config.json").exists(), "nothing written");
    // A real port is taken.
    relay.ok(&["init", "--channel", "sandbox", "--port", "4321"]);
    assert!(std::fs::read_to_string(relay.path().join("config.json")).unwrap().contains("4321"));
}

/// `relay demo` with its temporary home under `tmp`, stdout piped.
fn spawn_demo(tmp: &Path) -> (Child, Lines<BufReader<ChildStdout>>, PathBuf) {
    let mut demo = Command::new(env!("CARGO_BIN_EXE_relay"))
        .arg("demo")
        .env("TMPDIR", tmp)
        .env_remove("RELAY_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn relay demo");
    let lines = BufReader::new(demo.stdout.take().unwrap()).lines();
    let home = tmp.join(format!("relay-demo-{}-0", demo.id()));
    (demo, lines, home)
}

/// Reads the demo's output until its daemon runs (the demo creates the
/// conversation then); returns the daemon's pid.
fn until_the_daemon_runs(lines: &mut Lines<BufReader<ChildStdout>>, home: &Path) -> i32 {
    for line in lines.by_ref() {
        if line.expect("demo output").starts_with("$ relay create") {
            let pid = std::fs::read_to_string(home.join("daemon.pid")).expect("the daemon's pid file");
            return pid.trim().parse().unwrap();
        }
    }
    panic!("the demo ended before creating its conversation");
}

/// Waits for the demo to exit (killing it and failing after a generous deadline).
fn exits(mut demo: Child) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = demo.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            demo.kill().unwrap();
            panic!("the process did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` runs (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

/// The daemon goes (the demo waits for it; its parent, the demo, is gone, so
/// init reaps it) and so does the home.
fn nothing_left(daemon: i32, home: &Path) {
    let started = Instant::now();
    while alive(daemon) {
        assert!(started.elapsed() < Duration::from_secs(30), "the demo's daemon {daemon} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!home.exists(), "the demo's home {} is left behind", home.display());
}

#[test]
fn an_interrupted_demo_stops_its_daemon_and_removes_its_home() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let tmp = tempfile::tempdir().unwrap();
        let (demo, mut lines, home) = spawn_demo(tmp.path());
        let daemon = until_the_daemon_runs(&mut lines, &home);
        unsafe { libc::kill(demo.id() as i32, signal) };
        let status = exits(demo);
        // Cleaned up, then ended by the signal, as a shell expects.
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        nothing_left(daemon, &home);
    }
}

#[test]
fn a_demo_whose_reader_goes_away_stops_its_daemon_and_removes_its_home() {
    let tmp = tempfile::tempdir().unwrap();
    let (demo, mut lines, home) = spawn_demo(tmp.path());
    let daemon = until_the_daemon_runs(&mut lines, &home);
    drop(lines); // `| head`: the reader closes the pipe
    let status = exits(demo);
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
    nothing_left(daemon, &home);
}

/// A client whose reader goes away (`relay events -f | head -1`) ends
/// quietly at its next line, as SIGPIPE ends any filter, in text and in
/// JSON: relay ignores SIGPIPE itself (a socket must not kill it), so its
/// stdout is what ends it.
#[test]
fn a_follower_whose_reader_goes_away_ends_quietly() {
    let relay = Relay::started();
    relay.create(&[]);
    for json in [false, true] {
        let mut args = vec!["events", "--follow"];
        args.extend(json.then_some("--json"));
        let mut follower = relay.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
        lines.next().expect("the first event").unwrap();
        drop(lines); // `| head -1`: the reader closes the pipe
        relay.ok(&["create", "--objective", "o", "--contact", OTHER_CONTACT, "--todo", "t"]);
        let mut stderr = follower.stderr.take().unwrap();
        let status = exits(follower);
        let stderr = std::io::read_to_string(&mut stderr).unwrap();
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "json {json}: {status:?} {stderr}");
        assert_eq!(stderr, "", "json {json}");
    }
}

/// An argument error as JSON is the whole sentence: "the following required
/// arguments were not provided:" was all it said, naming none.
#[test]
fn a_missing_argument_is_named_in_json_too() {
    let relay = Relay::uninitialised();
    let stderr = relay.fails(&["--json", "sandbox", "read"], 2);
    let error: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
    let said = error["error"].as_str().unwrap();
    assert!(said.contains("not provided") && said.contains("<CONTACT>"), "{said}");
}

/// A config.json that is a link to an endless device, or a FIFO no one
/// writes, is refused at once (it took all the memory, or hung forever).
#[test]
fn a_config_that_is_not_a_file_is_refused_at_once() {
    let relay = Relay::init("sandbox");
    let config = relay.path().join("config.json");
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &config).unwrap();
    for (args, code) in [(&["start"][..], 2), (&["doctor", "--offline"][..], 1)] {
        let run = run_within(relay.command(args), Duration::from_secs(30));
        assert_eq!(run.code, code, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("is not a regular file") || run.stdout.contains("is not a regular file"),
            "{args:?}: {} {}",
            run.stdout,
            run.stderr
        );
    }
    std::fs::remove_file(&config).unwrap();
    assert_eq!(unsafe { libc::mkfifo(std::ffi::CString::new(config.to_str().unwrap()).unwrap().as_ptr(), 0o600) }, 0);
    let run = run_within(relay.command(&["doctor", "--offline"]), Duration::from_secs(30));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("is not a regular file"), "{}", run.stdout);
}

/// A wrong value in config.json is refused naming the setting, not only a
/// line and column.
#[test]
fn a_wrong_setting_is_named() {
    let relay = Relay::init("sandbox");
    relay.edit_config(|config| config["agent"]["max_rounds"] = serde_json::json!("many"));
    let stderr = relay.fails(&["start"], 2);
    assert!(stderr.contains("agent.max_rounds: invalid type"), "{stderr}");
    assert!(stderr.contains("docs/configuration.md has every setting"), "{stderr}");
}

/// A config.json that is not JSON says which file, where, and how to get
/// out: correct it there, or move it aside and let `relay init` write a
/// new one; the same words, and exit 2 (bad input), from every command
/// that reads it, and `relay doctor` gives them as its fix. The way out
/// works.
#[test]
fn a_broken_config_says_how_to_repair_it_wherever_it_is_read() {
    let relay = Relay::init("sandbox");
    let path = relay.path().join("config.json");
    // A colon lost in an edit, on line 4.
    std::fs::write(&path, "{\n  \"channel\": \"sandbox\",\n  \"courtesy\": {\n    \"quiet_hours\" \"off\"\n  }\n}\n")
        .unwrap();
    let path = path.display().to_string();
    let repair = format!(
        "correct it there, or move it aside (`mv {path} {path}.broken`) and run `relay init` to write a new one"
    );
    let broken = format!("{path} is not valid JSON: expected `:` at line 4 column 19");
    for args in [&["init", "--channel", "sandbox"][..], &["start"], &["status"], &["list"], &["daemon"]] {
        let stderr = relay.fails(args, 2);
        assert_eq!(stderr.trim(), format!("relay: {broken}; {repair}"), "{args:?}");
    }
    let error: serde_json::Value = serde_json::from_str(relay.fails(&["start", "--json"], 2).trim()).unwrap();
    assert_eq!(error["code"], "invalid_config");
    let doctor = relay.run(&["doctor", "--offline"]);
    assert_eq!(doctor.code, 1);
    let config = doctor.stdout.lines().find(|l| l.contains(" config ")).unwrap().to_string();
    assert!(config.starts_with("failed") && config.ends_with(&format!("{broken}; fix: {repair}")), "{config}");

    std::fs::rename(&path, format!("{path}.broken")).unwrap();
    relay.ok(&["init", "--channel", "sandbox"]);
    relay.ok(&["start"]);
}
