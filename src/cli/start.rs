//! `relay start`: spawns `relay daemon` detached (its own session, no
//! terminal), then waits until it answers on its port. Already running: says
//! so and succeeds. A lock still held by a daemon on its way out is waited
//! for. A stale pid file is cleaned up; a daemon that dies while starting
//! (port taken, bad config) has its error shown. Once this home's service
//! is installed (`relay service install`), its manager starts the daemon
//! instead (see `super::service`).

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::output::{complain, say};
use super::{CliError, Context, output};
use crate::api::HealthResponse;
use crate::client::Client;
use crate::home::daemon_files::{self, LockState};

const READY_TIMEOUT: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(5);
/// Each probe of a held lock also dials the port: not too often.
const HELD_POLL: Duration = Duration::from_millis(20);

#[derive(Serialize)]
struct Started {
    pid: u32,
    port: u16,
    already_running: bool,
    /// The service whose manager started it (`relay service install`).
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<String>,
}

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let home = &ctx.home;
    // Before config.json: a running daemon does not need it (it may be mid-edit).
    if let Some(running) = running_daemon(home).await? {
        return report(ctx, running);
    }
    let config = ctx.config()?;
    if let Some(empty) = config.courtesy.no_opt_out_words().filter(|_| !ctx.json) {
        complain!("relay: warning: {empty} (remove it from config.json for the defaults)");
    }
    if let Some(pid) = daemon_files::read_pid(home) {
        // No daemon holds the lock, so this pid file outlived its daemon.
        daemon_files::clean_up(home);
        if !ctx.json {
            complain!("relay: removed a stale pid file (pid {pid} is gone)");
        }
    }

    if let Some((service, pid)) = super::service::start_under_manager(ctx, config.daemon_port).await? {
        if ctx.port.is_some_and(|port| port != config.daemon_port) && !ctx.json {
            complain!("relay: {service} runs the daemon on config.json's port; --port and RELAY_PORT are not used");
        }
        let port = config.daemon_port;
        return report(ctx, Started { pid, port, already_running: false, service: Some(service) });
    }
    let port = ctx.port.unwrap_or(config.daemon_port);
    let exe = std::env::current_exe().map_err(|e| CliError::failure(format!("cannot find the relay binary: {e}")))?;
    let stderr_path = home.daemon_stderr_file();
    let stderr = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&stderr_path)
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", stderr_path.display())))?;
    let mut command = Command::new(exe);
    command
        .arg("daemon")
        // Its log is relay.log; daemon.stderr keeps only what stopped it
        // from starting, which is what this command shows.
        .arg("--quiet")
        .arg("--port")
        .arg(port.to_string())
        .env("RELAY_HOME", home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    // Closing the terminal (or Ctrl-C in it) does not stop relay.
    crate::sys::detach(&mut command);
    let mut child = command.spawn().map_err(|e| CliError::failure(format!("cannot start the daemon: {e}")))?;
    let pid = child.id();
    let health = wait_ready(port, Some(pid), Some(&mut child)).await.map_err(|e| {
        let said = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        let said = said.trim().trim_start_matches("relay: ");
        if said.is_empty() { e } else { CliError::failure(format!("the daemon did not start: {said}")) }
    })?;
    report(ctx, Started { pid: health.pid, port, already_running: false, service: None })
}

/// The daemon of this home, if one runs. A held lock is not enough: a
/// daemon killed a moment ago holds it until its last thread has exited,
/// which under load can take seconds after its main thread is gone (and its
/// port answers no more). So: wait until the daemon named by the pid and port
/// files answers (running), or the lock is released (None: start one), and
/// name the holder if neither happens in time.
async fn running_daemon(home: &crate::home::Home) -> Result<Option<Started>, CliError> {
    let started = Instant::now();
    loop {
        match daemon_files::lock_state(home) {
            LockState::Free => return Ok(None),
            LockState::Held => {}
            LockState::Unknown(e) => {
                return Err(CliError::failure(format!(
                    "cannot tell whether relay is running: cannot open {}: {e}",
                    home.lock_file().display()
                )));
            }
        }
        // Both files are written before the daemon serves; an answer from
        // another pid is some other program on a port the files still name.
        if let (Some(port), Some(pid)) = (daemon_files::read_port(home), daemon_files::read_pid(home))
            && let Some(health) = Client::on_port(port).health().await.ok()
            && health.pid == pid
        {
            return Ok(Some(Started { pid, port, already_running: true, service: None }));
        }
        if started.elapsed() > READY_TIMEOUT {
            return Err(held_without_daemon(home));
        }
        tokio::time::sleep(HELD_POLL).await;
    }
}

fn held_without_daemon(home: &crate::home::Home) -> CliError {
    let lock = home.lock_file();
    let seconds = READY_TIMEOUT.as_secs();
    let port = daemon_files::read_port(home).map(|p| format!(" on 127.0.0.1:{p}")).unwrap_or_default();
    CliError::failure(match daemon_files::lock_holder(home) {
        Some((pid, command)) => format!(
            "pid {pid} ({command}) holds this relay home's lock ({}) but no relay daemon answers{port}, and it did \
             not let go within {seconds}s: once it ends, `relay start` works; if it is stuck, `kill -9 {pid}` ends \
             it (nothing on disk is lost)",
            lock.display()
        ),
        None => format!(
            "something holds this relay home's lock ({}) but no relay daemon answers{port}, and it did not let go \
             within {seconds}s; `fuser {}` names the process",
            lock.display(),
            lock.display()
        ),
    })
}

/// Polls `/health` until the daemon (with `pid`, if given) answers.
async fn wait_ready(
    port: u16,
    pid: Option<u32>,
    mut child: Option<&mut std::process::Child>,
) -> Result<HealthResponse, CliError> {
    let started = Instant::now();
    loop {
        if let Some(child) = child.as_deref_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            return Err(CliError::failure(format!("the daemon exited while starting ({status})")));
        }
        if let Some(health) = Client::on_port(port).health().await.ok()
            && pid.is_none_or(|p| p == health.pid)
        {
            return Ok(health);
        }
        if started.elapsed() > READY_TIMEOUT {
            return Err(CliError::failure(format!(
                "the daemon did not answer on 127.0.0.1:{port} within {}s; see relay.log in the relay home",
                READY_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn report(ctx: &Context, started: Started) -> Result<(), CliError> {
    if ctx.json {
        output::json(&started);
    } else if let Some(service) = &started.service {
        say!("relay started by its service {service} (pid {}, port {}).", started.pid, started.port);
    } else if started.already_running {
        say!("relay is already running (pid {}, port {}).", started.pid, started.port);
    } else {
        say!("relay started (pid {}, port {}).", started.pid, started.port);
    }
    Ok(())
}
