//! The daemon as a service of the user's own service manager, so that it
//! starts at boot (or login) and comes back after a crash: a systemd user
//! unit on Linux ([`systemd`]), a launchd agent on macOS ([`launchd`]). No
//! root: both live in the user's own folders and managers.
//!
//! One service per relay home. Its name derives from the home: `relay` for
//! the default home (`~/.relay-agent`), `relay-<8 hex digits>` (a hash of
//! the home's path) for any other. The file names the home (`RELAY_HOME`)
//! and the absolute path of the `relay` that wrote it, and runs
//! `relay daemon`.
//!
//! Restarts: on failure only, after [`RESTART_DELAY_SECS`], and at most
//! [`START_LIMIT_BURST`] starts in [`START_LIMIT_INTERVAL_SECS`]; never after
//! the exits in [`NO_RESTART_EXIT_CODES`], which no restart can fix. A clean
//! stop (`relay stop`, SIGTERM) exits 0 and is not restarted either. When
//! WhatsApp logs the device out the daemon does not exit at all: it keeps
//! serving, says "logged out" (`relay status`, `relay doctor`), and links
//! again through `relay init`, so there is nothing for a manager to restart.
//!
//! Rendering the file is a pure function of its inputs ([`Service::render`]);
//! talking to the manager runs `systemctl --user` or `launchctl`, and a
//! manager that cannot be reached is [`ManagerError::Unreachable`], not a
//! failure of the file.

pub mod launchd;
pub mod systemd;

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::home::Home;

/// Seconds between a failed daemon and its restart.
pub const RESTART_DELAY_SECS: u64 = 10;
/// At most this many starts in [`START_LIMIT_INTERVAL_SECS`]; then the
/// manager gives up and leaves the service failed.
pub const START_LIMIT_BURST: u32 = 5;
pub const START_LIMIT_INTERVAL_SECS: u64 = 600;
/// The daemon's exit codes that a restart cannot fix (`relay --help`'s exit
/// codes): 2, a config.json it cannot use; 6, a home not initialised. A
/// person must act first; `relay doctor` says what to do.
pub const NO_RESTART_EXIT_CODES: [u8; 2] = [2, 6];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Manager {
    Systemd,
    Launchd,
}

impl Manager {
    /// launchd on macOS, systemd everywhere else.
    pub fn of_this_system() -> Manager {
        if cfg!(target_os = "macos") { Manager::Launchd } else { Manager::Systemd }
    }

    /// What the service is, for a person.
    pub fn kind(self) -> &'static str {
        match self {
            Manager::Systemd => "systemd user unit",
            Manager::Launchd => "launchd agent",
        }
    }
}

/// The user's folders the service files go in, from the environment
/// (`HOME`, `XDG_CONFIG_HOME`), so a test can point them elsewhere.
#[derive(Debug, Clone)]
pub struct Places {
    /// `$HOME`.
    pub user_home: PathBuf,
    /// `$XDG_CONFIG_HOME` when set to an absolute path, else `~/.config`.
    pub config_dir: PathBuf,
}

impl Places {
    pub fn from_env() -> io::Result<Places> {
        let user_home = directories::BaseDirs::new()
            .map(|dirs| dirs.home_dir().to_path_buf())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "cannot find your home directory (HOME)"))?;
        let config_dir = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .unwrap_or_else(|| user_home.join(".config"));
        Ok(Places { user_home, config_dir })
    }

    /// Where `manager` reads a user's service files.
    pub fn dir(&self, manager: Manager) -> PathBuf {
        match manager {
            Manager::Systemd => self.config_dir.join("systemd").join("user"),
            Manager::Launchd => self.user_home.join("Library").join("LaunchAgents"),
        }
    }
}

/// The service of one relay home.
#[derive(Debug, Clone)]
pub struct Service {
    pub manager: Manager,
    /// The unit's name (`relay.service`) or the agent's label (`relay`).
    pub name: String,
    /// The file that defines it.
    pub path: PathBuf,
    /// The relay home it runs the daemon for.
    pub home: PathBuf,
}

impl Service {
    /// The service of `home` for `manager`, its file in `places`; `default`
    /// is the home `RELAY_HOME` unset would give.
    pub fn of(home: &Home, default: &Path, places: &Places, manager: Manager) -> Service {
        // A relative RELAY_HOME names the same home from wherever it is used.
        let home = std::path::absolute(home.root()).unwrap_or_else(|_| home.root().to_path_buf());
        let stem = stem(&home, default);
        let (name, file) = match manager {
            Manager::Systemd => (format!("{stem}.service"), format!("{stem}.service")),
            Manager::Launchd => (stem.clone(), format!("{stem}.plist")),
        };
        Service { manager, name, path: places.dir(manager).join(file), home }
    }

    /// This system's service for `home`, in the folders the environment names.
    pub fn from_env(home: &Home) -> io::Result<Service> {
        Ok(Service::of(home, &Home::default_root()?, &Places::from_env()?, Manager::of_this_system()))
    }

    /// The file's text, running `exe` (an absolute path). Refused: a path
    /// with a line break or a control character, which neither file format
    /// can hold safely.
    pub fn render(&self, exe: &Path) -> Result<String, String> {
        let home = &self.home;
        for path in [exe, home.as_path()] {
            let text = path.to_str().ok_or_else(|| format!("{} is not valid UTF-8", path.display()))?;
            if text.chars().any(char::is_control) {
                return Err(format!("{text:?} has a control character, which a service file cannot hold"));
            }
            if !path.is_absolute() {
                return Err(format!("{text} is not an absolute path"));
            }
        }
        let (exe, home) = (exe.to_str().unwrap_or_default(), home.to_str().unwrap_or_default());
        Ok(match self.manager {
            Manager::Systemd => systemd::unit(exe, home),
            Manager::Launchd => launchd::plist(&self.name, exe, home),
        })
    }

    pub fn installed(&self) -> bool {
        self.path.is_file()
    }

    /// What the manager says of the service now.
    pub fn observe(&self) -> Result<Observed, ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::observe(&self.name),
            Manager::Launchd => launchd::observe(&self.name),
        }
    }

    /// After the file was written: the manager reads it, the service is
    /// enabled (started at boot or login) and started.
    pub fn enable_and_start(&self) -> Result<(), ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::enable_and_start(&self.name),
            Manager::Launchd => launchd::load(&self.name, &self.path),
        }
    }

    /// Enabled without starting it, where no manager can be reached:
    /// `systemctl --user enable` links the unit by itself, so the user's
    /// manager starts it when it next starts. (A launchd agent in
    /// ~/Library/LaunchAgents is loaded at login as it is.)
    pub fn enable(&self) -> Result<(), ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::enable(&self.name),
            Manager::Launchd => Ok(()),
        }
    }

    /// Disabled without stopping it, where no manager can be reached.
    pub fn disable(&self) -> Result<(), ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::disable(&self.name),
            Manager::Launchd => Ok(()),
        }
    }

    /// Whether the manager starts it at boot or login, read from the
    /// files where no manager can be reached (systemd); `None`: unknown.
    pub fn is_enabled(&self) -> Option<bool> {
        match self.manager {
            Manager::Systemd => systemd::is_enabled(&self.name),
            Manager::Launchd => self.observe().ok().map(|o| o.enabled),
        }
    }

    /// Everything `relay service status` and `relay doctor` show: the
    /// manager is asked only when the file is there. `exe` is the relay
    /// whose file this would be.
    pub fn survey(&self, exe: &Path) -> Survey {
        let installed = self.installed();
        let mut survey = Survey {
            manager: self.manager,
            name: self.name.clone(),
            path: self.path.clone(),
            home: self.home.clone(),
            installed,
            current: None,
            enabled: None,
            observed: None,
            unreachable: None,
            linger: None,
            user: None,
        };
        if !installed {
            return survey;
        }
        let written = std::fs::read_to_string(&self.path).ok();
        survey.current = self.render(exe).ok().map(|text| written.as_deref() == Some(text.as_str()));
        match self.observe() {
            Ok(observed) => {
                survey.enabled = Some(observed.enabled);
                survey.observed = Some(observed);
            }
            Err(e) => {
                survey.enabled = self.is_enabled();
                survey.unreachable = Some(e.to_string());
            }
        }
        if self.manager == Manager::Systemd {
            survey.user = systemd::user_name();
            survey.linger = survey.user.as_deref().and_then(systemd::linger);
        }
        survey
    }

    /// Starts it now (after a failure too: the manager's count of failed
    /// starts is reset).
    pub fn start(&self) -> Result<(), ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::start(&self.name),
            Manager::Launchd => launchd::start(&self.name, &self.path),
        }
    }

    /// Stops it, so that the manager does not start it again.
    pub fn stop(&self) -> Result<(), ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::stop(&self.name),
            Manager::Launchd => launchd::stop(&self.name),
        }
    }

    /// Stops and disables it, before its file is removed.
    pub fn disable_and_stop(&self) -> Result<(), ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::disable_and_stop(&self.name),
            Manager::Launchd => launchd::unload(&self.name),
        }
    }

    /// After the file was removed: the manager forgets it.
    pub fn forget(&self) -> Result<(), ManagerError> {
        match self.manager {
            Manager::Systemd => systemd::forget(&self.name),
            Manager::Launchd => Ok(()),
        }
    }

    /// The command that shows the daemon's recent output under the manager.
    pub fn logs_hint(&self) -> String {
        match self.manager {
            Manager::Systemd => format!("`journalctl --user -u {} -n 30`", self.name),
            Manager::Launchd => format!("daemon.stderr and relay.log in {}", self.home.display()),
        }
    }
}

/// A service as it stands: its file, and what its manager says of it.
#[derive(Debug, Clone, Serialize)]
pub struct Survey {
    pub manager: Manager,
    pub name: String,
    pub path: PathBuf,
    pub home: PathBuf,
    pub installed: bool,
    /// The file is what this relay would write now (this binary, this
    /// home); `None` when not installed.
    pub current: Option<bool>,
    /// Started by the manager at boot or login; `None`: not installed, or unknown.
    pub enabled: Option<bool>,
    /// What the manager says; `None` when not installed or not reachable.
    pub observed: Option<Observed>,
    /// Why the manager could not be asked.
    pub unreachable: Option<String>,
    /// systemd: the user's manager runs from boot, without a login.
    pub linger: Option<bool>,
    /// systemd: the user lingering is about.
    pub user: Option<String>,
}

impl Survey {
    /// The line about lingering, for a systemd unit: what it means now.
    pub fn linger_note(&self) -> Option<String> {
        if self.manager != Manager::Systemd || !self.installed {
            return None;
        }
        let user = self.user.as_deref().unwrap_or("$USER");
        Some(match self.linger {
            Some(true) => format!("on for {user}: the daemon starts at boot and runs without a login"),
            Some(false) => format!(
                "off for {user}: the daemon runs only while {user} is logged in; `loginctl enable-linger {user}` \
                 starts it at boot and keeps it running without a login"
            ),
            None => format!(
                "unknown (logind cannot be asked): if it is off, the daemon runs only while {user} is logged in; \
                 `loginctl enable-linger {user}` turns it on"
            ),
        })
    }
}

/// What the manager says of a service.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Observed {
    /// Started by the manager at boot or login.
    pub enabled: bool,
    /// The manager's word: systemd's ActiveState (`active`, `inactive`,
    /// `failed`, `activating`, `deactivating`), launchd's state (`running`,
    /// `waiting`, `not loaded`).
    pub state: String,
    /// systemd's SubState (`running`, `dead`, `auto-restart`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_state: Option<String>,
    /// The daemon's pid while it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// How the last run ended, when it did not end well (`exited with
    /// status 1`, `killed by signal 9`, `start-limit-hit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
}

impl Observed {
    /// The daemon runs (or is starting) under the manager.
    pub fn is_running(&self) -> bool {
        matches!(self.state.as_str(), "active" | "activating" | "reloading" | "running")
            && self.sub_state.as_deref() != Some("auto-restart")
    }

    /// Stopped for good after failing: systemd's `failed`, or waiting to be
    /// restarted after a failure.
    pub fn has_failed(&self) -> bool {
        self.state == "failed" || self.sub_state.as_deref() == Some("auto-restart")
    }

    /// One line for a person: `active (running, pid 123)`, `failed; last
    /// run: exited with status 1`.
    pub fn describe(&self) -> String {
        let mut said = match (&self.sub_state, self.pid) {
            (Some(sub), Some(pid)) => format!("{} ({sub}, pid {pid})", self.state),
            (Some(sub), None) if sub != &self.state => format!("{} ({sub})", self.state),
            (None, Some(pid)) => format!("{} (pid {pid})", self.state),
            _ => self.state.clone(),
        };
        if let Some(failure) = self.last_failure.as_ref().filter(|_| !self.is_running()) {
            said.push_str(&format!("; last run: {failure}"));
        }
        said
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ManagerError {
    /// No manager to ask: `systemctl`/`launchctl` missing, or no user
    /// manager reachable (no login session, no lingering; a container).
    #[error("{0}")]
    Unreachable(String),
    /// The manager was reached and refused or failed.
    #[error("{0}")]
    Failed(String),
}

/// `relay` for the default home, else `relay-` and 8 hex digits of a hash
/// (FNV-1a, stable across builds) of the home's path.
pub fn stem(home: &Path, default: &Path) -> String {
    if home == default {
        return "relay".into();
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in home.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("relay-{:08x}", hash >> 32)
}

/// Runs a manager's command (`program` with `args`); its stdout, or the
/// error, Unreachable when `unreachable` says so of what it printed.
fn run(program: &str, args: &[&str], unreachable: fn(&str) -> bool) -> Result<String, ManagerError> {
    let output = match Command::new(program).args(args).output() {
        Ok(output) => output,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ManagerError::Unreachable(format!("{program} is not installed")));
        }
        Err(e) => return Err(ManagerError::Unreachable(format!("cannot run {program}: {e}"))),
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut lines = stderr.lines().chain(stdout.lines()).map(str::trim).filter(|l| !l.is_empty());
    if let Some(why) = stderr.lines().find(|line| unreachable(line)) {
        return Err(ManagerError::Unreachable(format!("{program}: {}", why.trim())));
    }
    let said = lines.next().unwrap_or_default();
    Err(ManagerError::Failed(format!(
        "`{program} {}`: {}",
        args.join(" "),
        if said.is_empty() { "failed" } else { said }
    )))
}

#[cfg(test)]
mod tests;
