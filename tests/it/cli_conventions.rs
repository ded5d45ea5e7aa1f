//! What a shell, a packager and a service manager expect of a CLI: shell
//! completions, the version as JSON, a foreground daemon that logs to
//! stderr; and `relay skill`, the SKILL.md a coding agent reads, whose every
//! command must be one relay has.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::support::*;

/// The subcommands `relay --help` lists (its "Commands:" section).
fn subcommands(relay: &Relay) -> Vec<String> {
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

#[test]
fn completions_are_generated_for_each_shell_and_name_every_command() {
    let relay = Relay::uninitialised();
    let commands = subcommands(&relay);
    assert!(commands.len() > 20 && commands.contains(&"completions".to_string()), "{commands:?}");
    for shell in ["bash", "zsh", "fish"] {
        let script = relay.ok(&["completions", shell]);
        assert!(script.len() > 1000, "{shell}: {script}");
        for command in &commands {
            assert!(script.contains(command.as_str()), "{shell}'s script does not name `relay {command}`");
        }
        // Flags too: the script is made from the same definitions.
        assert!(script.contains("idempotency-key"), "{shell}");
    }
    // fish's is fish: one `complete -c relay` line per completion.
    assert!(relay.ok(&["completions", "fish"]).contains("complete -c relay"));
    // With --json: one document holding the same script.
    let json = relay.json(&["completions", "bash"]);
    assert_eq!(json["shell"], "bash");
    assert_eq!(json["script"].as_str().unwrap(), relay.ok(&["completions", "bash"]));

    // A shell clap_complete does not know is clap's usage error, naming the choices.
    let stderr = relay.fails(&["completions", "tcsh"], 2);
    assert!(stderr.contains("invalid value 'tcsh'") && stderr.contains("bash"), "{stderr}");
    let stderr = relay.fails(&["completions"], 2);
    assert!(stderr.contains("<SHELL>"), "{stderr}");
}

/// Completions (and the skill, and the version) need no home: a package
/// build generates them where HOME is not even set.
#[test]
fn completions_skill_and_version_need_no_home() {
    for args in [&["completions", "zsh"][..], &["skill"][..], &["version"][..]] {
        let run: Run =
            std::process::Command::new(env!("CARGO_BIN_EXE_relay")).args(args).env_clear().output().unwrap().into();
        assert_eq!(run.code, 0, "relay {args:?}: {}", run.stderr);
        assert!(!run.stdout.is_empty(), "relay {args:?}");
    }
}

#[test]
fn the_version_as_json() {
    let relay = Relay::uninitialised();
    let expected = serde_json::json!({
        "name": "relay",
        "version": env!("CARGO_PKG_VERSION"),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
    });
    for args in [&["--version", "--json"][..], &["--json", "--version"], &["version", "--json"], &["--json", "version"]]
    {
        let out = relay.ok(args);
        let version: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("relay {args:?}: not one JSON document ({e}): {out}"));
        assert_eq!(version, expected, "relay {args:?}");
    }
    // Without --json, clap's line as before, and `relay version` says the same.
    let plain = format!("relay {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(relay.ok(&["--version"]), plain);
    assert_eq!(relay.ok(&["-V"]), plain);
    assert_eq!(relay.ok(&["version"]), plain);
}

/// Reads `child`'s stderr on a thread, line by line, into a channel: the
/// test waits for the line it needs, not for a time.
fn stderr_lines(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if send.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    lines
}

/// Collects lines until one contains `wanted`; panics after a generous deadline.
fn until_line(lines: &mpsc::Receiver<String>, wanted: &str, seen: &mut Vec<String>) {
    loop {
        match lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => {
                let found = line.contains(wanted);
                seen.push(line);
                if found {
                    return;
                }
            }
            Err(e) => panic!("no stderr line with {wanted:?} ({e}); stderr so far:\n{}", seen.join("\n")),
        }
    }
}

#[test]
fn a_foreground_daemon_logs_to_stderr_as_well_as_relay_log() {
    let relay = Relay::sandbox();
    let mut daemon = relay.command(&["daemon"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let lines = stderr_lines(&mut daemon);
    let mut seen = Vec::new();
    until_line(&lines, "daemon started", &mut seen);
    // It serves: the line is the daemon's word, and so is its answer.
    let (status, body) = raw_http(relay.port, "GET", "/health", &[("Host", &format!("127.0.0.1:{}", relay.port))], b"");
    assert_eq!(status, 200, "{body}");
    // Something that logs, to check the ordinary lines come too.
    let token = relay.token();
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    until_line(&lines, "daemon stopped", &mut seen);
    let status = daemon.wait().unwrap();
    assert!(status.success(), "{status:?}");
    seen.extend(lines.iter());
    let stderr = seen.join("\n");
    assert!(stderr.contains("stopping") && stderr.contains("SIGTERM"), "{stderr}");
    // Plain text for a journal: no colour escapes.
    assert!(!stderr.contains('\x1b'), "{stderr}");
    // What is logged is what relay.log has, no more: never the API token.
    assert!(!stderr.contains(&token), "the API token reached stderr:\n{stderr}");
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    for line in &seen {
        assert!(log.contains(line.as_str()), "on stderr but not in relay.log: {line}");
    }
}

/// `relay start` runs it quiet: its log is relay.log, and daemon.stderr
/// (where `relay start` looks for why a daemon did not start) stays empty.
#[test]
fn a_started_daemon_logs_to_relay_log_only() {
    let relay = Relay::started();
    relay.ok(&["stop"]);
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    assert!(log.contains("daemon started") && log.contains("daemon stopped"), "{log}");
    let stderr = std::fs::read_to_string(relay.path().join("daemon.stderr")).unwrap();
    assert_eq!(stderr, "", "daemon.stderr");
}

/// The commands a text names in code: each inline code span and each line
/// of a code block (with `\` continuations joined) that runs `relay`, as the
/// subcommand words after it (up to the first argument that is not a
/// lowercase word: an id, a number, a quoted value) and the flags it gives.
fn relay_commands(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut code = Vec::new();
    for (i, part) in text.split("```").enumerate() {
        if i % 2 == 1 {
            code.extend(part.replace("\\\n", " ").lines().skip(1).map(str::to_string));
        } else {
            code.extend(part.split('`').skip(1).step_by(2).map(|span| span.replace('\n', " ")));
        }
    }
    let mut commands = Vec::new();
    for snippet in code {
        // A shell comment is prose, not a command.
        let tokens: Vec<&str> = snippet.split_whitespace().take_while(|t| !t.starts_with('#')).collect();
        for (at, token) in tokens.iter().enumerate() {
            // `relay`, or `ID=$(relay` in a command substitution.
            if token.rsplit("$(").next() != Some("relay") {
                continue;
            }
            let args = &tokens[at + 1..];
            let words = args
                .iter()
                .take_while(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                .take_while(|t| !t.starts_with('-'))
                .map(|t| t.to_string())
                .collect();
            let flags = args
                .iter()
                .filter(|t| t.starts_with("--"))
                .map(|t| t.split('=').next().unwrap().trim_end_matches([')', ',', '.', ':']).to_string())
                .collect();
            commands.push((words, flags));
        }
    }
    commands
}

#[test]
fn every_command_the_skill_names_exists() {
    let relay = Relay::uninitialised();
    let skill = relay.ok(&["skill"]);
    assert!(skill.starts_with("---\nname: relay\ndescription: "), "SKILL.md's front matter: {skill}");
    for must in ["untrusted_contact_text", "role: \"contact\"", "relay create", "relay wait", "relay get", "opted_out"]
    {
        assert!(skill.contains(must), "the skill does not mention {must}");
    }
    let commands = relay_commands(&skill);
    let named: BTreeSet<&str> = commands.iter().filter_map(|(words, _)| words.first().map(String::as_str)).collect();
    for core in ["create", "wait", "get", "answer", "send", "resume", "cancel", "optout", "start", "status"] {
        assert!(named.contains(core), "the skill names no `relay {core}`: {named:?}");
    }
    let mut helps = Vec::new();
    for (words, flags) in &commands {
        let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
        args.push("--help");
        let run = relay.run(&args);
        assert_eq!(
            run.code,
            0,
            "the skill names `relay {}`, which relay does not have: {}",
            words.join(" "),
            run.stderr
        );
        for flag in flags {
            assert!(
                run.stdout.contains(&format!("{flag} ")) || run.stdout.contains(&format!("{flag}\n")),
                "the skill gives `relay {}` the flag {flag}, which it does not take",
                words.join(" ")
            );
        }
        helps.push(run.stdout);
    }
    // A flag in code on its own (`--idempotency-key`) is one some command it names takes.
    for span in skill.split('`').skip(1).step_by(2) {
        if let Some(flag) = span.split_whitespace().next().filter(|t| t.starts_with("--")) {
            assert!(helps.iter().any(|help| help.contains(flag)), "the skill mentions {flag}, which no command takes");
        }
    }
}

#[test]
fn the_parser_finds_commands_in_spans_and_blocks() {
    let text = "Run `relay optout add +569 --reason \"x\"` or\n```sh\nID=$(relay create --objective o \\\n  --todo t)\nrelay wait \"$ID\" --json # then relay get\n```\nand `relay get\n--json`.";
    let found = relay_commands(text);
    let found: Vec<(String, String)> = found.into_iter().map(|(w, f)| (w.join(" "), f.join(" "))).collect();
    assert_eq!(
        found,
        [
            ("optout add".to_string(), "--reason".to_string()),
            ("create".to_string(), "--objective --todo".to_string()),
            ("wait".to_string(), "--json".to_string()),
            ("get".to_string(), "--json".to_string()),
        ]
    );
}

#[test]
fn skill_install_writes_dir_relay_skill_md_and_keeps_what_is_there() {
    let relay = Relay::uninitialised();
    let skill = relay.ok(&["skill"]);
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().to_str().unwrap();
    let path = dir.path().join("relay/SKILL.md");

    let out = relay.ok(&["skill", "--install", at]);
    assert!(out.contains(path.to_str().unwrap()), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), skill);

    // Edited by hand: not replaced unless asked.
    std::fs::write(&path, "mine").unwrap();
    let stderr = relay.fails(&["skill", "--install", at], 2);
    assert!(stderr.contains("exists already") && stderr.contains("--force"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
    let installed = relay.json(&["skill", "--install", at, "--force"]);
    assert_eq!(installed["replaced"], true);
    assert_eq!(installed["path"], path.to_str().unwrap());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), skill);

    // A directory that is not there is not made (a typo would install where no agent looks).
    let missing = dir.path().join("no-such-dir");
    let stderr = relay.fails(&["skill", "--install", missing.to_str().unwrap()], 2);
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(!missing.exists());
    let stderr = relay.fails(&["skill", "--install", path.to_str().unwrap()], 2);
    assert!(stderr.contains("is not a directory"), "{stderr}");
    // --force alone is a usage error.
    relay.fails(&["skill", "--force"], 2);
}

#[test]
fn skill_install_where_it_cannot_write_says_so() {
    let relay = Relay::uninitialised();
    let dir = tempfile::tempdir().unwrap();
    // DIR/relay is a file: the folder for the skill cannot be made.
    std::fs::write(dir.path().join("relay"), "").unwrap();
    let stderr = relay.fails(&["skill", "--install", dir.path().to_str().unwrap()], 1);
    assert!(stderr.contains("cannot create") && stderr.contains("relay"), "{stderr}");

    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o500)).unwrap();
    // root writes anywhere: then there is nothing to refuse.
    if std::fs::write(locked.join("probe"), "").is_ok() {
        eprintln!("skipped: this user can write to a read-only directory (root)");
        return;
    }
    let stderr = relay.fails(&["skill", "--install", locked.to_str().unwrap()], 1);
    assert!(stderr.contains("cannot create") && stderr.contains("Permission denied"), "{stderr}");
}

/// docs/cli.md (rendered from the clap definitions, and kept in step by
/// tests/it/docs.rs) has a section for every command `relay --help` lists.
#[test]
fn the_cli_reference_documents_every_command() {
    let relay = Relay::uninitialised();
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap();
    let missing: Vec<String> = subcommands(&relay)
        .into_iter()
        .filter(|command| !page.lines().any(|line| line == format!("## relay {command}")))
        .collect();
    assert!(missing.is_empty(), "docs/cli.md has no section for: {missing:?}");
    assert!(page.contains("relay --version --json"), "docs/cli.md does not mention `relay --version --json`");
}
