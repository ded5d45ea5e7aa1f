use std::path::{Path, PathBuf};

use super::*;
use crate::home::Home;

fn places() -> Places {
    Places { user_home: PathBuf::from("/home/ana"), config_dir: PathBuf::from("/home/ana/.config") }
}

fn service(home: &str, manager: Manager) -> Service {
    Service::of(&Home::at(home), Path::new("/home/ana/.relay-agent"), &places(), manager)
}

#[test]
fn the_default_home_is_relay_and_any_other_home_has_a_name_of_its_own() {
    let default = service("/home/ana/.relay-agent", Manager::Systemd);
    assert_eq!(default.name, "relay.service");
    assert_eq!(default.path, Path::new("/home/ana/.config/systemd/user/relay.service"));
    let other = service("/srv/relay-a", Manager::Systemd);
    assert!(other.name.starts_with("relay-") && other.name.ends_with(".service"), "{}", other.name);
    assert_eq!(other.name.len(), "relay-12345678.service".len());
    // Stable: the same home always has the same name, another home another.
    assert_eq!(other.name, service("/srv/relay-a", Manager::Systemd).name);
    assert_ne!(other.name, service("/srv/relay-b", Manager::Systemd).name);
    // Pinned, so a build that hashes differently cannot orphan installed units.
    assert_eq!(stem(Path::new("/srv/relay-a"), Path::new("/x")), "relay-494887a3");
    let mac = service("/Users/ana/.relay-agent", Manager::Launchd);
    assert!(mac.name.starts_with("relay-") && !mac.name.contains('.'), "{}", mac.name);
    assert!(mac.path.ends_with(format!("Library/LaunchAgents/{}.plist", mac.name)), "{}", mac.path.display());
    assert_eq!(
        service("/home/ana/.relay-agent", Manager::Launchd).path,
        Path::new("/home/ana/Library/LaunchAgents/relay.plist")
    );
}

#[test]
fn the_unit_runs_this_relay_for_this_home_and_restarts_it_on_failure_only() {
    let unit = service("/srv/relay home", Manager::Systemd).render(Path::new("/opt/relay/bin/relay")).unwrap();
    let lines: Vec<&str> = unit.lines().collect();
    for wanted in [
        "[Unit]",
        "Description=relay daemon (home /srv/relay home)",
        "StartLimitIntervalSec=600",
        "StartLimitBurst=5",
        "[Service]",
        "Type=exec",
        "Environment=\"RELAY_HOME=/srv/relay home\"",
        "ExecStart=\"/opt/relay/bin/relay\" daemon",
        "Restart=on-failure",
        "RestartSec=10",
        "RestartPreventExitStatus=2 6",
        "[Install]",
        "WantedBy=default.target",
    ] {
        assert!(lines.contains(&wanted), "no {wanted:?} in:\n{unit}");
    }
    // Sections in order, each key once.
    let at = |line: &str| lines.iter().position(|l| *l == line).unwrap();
    assert!(at("[Unit]") < at("[Service]") && at("[Service]") < at("[Install]"));
    let keys: Vec<&str> =
        lines.iter().filter(|l| !l.starts_with('#')).filter_map(|l| l.split_once('=')).map(|(k, _)| k).collect();
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "{unit}");
}

#[test]
fn what_a_unit_would_read_as_a_specifier_a_variable_or_a_quote_is_escaped() {
    let unit = service("/srv/50%\"off\"/a\\b", Manager::Systemd).render(Path::new("/opt/$HOME/re lay")).unwrap();
    assert!(unit.contains("Environment=\"RELAY_HOME=/srv/50%%\\\"off\\\"/a\\\\b\"\n"), "{unit}");
    assert!(unit.contains("ExecStart=\"/opt/$$HOME/re lay\" daemon\n"), "{unit}");
    assert!(unit.contains("Description=relay daemon (home /srv/50%%\"off\"/a\\b)\n"), "{unit}");
}

#[test]
fn a_path_no_service_file_can_hold_is_refused() {
    let unit = service("/srv/a\nExecStartPre=/bin/evil", Manager::Systemd);
    let refused = unit.render(Path::new("/opt/relay")).unwrap_err();
    assert!(refused.contains("control character"), "{refused}");
    let relative = service("/srv/a", Manager::Launchd).render(Path::new("target/relay")).unwrap_err();
    assert!(relative.contains("not an absolute path"), "{relative}");
}

#[test]
fn the_plist_runs_this_relay_for_this_home_and_restarts_it_unless_it_exited_cleanly() {
    let plist = service("/Users/a&b/<relay>", Manager::Launchd).render(Path::new("/opt/relay")).unwrap();
    for wanted in [
        "\t<key>Label</key>\n\t<string>relay-",
        "<array>\n\t\t<string>/opt/relay</string>\n\t\t<string>daemon</string>\n\t\t<string>--quiet</string>\n\t</array>",
        "<key>RELAY_HOME</key>\n\t\t<string>/Users/a&amp;b/&lt;relay&gt;</string>",
        "<key>RunAtLoad</key>\n\t<true/>",
        "<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>",
        "<key>ThrottleInterval</key>\n\t<integer>10</integer>",
        "<string>/Users/a&amp;b/&lt;relay&gt;/daemon.stderr</string>",
    ] {
        assert!(plist.contains(wanted), "no {wanted:?} in:\n{plist}");
    }
    // Well-formed enough for launchd: every element that opens closes.
    for tag in ["plist", "dict", "array"] {
        assert_eq!(plist.matches(&format!("<{tag}")).count(), plist.matches(&format!("</{tag}>")).count(), "{tag}");
    }
    assert!(!plist.split("<!--").nth(1).unwrap().split("-->").next().unwrap().contains("--"), "a comment holds --");
}

#[test]
fn systemctl_show_is_read_into_what_the_service_is_doing() {
    let running = systemd::parse_show(
        "UnitFileState=enabled\nActiveState=active\nSubState=running\nMainPID=4242\nResult=success\nExecMainCode=0\nExecMainStatus=0\n",
    );
    assert!(running.enabled && running.is_running() && !running.has_failed());
    assert_eq!(running.describe(), "active (running, pid 4242)");
    let failed = systemd::parse_show(
        "UnitFileState=enabled\nActiveState=failed\nSubState=failed\nMainPID=0\nResult=exit-code\nExecMainCode=1\nExecMainStatus=2\n",
    );
    assert!(failed.has_failed() && !failed.is_running());
    assert_eq!(failed.describe(), "failed; last run: exited with status 2");
    let waiting = systemd::parse_show(
        "UnitFileState=enabled\nActiveState=activating\nSubState=auto-restart\nMainPID=0\nResult=signal\nExecMainStatus=9\n",
    );
    assert!(waiting.has_failed() && !waiting.is_running());
    assert_eq!(waiting.describe(), "activating (auto-restart); last run: killed by signal 9");
    let unknown =
        systemd::parse_show("UnitFileState=\nActiveState=inactive\nSubState=dead\nMainPID=0\nResult=success\n");
    assert!(!unknown.enabled && !unknown.is_running() && !unknown.has_failed());
    assert_eq!(unknown.describe(), "inactive (dead)");
}

#[test]
fn launchctl_print_is_read_into_what_the_agent_is_doing() {
    let printed = "gui/501/relay = {\n\tactive count = 1\n\tpath = /Users/a/Library/LaunchAgents/relay.plist\n\tstate = running\n\n\tprogram = /opt/relay\n\tpid = 812\n\tlast exit code = (never exited)\n\tendpoints = {\n\t\tstate = x\n\t}\n}\n";
    let seen = launchd::parse_print(printed);
    assert_eq!((seen.state.as_str(), seen.pid, seen.last_failure.clone()), ("running", Some(812), None));
    assert!(seen.is_running());
    let crashed = launchd::parse_print("gui/501/relay = {\n\tstate = waiting\n\tlast exit code = 1\n}\n");
    assert_eq!(crashed.describe(), "waiting; last run: exit code 1");
}
