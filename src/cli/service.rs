//! `relay service install | uninstall | status`: this home's daemon as a
//! service of the user's manager ([`crate::service`]: a systemd user unit,
//! a launchd agent), so it starts at boot or login and comes back after a
//! crash. And the part of `relay start` and `relay stop` that goes through
//! that manager once the service is installed, so there is never a second
//! daemon, nor one the manager starts again after `relay stop`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::output::{complain, say};
use super::{CliError, Context, output};
use crate::client::Client;
use crate::home::daemon_files;
use crate::service::{Manager, ManagerError, Service};

/// How long `relay start` and `install` wait for the daemon the manager started.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write this home's service file (systemd user unit, launchd agent), enable it and start the daemon under it.
    Install,
    /// Stop and disable this home's service and remove its file.
    Uninstall,
    /// Show whether this home's service is installed, enabled and running, and where its file is.
    Status,
}

pub async fn run(ctx: &Context, command: Command) -> Result<(), CliError> {
    let service = service_of(ctx)?;
    match command {
        Command::Install => install(ctx, &service).await,
        Command::Uninstall => uninstall(ctx, &service).await,
        Command::Status => status(ctx, &service),
    }
}

fn service_of(ctx: &Context) -> Result<Service, CliError> {
    Service::from_env(&ctx.home).map_err(|e| CliError::failure(format!("cannot place the service file: {e}")))
}

fn this_exe() -> Result<PathBuf, CliError> {
    std::env::current_exe().map_err(|e| CliError::failure(format!("cannot find the relay binary: {e}")))
}

#[derive(Serialize)]
struct Installed {
    name: String,
    path: PathBuf,
    /// The file was written (new, or different from the one there).
    written: bool,
    enabled: bool,
    /// The daemon runs under the service now.
    running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    /// What could not be done, and what to do instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_done: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    linger: Option<String>,
}

async fn install(ctx: &Context, service: &Service) -> Result<(), CliError> {
    // The daemon would refuse to start on these: say so now, not in a journal.
    let config = ctx.config()?;
    let exe = this_exe()?;
    let text =
        service.render(&exe).map_err(|why| CliError::failure(format!("cannot write {}: {why}", service.name)))?;
    let written = std::fs::read_to_string(&service.path).ok().as_deref() != Some(text.as_str());
    if written {
        write_file(service, &text)?;
    }
    let mut outcome = Installed {
        name: service.name.clone(),
        path: service.path.clone(),
        written,
        enabled: false,
        running: false,
        pid: None,
        not_done: None,
        linger: None,
    };
    match service.observe() {
        Ok(observed) => {
            // A daemon `relay start` started holds the home: it makes way.
            if !observed.is_running()
                && let Some(pid) = super::stop::stop_daemon(ctx).await?
                && !ctx.json
            {
                complain!(
                    "relay: stopped the daemon that ran outside the service (pid {pid}); {} runs it now",
                    service.name
                );
            }
            service.enable_and_start().map_err(|e| CliError::failure(e.to_string()))?;
            outcome.enabled = true;
            let health = wait_started(service, ctx, config.daemon_port).await?;
            outcome.running = true;
            outcome.pid = Some(health.pid);
            if written && observed.is_running() {
                outcome.not_done = Some(format!(
                    "the daemon that runs (pid {}) started from the old file: `relay stop && relay start` restarts it \
                     with this one",
                    health.pid
                ));
            }
        }
        Err(ManagerError::Unreachable(why)) => {
            outcome.enabled = service.enable().is_ok();
            outcome.not_done = Some(not_started(service, &why, outcome.enabled));
        }
        Err(ManagerError::Failed(why)) => return Err(CliError::failure(why)),
    }
    outcome.linger = service.survey(&exe).linger_note();
    report_install(ctx, service, &outcome);
    Ok(())
}

fn write_file(service: &Service, text: &str) -> Result<(), CliError> {
    let cannot = |e: std::io::Error| CliError::failure(format!("cannot write {}: {e}", service.path.display()));
    let dir = service.path.parent().expect("a service file is in a folder");
    std::fs::create_dir_all(dir).map_err(cannot)?;
    // Whole or not at all: a manager may read it at any moment.
    let partial = service.path.with_extension("relay-partial");
    std::fs::write(&partial, text).map_err(cannot)?;
    std::fs::rename(&partial, &service.path).map_err(cannot)
}

/// What to do when the file is written but no manager could start it.
fn not_started(service: &Service, why: &str, enabled: bool) -> String {
    match service.manager {
        Manager::Systemd => format!(
            "no systemd user manager could be reached ({why}), so the daemon was not started under it{}. Start the \
             daemon now with `relay start` (without the service until then), or, in a session with a user manager: \
             `systemctl --user daemon-reload && systemctl --user start {}`",
            if enabled { "; the unit is enabled: it starts when your user manager next starts" } else { "" },
            service.name
        ),
        Manager::Launchd => format!(
            "launchd could not be asked ({why}), so the agent was not loaded; it loads at your next login, or now \
             with `launchctl bootstrap gui/$(id -u) {}`",
            service.path.display()
        ),
    }
}

fn report_install(ctx: &Context, service: &Service, outcome: &Installed) {
    if ctx.json {
        output::json(outcome);
        return;
    }
    let verb = if outcome.written { "Wrote" } else { "Already installed, unchanged:" };
    say!(
        "{verb} {} ({}, for the relay home {}).",
        service.path.display(),
        service.manager.kind(),
        service.home.display()
    );
    match outcome.pid {
        Some(pid) => {
            say!("{} is enabled and running the daemon (pid {pid}); it restarts it if it fails.", service.name)
        }
        None if outcome.enabled => say!("{} is enabled but not started.", service.name),
        None => say!("{} is not enabled and not started.", service.name),
    }
    if let Some(not_done) = &outcome.not_done {
        complain!("relay: {not_done}");
    }
    if let Some(linger) = &outcome.linger {
        say!("Lingering is {linger}.");
    }
    say!("`relay start` and `relay stop` go through it; `relay service status` shows it.");
}

#[derive(Serialize)]
struct Uninstalled {
    name: String,
    path: PathBuf,
    was_installed: bool,
    /// The daemon that ran under the service, now stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_done: Option<String>,
}

async fn uninstall(ctx: &Context, service: &Service) -> Result<(), CliError> {
    let mut outcome = Uninstalled {
        name: service.name.clone(),
        path: service.path.clone(),
        was_installed: service.installed(),
        stopped_pid: None,
        not_done: None,
    };
    if outcome.was_installed {
        let pid = service.observe().ok().filter(|o| o.is_running()).and_then(|o| o.pid);
        match service.disable_and_stop() {
            Ok(()) => {
                if let Some(pid) = pid {
                    super::stop::wait_gone(ctx, pid).await?;
                }
                outcome.stopped_pid = pid;
            }
            Err(ManagerError::Unreachable(why)) => {
                let _ = service.disable();
                outcome.not_done = Some(format!(
                    "the service manager could not be reached ({why}): the unit was disabled and removed without it \
                     (nothing can have run under it)"
                ));
            }
            Err(ManagerError::Failed(why)) => outcome.not_done = Some(why),
        }
        std::fs::remove_file(&service.path)
            .map_err(|e| CliError::failure(format!("cannot remove {}: {e}", service.path.display())))?;
        let _ = service.forget();
    }
    if ctx.json {
        output::json(&outcome);
        return Ok(());
    }
    if !outcome.was_installed {
        say!(
            "No relay service is installed for this home: nothing to remove ({} does not exist).",
            service.path.display()
        );
        return Ok(());
    }
    if let Some(pid) = outcome.stopped_pid {
        say!("Stopped the daemon (pid {pid}) and disabled {}.", service.name);
    }
    if let Some(not_done) = &outcome.not_done {
        complain!("relay: {not_done}");
    }
    say!("Removed {}.", service.path.display());
    if daemon_files::is_locked(&ctx.home) {
        say!("A daemon still runs for this home, outside the service: `relay stop` stops it.");
    }
    Ok(())
}

fn status(ctx: &Context, service: &Service) -> Result<(), CliError> {
    let survey = service.survey(&this_exe()?);
    if ctx.json {
        output::json(&survey);
        return Ok(());
    }
    say!("service    {} ({})", survey.name, survey.manager.kind());
    say!("file       {}", survey.path.display());
    say!("home       {}", survey.home.display());
    if !survey.installed {
        say!("installed  no: `relay service install` runs the daemon at boot (or login) and restarts it if it fails");
        return Ok(());
    }
    say!(
        "installed  yes{}",
        match survey.current {
            Some(false) =>
                ": written by another relay binary or for other settings; `relay service install` rewrites it",
            _ => "",
        }
    );
    let enabled = match survey.enabled {
        Some(true) => "yes: it starts with your user's service manager",
        Some(false) => "no: `relay service install` enables it",
        None => "unknown",
    };
    say!("enabled    {enabled}");
    match (&survey.observed, &survey.unreachable) {
        (Some(observed), _) => say!("state      {}", observed.describe()),
        (None, Some(why)) => say!("state      unknown: the service manager cannot be reached ({why})"),
        (None, None) => {}
    }
    if let Some(linger) = survey.linger_note() {
        say!("lingering  {linger}");
    }
    Ok(())
}

/// `relay start` on a home whose service is installed: the manager starts
/// the daemon. `None` when there is no service, or its manager cannot be
/// reached (said on stderr): `relay start` runs the daemon itself.
pub(super) async fn start_under_manager(ctx: &Context, port: u16) -> Result<Option<(String, u32)>, CliError> {
    let service = service_of(ctx)?;
    if !service.installed() {
        return Ok(None);
    }
    if let Err(e) = service.observe() {
        if !ctx.json {
            complain!(
                "relay: {} is installed, but its manager cannot be reached ({e}): starting the daemon without it",
                service.name
            );
        }
        return Ok(None);
    }
    service.start().map_err(|e| CliError::failure(format!("cannot start {}: {e}", service.name)))?;
    let health = wait_started(&service, ctx, port).await?;
    Ok(Some((service.name, health.pid)))
}

/// Waits until the daemon the manager started answers on `port` (this
/// home's: the pid its pid file names), or the manager says it failed.
async fn wait_started(service: &Service, ctx: &Context, port: u16) -> Result<crate::api::HealthResponse, CliError> {
    let started = Instant::now();
    loop {
        if let Ok(health) = Client::on_port(port).health().await
            && daemon_files::read_pid(&ctx.home) == Some(health.pid)
        {
            return Ok(health);
        }
        if let Ok(observed) = service.observe()
            && observed.has_failed()
        {
            let again = match observed.sub_state.as_deref() {
                Some("auto-restart") => "; it is tried again in a few seconds (`relay stop` stops that)",
                _ => "",
            };
            return Err(CliError::failure(format!(
                "the daemon did not start under {} ({}): {} shows why{again}",
                service.name,
                observed.describe(),
                service.logs_hint()
            )));
        }
        if started.elapsed() > READY_TIMEOUT {
            return Err(CliError::failure(format!(
                "the daemon under {} did not answer on 127.0.0.1:{port} within {}s; {} shows why",
                service.name,
                READY_TIMEOUT.as_secs(),
                service.logs_hint()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `relay stop` on a home whose service runs (or is about to restart) the
/// daemon: the manager stops it, so that it does not start it again.
/// Returns the service's name and the daemon's pid; `None` when there is
/// nothing to stop through a manager.
pub(super) async fn stop_under_manager(ctx: &Context) -> Result<Option<(String, Option<u32>)>, CliError> {
    let service = service_of(ctx)?;
    if !service.installed() {
        return Ok(None);
    }
    let observed = match service.observe() {
        Ok(observed) => observed,
        Err(e) => {
            if !ctx.json {
                complain!(
                    "relay: {} is installed, but its manager cannot be reached ({e}): stopping the daemon without it",
                    service.name
                );
            }
            return Ok(None);
        }
    };
    if !(observed.is_running() || observed.has_failed() && observed.state != "failed") {
        return Ok(None);
    }
    service.stop().map_err(|e| CliError::failure(format!("cannot stop {}: {e}", service.name)))?;
    if let Some(pid) = observed.pid {
        super::stop::wait_gone(ctx, pid).await?;
    }
    Ok(Some((service.name, observed.pid)))
}
