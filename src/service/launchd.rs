//! The daemon as a launchd agent (macOS): the property list, and
//! `launchctl` in the user's GUI domain (`gui/<uid>`) to load, start, stop
//! and ask about it. An agent runs while its user is logged in.
//!
//! launchd restarts by `KeepAlive`: with `SuccessfulExit` false it restarts
//! a daemon that exited non-zero or died of a signal, and leaves one that
//! exited 0 (a clean stop) stopped. It cannot spare particular exit codes
//! as systemd's `RestartPreventExitStatus=` does, and has no start limit:
//! a daemon that cannot start (a config.json it cannot use) is tried again
//! every `ThrottleInterval` seconds until it is fixed, `relay stop`ped or
//! uninstalled, each try saying why in daemon.stderr in the relay home.
//! That costs a process start every few seconds, and is what
//! `relay doctor` and `relay service status` then show.

use std::path::Path;

use super::{ManagerError, Observed, RESTART_DELAY_SECS};

/// The agent `label` that runs `exe daemon --quiet` for the relay home
/// `home` (both absolute, without control characters). Its stderr (what
/// stops the daemon from starting) goes to daemon.stderr in the home, as
/// under `relay start`; its log to relay.log.
pub fn plist(label: &str, exe: &str, home: &str) -> String {
    let stderr = Path::new(home).join("daemon.stderr");
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- relay's daemon for one relay home (RELAY_HOME below). Written by
     `relay service install`; `relay service uninstall` removes it. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{label}</string>
	<key>ProgramArguments</key>
	<array>
		<string>{exe}</string>
		<string>daemon</string>
		<string>--quiet</string>
	</array>
	<key>EnvironmentVariables</key>
	<dict>
		<key>RELAY_HOME</key>
		<string>{home}</string>
	</dict>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>{RESTART_DELAY_SECS}</integer>
	<key>StandardErrorPath</key>
	<string>{stderr}</string>
	<key>ProcessType</key>
	<string>Background</string>
</dict>
</plist>
"#,
        label = escaped(label),
        exe = escaped(exe),
        home = escaped(home),
        stderr = escaped(&stderr.display().to_string()),
    )
}

/// `text` as XML character data.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn domain() -> String {
    format!("gui/{}", crate::sys::effective_uid())
}

fn target(label: &str) -> String {
    format!("{}/{label}", domain())
}

fn launchctl(args: &[&str]) -> Result<String, ManagerError> {
    super::run("launchctl", args, |_| false)
}

pub fn observe(label: &str) -> Result<Observed, ManagerError> {
    let disabled = launchctl(&["print-disabled", &domain()])?;
    let quoted = format!("\"{label}\" =>");
    let enabled = !disabled.lines().any(|l| {
        let l = l.trim();
        l.starts_with(&quoted) && (l.ends_with("disabled") || l.ends_with("true"))
    });
    match launchctl(&["print", &target(label)]) {
        Ok(printed) => Ok(Observed { enabled, ..parse_print(&printed) }),
        Err(ManagerError::Failed(said)) if said.contains("Could not find service") => {
            Ok(Observed { enabled, state: "not loaded".into(), ..Observed::default() })
        }
        Err(e) => Err(e),
    }
}

/// `launchctl print`'s `key = value` lines, read (the first of each key:
/// the service's own, before any nested block's).
pub fn parse_print(printed: &str) -> Observed {
    let value = |key: &str| {
        printed.lines().find_map(|line| line.trim().strip_prefix(key)?.trim_start().strip_prefix('=')).map(str::trim)
    };
    let last_exit = value("last exit code").filter(|v| !v.starts_with('(') && *v != "0");
    Observed {
        enabled: true,
        state: value("state").unwrap_or("unknown").to_string(),
        sub_state: None,
        pid: value("pid").and_then(|p| p.parse().ok()),
        last_failure: last_exit.map(|code| format!("exit code {code}")),
    }
}

/// Loads the agent afresh (RunAtLoad starts it): an older copy is unloaded
/// first, so a rewritten file takes effect.
pub fn load(label: &str, path: &Path) -> Result<(), ManagerError> {
    let _ = launchctl(&["bootout", &target(label)]);
    let _ = launchctl(&["enable", &target(label)]);
    launchctl(&["bootstrap", &domain(), &path.display().to_string()]).map(drop)
}

/// Loaded: started now (`kickstart`); not loaded (after `relay stop`):
/// loaded, which starts it.
pub fn start(label: &str, path: &Path) -> Result<(), ManagerError> {
    match launchctl(&["kickstart", &target(label)]) {
        Ok(_) => Ok(()),
        Err(ManagerError::Failed(_)) => launchctl(&["bootstrap", &domain(), &path.display().to_string()]).map(drop),
        Err(e) => Err(e),
    }
}

/// Unloads the agent, which stops the daemon and keeps launchd from
/// starting it again until the next login or `relay start`.
pub fn stop(label: &str) -> Result<(), ManagerError> {
    launchctl(&["bootout", &target(label)]).map(drop)
}

pub fn unload(label: &str) -> Result<(), ManagerError> {
    match launchctl(&["bootout", &target(label)]) {
        Err(ManagerError::Failed(said)) if said.contains("No such process") || said.contains("Could not find") => {
            Ok(())
        }
        other => other.map(drop),
    }
}
