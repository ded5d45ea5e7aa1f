//! The daemon as a systemd user unit: the unit's text, and `systemctl
//! --user` to load, start, stop and ask about it. A user manager runs while
//! its user is logged in, or from boot on when lingering is on
//! (`loginctl enable-linger`), which [`linger`] reports.

use std::path::Path;

use super::{
    ManagerError, NO_RESTART_EXIT_CODES, Observed, RESTART_DELAY_SECS, START_LIMIT_BURST, START_LIMIT_INTERVAL_SECS,
};

/// The unit that runs `exe daemon` for the relay home `home` (both
/// absolute, without control characters: [`super::Service::render`]
/// checks). It logs to the journal as well as to relay.log.
pub fn unit(exe: &str, home: &str) -> String {
    let no_restart: Vec<String> = NO_RESTART_EXIT_CODES.iter().map(u8::to_string).collect();
    format!(
        "# relay's daemon for the relay home {home}.\n\
         # Written by `relay service install`; `relay service uninstall` removes it.\n\
         [Unit]\n\
         Description=relay daemon (home {description})\n\
         StartLimitIntervalSec={START_LIMIT_INTERVAL_SECS}\n\
         StartLimitBurst={START_LIMIT_BURST}\n\
         \n\
         [Service]\n\
         Type=exec\n\
         Environment={environment}\n\
         ExecStart={exec} daemon\n\
         Restart=on-failure\n\
         RestartSec={RESTART_DELAY_SECS}\n\
         # Exits a restart cannot fix: 2, a config.json relay cannot use; 6, a home not\n\
         # initialised. `relay doctor` says what to do; then `relay start`.\n\
         RestartPreventExitStatus={no_restart}\n\
         TimeoutStopSec=30\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        description = home.replace('%', "%%"),
        environment = quoted(&format!("RELAY_HOME={home}"), false),
        exec = quoted(exe, true),
        no_restart = no_restart.join(" "),
    )
}

/// `text` as one quoted word of a unit file: backslashes and quotes
/// escaped, `%` doubled (specifiers), and in a command line `$` too
/// (variables).
fn quoted(text: &str, command: bool) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            '%' => out.push_str("%%"),
            '$' if command => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What `systemctl --user` prints when there is no user manager to ask.
fn unreachable(said: &str) -> bool {
    said.contains("Failed to connect to bus")
        || said.contains("Failed to connect to user scope bus")
        || said.contains("has not been booted with systemd")
}

fn systemctl(args: &[&str]) -> Result<String, ManagerError> {
    let mut all = vec!["--user"];
    all.extend_from_slice(args);
    super::run("systemctl", &all, unreachable)
}

const SHOWN: &str = "UnitFileState,ActiveState,SubState,MainPID,Result,ExecMainStatus";

pub fn observe(name: &str) -> Result<Observed, ManagerError> {
    systemctl(&["show", name, "-p", SHOWN]).map(|shown| parse_show(&shown))
}

/// `systemctl show -p ...`'s `Key=value` lines, read.
pub fn parse_show(shown: &str) -> Observed {
    let value = |key: &str| {
        shown.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix('=')).map(str::trim).unwrap_or_default()
    };
    let pid = value("MainPID").parse::<u32>().ok().filter(|pid| *pid > 0);
    let last_failure = match value("Result") {
        "" | "success" => None,
        "exit-code" => Some(format!("exited with status {}", value("ExecMainStatus"))),
        "signal" | "core-dump" => Some(format!("killed by signal {}", value("ExecMainStatus"))),
        other => Some(other.to_string()),
    };
    Observed {
        enabled: value("UnitFileState").starts_with("enabled"),
        state: value("ActiveState").to_string(),
        sub_state: Some(value("SubState").to_string()).filter(|s| !s.is_empty()),
        pid,
        last_failure,
    }
}

pub fn enable_and_start(name: &str) -> Result<(), ManagerError> {
    systemctl(&["daemon-reload"])?;
    // An earlier failure (the start limit hit) would refuse the start.
    let _ = systemctl(&["reset-failed", name]);
    systemctl(&["enable", "--now", name]).map(drop)
}

/// Links the unit into default.target: `systemctl` does it on the files
/// when no manager can be reached.
pub fn enable(name: &str) -> Result<(), ManagerError> {
    systemctl(&["enable", name]).map(drop)
}

pub fn disable(name: &str) -> Result<(), ManagerError> {
    systemctl(&["disable", name]).map(drop)
}

/// `systemctl --user is-enabled`, which reads the files when no manager
/// can be reached.
pub fn is_enabled(name: &str) -> Option<bool> {
    let output = std::process::Command::new("systemctl").args(["--user", "is-enabled", name]).output().ok()?;
    match String::from_utf8_lossy(&output.stdout).lines().next().map(str::trim) {
        Some("enabled" | "enabled-runtime" | "linked" | "linked-runtime" | "alias") => Some(true),
        Some("disabled" | "static" | "indirect" | "masked" | "masked-runtime" | "generated" | "transient") => {
            Some(false)
        }
        _ => None,
    }
}

pub fn start(name: &str) -> Result<(), ManagerError> {
    let _ = systemctl(&["reset-failed", name]);
    systemctl(&["start", name]).map(drop)
}

/// Returns once the daemon has exited (systemctl waits for the job).
pub fn stop(name: &str) -> Result<(), ManagerError> {
    systemctl(&["stop", name]).map(drop)
}

pub fn disable_and_stop(name: &str) -> Result<(), ManagerError> {
    systemctl(&["disable", "--now", name]).map(drop)
}

pub fn forget(name: &str) -> Result<(), ManagerError> {
    systemctl(&["daemon-reload"])?;
    let _ = systemctl(&["reset-failed", name]);
    Ok(())
}

/// Whether `user`'s manager runs from boot, without a login: logind's
/// answer, else its record in /var/lib/systemd/linger; `None` when neither
/// can be read.
pub fn linger(user: &str) -> Option<bool> {
    match super::run("loginctl", &["show-user", user, "-p", "Linger", "--value"], |_| true) {
        Ok(said) if said.trim() == "yes" => Some(true),
        Ok(said) if said.trim() == "no" => Some(false),
        _ => {
            let records = Path::new("/var/lib/systemd/linger");
            match records.join(user).exists() {
                true => Some(true),
                false => records.is_dir().then_some(false),
            }
        }
    }
}

/// The user's name, for `loginctl`: `USER`, else `LOGNAME`, else `id -un`'s.
pub fn user_name() -> Option<String> {
    ["USER", "LOGNAME"].iter().find_map(|key| std::env::var(key).ok().filter(|v| !v.is_empty())).or_else(|| {
        let output = std::process::Command::new("id").arg("-un").output().ok()?;
        let name = String::from_utf8_lossy(&output.stdout).trim().to_string();
        (output.status.success() && !name.is_empty()).then_some(name)
    })
}
