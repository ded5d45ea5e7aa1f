//! `relay stop`: asks the daemon to shut down and returns once the process is
//! gone (its lock released). Not running: says so and succeeds. A daemon
//! run by this home's service is stopped through the service manager, so
//! that it does not start it again (see `super::service`).

use std::time::{Duration, Instant};

use serde::Serialize;

use super::output::say;
use super::{CliError, Context, output};
use crate::home::daemon_files::{self, LockState};

const GRACE: Duration = Duration::from_secs(20);

#[derive(Serialize)]
struct Stopped {
    pid: Option<u32>,
    was_running: bool,
    /// The service it was stopped through, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<String>,
}

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let through = super::service::stop_under_manager(ctx).await?;
    let pid = stop_daemon(ctx).await?;
    let stopped = match (through, pid) {
        (_, Some(pid)) => Stopped { pid: Some(pid), was_running: true, service: None },
        (Some((name, pid)), None) => Stopped { pid, was_running: true, service: Some(name) },
        (None, None) => Stopped { pid: None, was_running: false, service: None },
    };
    report(ctx, stopped)
}

/// Stops this home's daemon, if one runs; returns its pid.
pub(super) async fn stop_daemon(ctx: &Context) -> Result<Option<u32>, CliError> {
    let home = &ctx.home;
    match daemon_files::lock_state(home) {
        LockState::Held => {}
        LockState::Free => {
            daemon_files::clean_up(home);
            return Ok(None);
        }
        // Never "not running" on a guess.
        LockState::Unknown(e) => {
            return Err(CliError::failure(format!(
                "cannot tell whether relay is running: cannot open {}: {e}",
                home.lock_file().display()
            )));
        }
    }
    let asked = match ctx.client() {
        Ok(client) => client.shutdown().await.map(|r| r.pid).map_err(CliError::api),
        Err(e) => Err(e),
    };
    let pid = match asked {
        Ok(pid) => pid,
        // The API did not take it (wrong port, token gone): signal the pid instead.
        Err(_) => {
            let pid = daemon_files::read_pid(home)
                .ok_or_else(|| CliError::failure("the daemon holds its lock but has no pid file; stop it by hand"))?;
            signal_term(pid)?;
            pid
        }
    };
    wait_gone(ctx, pid).await?;
    Ok(Some(pid))
}

/// Returns once daemon `pid` has exited and let go of the home's lock.
pub(super) async fn wait_gone(ctx: &Context, pid: u32) -> Result<(), CliError> {
    let started = Instant::now();
    while daemon_files::is_locked(&ctx.home) || daemon_files::process_running(pid) {
        if started.elapsed() > GRACE {
            return Err(CliError::failure(format!(
                "the daemon (pid {pid}) did not stop within {}s; `kill {pid}` ends it, and nothing on disk is lost",
                GRACE.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

fn signal_term(pid: u32) -> Result<(), CliError> {
    crate::sys::terminate(pid).map_err(|e| CliError::failure(format!("cannot signal the daemon: {e}")))
}

fn report(ctx: &Context, stopped: Stopped) -> Result<(), CliError> {
    if ctx.json {
        output::json(&stopped);
    } else if let (Some(pid), Some(service)) = (stopped.pid, &stopped.service) {
        say!("relay stopped (pid {pid}) through its service {service}.");
    } else if let Some(service) = &stopped.service {
        say!("relay's service {service} stopped (it was not running a daemon).");
    } else if let Some(pid) = stopped.pid {
        say!("relay stopped (pid {pid}).");
    } else {
        say!("relay is not running.");
    }
    Ok(())
}
