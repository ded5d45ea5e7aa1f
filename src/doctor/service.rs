//! The service check: whether this home's daemon runs as a service of the
//! user's manager (`relay service install`), and whether that service is
//! well: enabled, running this home's daemon, written by this relay, and on
//! systemd whether lingering lets it run without a login.

use std::path::Path;

use super::{Check, Status};
use crate::home::Home;
use crate::service::{Service, Survey};

const NAME: &str = "service";

/// `daemon_pid`: the daemon that answered, if one did.
pub(super) fn check_service(home: &Home, daemon_pid: Option<u32>) -> Check {
    let service = match Service::from_env(home) {
        Ok(service) => service,
        Err(e) => return Check::skipped(NAME, format!("not checked: {e}")),
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Check::skipped(NAME, format!("not checked: cannot find the relay binary: {e}")),
    };
    judge(&service.survey(&exe), daemon_pid, &service.logs_hint(), &exe)
}

/// The check for what `survey` found.
fn judge(survey: &Survey, daemon_pid: Option<u32>, logs: &str, exe: &Path) -> Check {
    let (name, kind) = (&survey.name, survey.manager.kind());
    if !survey.installed {
        return Check::ok(
            NAME,
            format!(
                "not installed: the daemon runs when `relay start` starts it, and not after a reboot (`relay service \
                 install` runs it as a {kind})"
            ),
        );
    }
    let mut seen = format!("{name} ({})", survey.path.display());
    // (status, what is found, what to do): one may hide no other.
    let mut found: Vec<(Status, String, String)> = Vec::new();
    match (&survey.observed, &survey.unreachable) {
        (Some(observed), _) => {
            seen.push_str(&format!(": {}", observed.describe()));
            found.extend(state_finding(name, observed, daemon_pid, logs));
        }
        (None, Some(why)) => found.push((
            Status::Warning,
            format!("its service manager cannot be reached ({why})"),
            "the unit runs where your user's manager runs (at login, or from boot with lingering); until then \
             `relay start` runs the daemon without it"
                .into(),
        )),
        (None, None) => {}
    }
    if survey.enabled == Some(false) {
        found.push((
            Status::Warning,
            format!("{name} is not enabled: it does not start at boot or login"),
            "`relay service install` enables it".into(),
        ));
    }
    if survey.current == Some(false) {
        found.push((
            Status::Warning,
            format!("{} is not what this relay ({}) would write for this home", survey.path.display(), exe.display()),
            "`relay service install` rewrites it (then `relay stop && relay start`)".into(),
        ));
    }
    match survey.linger {
        Some(false) => {
            let user = survey.user.as_deref().unwrap_or("$USER");
            found.push((
                Status::Warning,
                format!("lingering is off for {user}: the daemon runs only while {user} is logged in"),
                format!("`loginctl enable-linger {user}` starts it at boot and keeps it running without a login"),
            ));
        }
        Some(true) => seen.push_str("; lingering on"),
        None => {}
    }
    if found.is_empty() {
        return Check::ok(NAME, seen);
    }
    let failed = found.iter().any(|(status, ..)| *status == Status::Failed);
    let details: Vec<String> = std::iter::once(seen).chain(found.iter().map(|(_, d, _)| d.clone())).collect();
    let fixes: Vec<&str> = found.iter().map(|(_, _, f)| f.as_str()).collect();
    match failed {
        true => Check::failed(NAME, details.join("; "), fixes.join("; ")),
        false => Check::warning(NAME, details.join("; "), fixes.join("; ")),
    }
}

/// What the manager's state says is wrong, if anything.
fn state_finding(
    name: &str,
    observed: &crate::service::Observed,
    daemon_pid: Option<u32>,
    logs: &str,
) -> Option<(Status, String, String)> {
    if observed.has_failed() {
        return Some((
            Status::Failed,
            format!("{name} failed to keep the daemon running"),
            format!("{logs} shows why; once it is fixed, `relay start` starts it again"),
        ));
    }
    if observed.is_running() {
        return None;
    }
    Some(match daemon_pid {
        Some(pid) => (
            Status::Warning,
            format!("{name} is stopped, and the daemon (pid {pid}) runs outside it: nothing restarts it if it fails"),
            "`relay stop && relay start` runs it under the service".into(),
        ),
        None => (Status::Warning, format!("{name} is stopped"), "`relay start` starts it".into()),
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::service::{Manager, Observed};

    fn survey(observed: Option<Observed>, linger: Option<bool>) -> Survey {
        Survey {
            manager: Manager::Systemd,
            name: "relay.service".into(),
            path: PathBuf::from("/home/ana/.config/systemd/user/relay.service"),
            home: PathBuf::from("/home/ana/.relay-agent"),
            installed: true,
            current: Some(true),
            enabled: Some(true),
            observed,
            unreachable: None,
            linger,
            user: Some("ana".into()),
        }
    }

    fn observed(state: &str, sub: &str, pid: Option<u32>) -> Option<Observed> {
        Some(Observed { enabled: true, state: state.into(), sub_state: Some(sub.into()), pid, last_failure: None })
    }

    fn judged(survey: &Survey, daemon: Option<u32>) -> Check {
        judge(survey, daemon, "`journalctl --user -u relay.service -n 30`", Path::new("/usr/bin/relay"))
    }

    #[test]
    fn a_running_service_with_lingering_is_ok_and_without_it_a_warning() {
        let ok = judged(&survey(observed("active", "running", Some(7)), Some(true)), Some(7));
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert!(ok.detail.contains("active (running, pid 7)") && ok.detail.contains("lingering on"), "{ok:?}");
        let off = judged(&survey(observed("active", "running", Some(7)), Some(false)), Some(7));
        assert_eq!(off.status, Status::Warning);
        assert!(off.fix.unwrap().contains("loginctl enable-linger ana"));
    }

    #[test]
    fn a_failed_service_fails_and_points_at_its_journal() {
        let mut failed = observed("failed", "failed", None);
        failed.as_mut().unwrap().last_failure = Some("exited with status 1".into());
        let check = judged(&survey(failed, Some(true)), None);
        assert_eq!(check.status, Status::Failed, "{check:?}");
        assert!(check.detail.contains("last run: exited with status 1"), "{check:?}");
        assert!(check.fix.unwrap().contains("journalctl --user -u relay.service"));
    }

    #[test]
    fn a_daemon_outside_a_stopped_service_is_said() {
        let check = judged(&survey(observed("inactive", "dead", None), None), Some(99));
        assert_eq!(check.status, Status::Warning, "{check:?}");
        assert!(check.detail.contains("runs outside it") && check.fix.unwrap().contains("relay stop && relay start"));
    }

    #[test]
    fn an_unreachable_manager_and_an_old_file_are_both_said() {
        let mut stale = survey(None, None);
        stale.unreachable = Some("Failed to connect to bus".into());
        stale.current = Some(false);
        let check = judged(&stale, None);
        assert_eq!(check.status, Status::Warning, "{check:?}");
        assert!(check.detail.contains("cannot be reached") && check.detail.contains("is not what this relay"));
        assert!(check.fix.unwrap().contains("`relay service install` rewrites it"));
    }

    #[test]
    fn not_installed_is_ok_and_names_the_command() {
        let mut none = survey(None, None);
        none.installed = false;
        let check = judged(&none, None);
        assert_eq!(check.status, Status::Ok);
        assert!(check.detail.contains("relay service install"), "{check:?}");
    }
}
