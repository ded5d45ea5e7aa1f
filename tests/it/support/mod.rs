//! Runs the real `relay` binary against a temporary RELAY_HOME and a free
//! port, as a user would. Waiting is done by asking the daemon (no fixed sleeps).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod browser;
pub mod channel;
pub mod contract;
pub mod engine;
pub mod hostile;
pub mod invariants;
pub mod media;
pub mod model;
pub mod test_agent;
pub mod webhook_receiver;

pub const CONTACT: &str = "+56912345678";
pub const OTHER_CONTACT: &str = "+447911123456";

pub struct Relay {
    pub home: tempfile::TempDir,
    pub port: u16,
}

/// Runs `command` to its end, or kills it and fails once `deadline` has
/// passed: a command that should answer must not hang the suite.
pub fn run_within(mut command: Command, deadline: Duration) -> Run {
    use std::process::Stdio;
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > deadline {
            child.kill().unwrap();
            let run = Run::from(child.wait_with_output().unwrap());
            panic!("{command:?} still ran after {deadline:?}: {}{}", run.stdout, run.stderr);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

impl From<Output> for Run {
    fn from(Output { status, stdout, stderr }: Output) -> Run {
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Relay {
    /// A fresh home initialised on the sandbox channel (daemon not started).
    pub fn sandbox() -> Relay {
        Relay::init("sandbox")
    }

    /// A fresh home initialised on `channel`, with what depends on the hour
    /// or on how many numbers a test writes to turned off (quiet hours, the
    /// daily cap), and no disclosure line before first messages: tests of
    /// those set them themselves.
    pub fn init(channel: &str) -> Relay {
        let relay = Relay::uninitialised();
        relay.ok(&["init", "--channel", channel]);
        relay.edit_config(|config| {
            config["courtesy"]["quiet_hours"] = "off".into();
            config["courtesy"]["max_new_contacts_per_day"] = 0.into();
            config["courtesy"]["disclosure"] = "off".into();
        });
        relay
    }

    pub fn uninitialised() -> Relay {
        Relay { home: tempfile::tempdir().expect("temp home"), port: free_port() }
    }

    /// A fresh sandbox home with the daemon running.
    pub fn started() -> Relay {
        let relay = Relay::sandbox();
        relay.ok(&["start"]);
        relay
    }

    pub fn path(&self) -> &Path {
        self.home.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_relay"));
        command
            .args(args)
            .env("RELAY_HOME", self.path())
            .env("RELAY_PORT", self.port.to_string())
            .env_remove("RELAY_LOG");
        command
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.command(args).output().expect("run relay").into()
    }

    /// Runs and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        if run.code != 0 {
            // The daemon's own account, in case it is what failed.
            let log = std::fs::read_to_string(self.path().join("relay.log")).unwrap_or_default();
            let tail = log.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>();
            panic!(
                "relay {args:?} failed ({}): {}{}\nrelay.log ends with:\n{}",
                run.code,
                run.stdout,
                run.stderr,
                tail.join("\n")
            );
        }
        run.stdout
    }

    /// Runs with --json and expects success and exactly one JSON document.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        let out = self.ok(&args);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("relay {args:?} printed no single JSON document ({e}): {out}"))
    }

    /// Runs and expects failure with `code`; returns stderr.
    pub fn fails(&self, args: &[&str], code: i32) -> String {
        let run = self.run(args);
        assert_eq!(
            run.code, code,
            "relay {args:?}: expected exit {code}, got {}: {}{}",
            run.code, run.stdout, run.stderr
        );
        run.stderr
    }

    pub fn create(&self, extra: &[&str]) -> String {
        let mut args = vec![
            "create",
            "--objective",
            "Confirm the delivery date",
            "--contact",
            CONTACT,
            "--todo",
            "Ask which day suits",
        ];
        args.extend_from_slice(extra);
        self.ok(&args).trim().to_string()
    }

    pub fn get(&self, id: &str) -> Value {
        self.json(&["get", id])
    }

    /// The home's record of conversation `id` (`instances/<id>.json` and
    /// its log): the instance and relay's bookkeeping, which the API does
    /// not show.
    pub fn record(&self, id: &str) -> Value {
        let (status, body) = self.http("GET", &format!("/instances/{id}"), &[], None);
        assert_eq!(status, 200, "{body}");
        let instance: Value = serde_json::from_str(&body).unwrap();
        let full = instance["id"].as_str().unwrap();
        let record = relay::store::record_file::load(&self.path().join("instances").join(format!("{full}.json")));
        serde_json::to_value(record.unwrap()).unwrap()
    }

    pub fn state(&self, id: &str) -> String {
        self.get(id)["state"].as_str().unwrap().to_string()
    }

    /// Every conversation, as the daemon lists them (over HTTP: cheaper than the CLI).
    pub fn instances(&self) -> Vec<relay::api::ConversationInstance> {
        let (status, body) = self.http("GET", "/instances?limit=1000", &[], None);
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    pub fn transcript(&self, id: &str) -> Vec<Value> {
        self.json(&["transcript", id]).as_array().unwrap().clone()
    }

    /// Changes config.json as a person editing it would.
    pub fn edit_config(&self, edit: impl FnOnce(&mut Value)) {
        let path = self.path().join("config.json");
        let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut config);
        std::fs::write(&path, config.to_string()).unwrap();
    }

    pub fn token(&self) -> String {
        std::fs::read_to_string(self.path().join("api-token")).expect("token file").trim().to_string()
    }

    pub fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.path().join("daemon.pid")).ok()?.trim().parse().ok()
    }

    /// Asks the daemon (over HTTP, cheaper than the CLI) until `done` holds
    /// for the instance, or panics after 10 s with what it last saw.
    pub fn wait_for(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self.http("GET", &format!("/instances/{id}"), &[], None);
            assert_eq!(status, 200, "{body}");
            let instance: Value = serde_json::from_str(&body).unwrap();
            if done(&instance) {
                return instance;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "timed out waiting for {what}: {instance:#}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn wait_for_state(&self, id: &str, state: &str) -> Value {
        self.wait_for(id, state, |i| i["state"] == state)
    }

    /// Asks the daemon until `n` waits (`GET /instances/{id}/wait`) are
    /// under way in it: so a change made next cannot slip in before them,
    /// and so a test sees a wait freed.
    pub fn until_waiting(&self, n: u64) {
        let started = Instant::now();
        loop {
            let (_, body) = self.http("GET", "/status", &[], None);
            let status: Value = serde_json::from_str(&body).unwrap();
            if status["waiting_requests"] == n {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "never {n} waiters: {status:#}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// One authorised request without a body; returns (status, headers with
    /// their names in lower case, body).
    pub fn http_with_headers(&self, method: &str, path: &str) -> (u16, Vec<(String, String)>, String) {
        let token = format!("Bearer {}", self.token());
        let host = format!("127.0.0.1:{}", self.port);
        let headers = [("Host", host.as_str()), ("Authorization", token.as_str())];
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to daemon");
        exchange_with_headers(stream, method, path, &headers, b"")
    }

    /// One authorised JSON request.
    pub fn http(&self, method: &str, path: &str, extra_headers: &[(&str, &str)], body: Option<&str>) -> (u16, String) {
        let token = format!("Bearer {}", self.token());
        let host = format!("127.0.0.1:{}", self.port);
        let mut headers = vec![("Host", host.as_str()), ("Authorization", token.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        for (name, value) in extra_headers {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            headers.push((name, value));
        }
        raw_http(self.port, method, path, &headers, body.unwrap_or("").as_bytes())
    }

    /// Whether process `pid` still runs (a zombie waiting for a parent that
    /// does not reap it counts as gone).
    pub fn daemon_alive(&self, pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Sends `headers` exactly as given (no Host added) and returns (status, body),
/// the answer checked against the document ([`contract::check`]).
pub fn raw_http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to daemon");
    exchange(stream, method, path, headers, body)
}

/// As [`raw_http`], with the answer's headers (names in lower case).
pub fn raw_http_with_headers(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<(String, String)>, String) {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to daemon");
    exchange_with_headers(stream, method, path, headers, body)
}

/// As [`raw_http`], but a daemon that is not there (or dies mid-request)
/// gives status 0 instead of a panic.
pub fn try_http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    match TcpStream::connect(("127.0.0.1", port)) {
        Ok(stream) => exchange(stream, method, path, headers, body),
        Err(_) => (0, String::new()),
    }
}

fn exchange(stream: TcpStream, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let (status, _, body) = exchange_with_headers(stream, method, path, headers, body);
    (status, body)
}

fn exchange_with_headers(
    mut stream: TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<(String, String)>, String) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return (0, Vec::new(), String::new());
    }
    // The daemon may refuse before reading a large body; that is fine.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let body = dechunk(body);
    contract::check(method, path, status, &headers, body.as_bytes());
    (status, headers, body)
}

/// Undoes chunked transfer encoding if the body looks chunked.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    loop {
        let Some((size, after)) = rest.split_once("\r\n") else { return body.to_string() };
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { return body.to_string() };
        if size == 0 {
            return out;
        }
        if after.len() < size {
            return body.to_string();
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn history_triggers(instance: &Value) -> Vec<String> {
    instance["history"].as_array().unwrap().iter().map(|t| t["trigger"].as_str().unwrap().to_string()).collect()
}

pub fn file_mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Makes `command` run as if by a user who cannot write what is read-only:
/// root ignores file modes (CAP_DAC_OVERRIDE), so when the tests run as root
/// the child loses that power (and CAP_DAC_READ_SEARCH) before it starts.
/// A plain user needs nothing.
pub fn without_root_file_powers(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: prctl is async-signal-safe; it only narrows this child's
        // capability bounding set, which exec then applies to root.
        unsafe {
            command.pre_exec(|| {
                for capability in [1, 2] {
                    // CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
                    if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
    command
}

/// Sets the mode of `dir` and of every file directly in it (not below).
pub fn chmod_home(dir: &Path, dir_mode: u32, file_mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(file_mode)).unwrap();
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(dir_mode)).unwrap();
}

impl Relay {
    /// Waits (up to 60 s, then panics) until no process holds the home's
    /// daemon lock, by trying to take it. A killed daemon's main thread is a
    /// zombie (gone, for `daemon_alive`) before its last thread has exited and
    /// let go of the lock: what a restart needs is the lock.
    pub fn wait_until_lock_free(&self) {
        let path = self.path().join("daemon.lock");
        let started = Instant::now();
        loop {
            let free = match std::fs::File::open(&path) {
                Ok(file) => file.try_lock().is_ok(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                Err(e) => panic!("cannot open {}: {e}", path.display()),
            };
            if free {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "the daemon lock was still held after 60 s");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// The subcommands `relay --help` lists (its "Commands:" section).
pub fn subcommands(relay: &Relay) -> Vec<String> {
    let help = relay.ok(&["--help"]);
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// A folder of scenario files for `relay eval --scenarios`, one per
/// (name, text).
pub fn scenarios(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap();
    }
    dir
}
