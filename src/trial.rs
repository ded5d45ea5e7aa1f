//! A relay of its own for one trial run, on this machine: a temporary home
//! with the sandbox channel, the real daemon (this binary) in a process group
//! of its own, a client for it, and cleanup that happens however the run
//! ends. `relay demo` runs one conversation in it; `relay eval` one per
//! scenario.
//!
//! A module of its own rather than a part of `relay eval`'s: the demo runs
//! on it too, and is no evaluation. It knows nothing of the command line:
//! it handles the process (signals, a closed stdout), and its callers print.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::api::ErrorCode;
use crate::client::{Client, Error};
use crate::config::{ChannelKind, Config};
use crate::home::{Home, daemon_files};

/// Runs `run` against a fresh relay whose config is `config` (its channel
/// and port are set here), then stops the daemon and removes the home.
/// Ctrl-C, `kill` and a closed stdout are caught: the daemon is stopped and
/// the home removed first, then the process ends as the signal would have.
pub async fn with_relay<T>(
    name: &str,
    mut config: Config,
    run: impl AsyncFnOnce(&Relay) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut signals = Signals::new().map_err(|e| fail(name, "catch signals", &e))?;
    let root = std::env::temp_dir().join(format!("relay-{name}-{}-{}", std::process::id(), unique()));
    let home = Home::at(&root);
    home.create().map_err(|e| fail(name, "create its home", &e))?;
    let mut daemon = None;
    let ended = tokio::select! {
        result = async {
            let relay = start(name, &home, &mut config, &mut daemon).await?;
            run(&relay).await
        } => match result {
            Err(error) if error.code == ErrorCode::ReaderGone => Ended::Signal(libc::SIGPIPE),
            result => Ended::Finished(result),
        },
        signal = signals.next() => Ended::Signal(signal),
    };
    if let Some(daemon) = daemon {
        daemon.stop().await;
    }
    let _ = std::fs::remove_dir_all(&root);
    match ended {
        Ended::Finished(result) => result,
        // Cleaned up: now end as the signal would have.
        Ended::Signal(signal) => die_of(signal),
    }
}

use crate::sys::die_of;

/// Ends the process as SIGPIPE would when whoever read stdout has gone (a
/// closed pipe), found without writing: `--json` writes only at the end,
/// and a run must not go on calling a paid model for no one.
pub fn stop_if_stdout_closed() {
    if crate::sys::stdout_reader_gone() {
        die_of(libc::SIGPIPE);
    }
}

/// For output written after the trial: a reader gone ends the process as
/// SIGPIPE would end any filter.
pub fn quiet_if_reader_gone(result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(error) if error.code == ErrorCode::ReaderGone => die_of(libc::SIGPIPE),
        other => other,
    }
}

/// The running trial relay.
pub struct Relay {
    pub home: Home,
    pub client: Client,
    pub started: Instant,
}

fn fail(name: &str, what: &str, e: &dyn std::fmt::Display) -> Error {
    Error::new(ErrorCode::Failure, format!("{name}: cannot {what}: {e}"))
}

/// Distinguishes the homes of one process's trials (eval runs several).
fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

async fn start(name: &str, home: &Home, config: &mut Config, slot: &mut Option<Daemon>) -> Result<Relay, Error> {
    config.channel = ChannelKind::Sandbox;
    config.save(&home.config_file()).map_err(|e| fail(name, "write its config", &e))?;
    let exe = std::env::current_exe().map_err(|e| fail(name, "find the relay binary", &e))?;
    let mut command = tokio::process::Command::new(exe);
    // Should this process die without cleaning up (SIGKILL), the daemon
    // is told to stop rather than left running on its own.
    crate::sys::stop_with_parent(&mut command);
    let child = command
        // Its stderr is the user's terminal: errors only, the log stays in its home.
        // Any free port: one found free here could be taken before the
        // daemon binds it (by another trial, or a connection's own port).
        .args(["daemon", "--quiet", "--any-port"])
        .env("RELAY_HOME", home.root())
        .env_remove("RELAY_PORT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(name, "start the daemon", &e))?;
    let daemon = slot.insert(Daemon { child, home: home.clone(), port: None });
    let started = Instant::now();
    // The home's port file, written once its daemon holds the home's lock
    // and listens, says where it is.
    let port = loop {
        let listening = daemon_files::is_locked(home).then(|| daemon_files::read_port(home)).flatten();
        if let Some(port) = listening
            && Client::on_port(port).health().await.is_ok()
        {
            break port;
        }
        if started.elapsed() > Duration::from_secs(30) || daemon.child.try_wait().ok().flatten().is_some() {
            return Err(Error::new(ErrorCode::Failure, format!("{name}: the daemon did not start")));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    daemon.port = Some(port);
    let client = Client::new(home, Some(port))?;
    Ok(Relay { home: home.clone(), client, started })
}

enum Ended<T> {
    Finished(Result<T, Error>),
    Signal(libc::c_int),
}

/// SIGINT, SIGTERM and SIGHUP, caught for the trial's whole life.
struct Signals(Vec<(libc::c_int, tokio::signal::unix::Signal)>);

impl Signals {
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            (libc::SIGINT, SignalKind::interrupt()),
            (libc::SIGTERM, SignalKind::terminate()),
            (libc::SIGHUP, SignalKind::hangup()),
        ];
        kinds.into_iter().map(|(number, kind)| Ok((number, signal(kind)?))).collect::<std::io::Result<_>>().map(Signals)
    }

    /// The next of them to arrive.
    async fn next(&mut self) -> libc::c_int {
        let arrivals = self.0.iter_mut().map(|(number, signal)| {
            Box::pin(async move {
                signal.recv().await;
                *number
            })
        });
        futures_util::future::select_all(arrivals).await.0
    }
}

/// The trial's daemon, a child process in a process group of its own: a
/// Ctrl-C reaches the trial alone, which stops the daemon in order.
struct Daemon {
    child: tokio::process::Child,
    home: Home,
    /// Where it listens, once it says.
    port: Option<u16>,
}

impl Daemon {
    /// Asks the daemon to stop and waits for it (killing it if it does not
    /// stop, or cannot be asked), so that its home can go.
    async fn stop(mut self) {
        let asked = match Client::new(&self.home, self.port) {
            Ok(client) => client.with_timeout(Duration::from_secs(5)).shutdown().await.is_ok(),
            Err(_) => false,
        };
        if !asked || tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}
