//! The docs show what this build prints. Captured output in README.md and
//! docs/ is compared with a fresh run of the real binary, with what changes
//! from run to run (times, ids, ports, paths) masked, so a change to a view
//! that leaves the docs behind fails here. docs/cli.md is rendered from the
//! clap definitions, the configuration page holds every setting, and every
//! relative link resolves.

use crate::support::*;

/// `text` with what differs between two runs masked: UUIDs become `<id>`,
/// cursors `<cursor>`, every run of digits `#`, the demo's home `<home>`;
/// trailing spaces go.
fn masked(text: &str) -> String {
    let cursor = regex::Regex::new(r"-?[0-9]{1,19}\.[0-9a-f]{32}").unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut line = line.to_string();
        if let Some(at) = line.find("/tmp/relay-demo-") {
            let end = line[at..].find(' ').map_or(line.len(), |n| at + n);
            line.replace_range(at..end, "<home>");
        }
        // A page's cursor (`relay list --limit 1`): a time and an id.
        let line = cursor.replace_all(&line, "<cursor>").into_owned();
        // Short ids (`relay list`): eight hex digits as a word, letters only
        // too (one id in 2,500 is: "ebbbefbd" failed a CI run).
        let line: String = line
            .split(' ')
            .map(|word| {
                let hex = word.len() == 8 && word.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                if hex { "<short id>" } else { word }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let chars: Vec<char> = line.chars().collect();
        let mut masked = String::new();
        let mut i = 0;
        while i < chars.len() {
            let candidate: String = chars[i..chars.len().min(i + 36)].iter().collect();
            if uuid::Uuid::try_parse(&candidate).is_ok() && candidate.len() == 36 {
                masked.push_str("<id>");
                i += 36;
            } else if chars[i].is_ascii_digit() {
                masked.push('#');
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            } else {
                masked.push(chars[i]);
                i += 1;
            }
        }
        out.push_str(without_durations(&masked).trim_end());
        out.push('\n');
    }
    out
}

/// The fenced block that follows `marker` in `doc`.
fn block_after<'a>(doc: &'a str, marker: &str) -> &'a str {
    let at = doc.find(marker).unwrap_or_else(|| panic!("the doc has no {marker:?}"));
    let start = doc[at..].find("```text\n").map(|n| at + n + "```text\n".len()).expect("a ```text block");
    let end = doc[start..].find("```").map(|n| start + n).expect("the block ends");
    &doc[start..end]
}

/// A file of the repository, as text.
fn doc(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

#[test]
fn the_demo_page_is_what_relay_demo_prints() {
    let page = doc("docs/demo.md");
    let captured = block_after(&page, "Captured from this build:");
    let relay = Relay::uninitialised();
    // The capture was taken in UTC; times show their zone.
    let run = relay.command(&["demo"]).env("TZ", "UTC").output().unwrap();
    assert!(run.status.success(), "relay demo failed: {}", String::from_utf8_lossy(&run.stderr));
    let printed = String::from_utf8(run.stdout).unwrap();
    assert_eq!(
        masked(captured),
        masked(&printed),
        "docs/demo.md's capture is not what `relay demo` prints now: paste a fresh run of \
         `cargo run -- demo` into docs/demo.md (under \"Captured from this build:\")"
    );
}

/// Every setting of config.json's `agent`, `webhooks`, `delivery`,
/// `budget` and `media` sections, and WhatsApp's read receipts and presence,
/// has a row in docs/configuration.md's table, with the default this build
/// uses; so does every key a `model` or `media.transcription` section can
/// hold (their defaults depend on the provider or server, but for the
/// transcription's timeout).
#[test]
fn the_configuration_page_has_every_setting_and_its_default() {
    let readme = doc("docs/configuration.md");
    let config = serde_json::to_value(relay::config::Config::new(relay::config::ChannelKind::Sandbox)).unwrap();
    let mut missing = Vec::new();
    for section in ["agent", "webhooks", "delivery", "budget", "media", "http"] {
        for (key, default) in config[section].as_object().unwrap() {
            let row = format!("| `{section}.{key}` | {default} |");
            if !readme.contains(&row) {
                missing.push(row);
            }
        }
    }
    for key in ["read_receipts", "presence"] {
        let row = format!("| `whatsapp.{key}` | {} |", config["whatsapp"][key]);
        if !readme.contains(&row) {
            missing.push(row);
        }
    }
    let model = relay::config::ModelConfig {
        base_url: Some("u".into()),
        api_key_env: Some("V".into()),
        api_key: Some("k".into()),
        tool_calls: Some(relay::config::ToolCalls::Native),
        temperature: Some(0.2),
        max_output_tokens: Some(1),
        request_timeout_secs: Some(1),
        vision: Some(true),
        ..relay::config::ModelConfig::new(relay::config::Provider::Openai, "m")
    };
    let transcription = relay::config::TranscriptionConfig {
        api_key_env: Some("V".into()),
        api_key: Some("k".into()),
        language: Some("es".into()),
        ..relay::config::TranscriptionConfig::new("u", "m")
    };
    let keys = |section: &str, value: serde_json::Value| -> Vec<String> {
        value.as_object().unwrap().keys().map(|key| format!("{section}.{key}")).collect()
    };
    let every = keys("model", serde_json::to_value(model).unwrap())
        .into_iter()
        .chain(keys("media.transcription", serde_json::to_value(&transcription).unwrap()));
    for key in every {
        let row = format!("| `{key}` |");
        if !readme.contains(&row) {
            missing.push(row);
        }
    }
    let timeout = format!("| `media.transcription.request_timeout_secs` | {} |", transcription.request_timeout_secs);
    if !readme.contains(&timeout) {
        missing.push(timeout);
    }
    assert!(
        missing.is_empty(),
        "docs/configuration.md's table lacks these rows (or their defaults changed):\n{}",
        missing.join("\n")
    );
}

/// The limits docs/operator.md states are the ones the daemon enforces.
#[test]
fn the_stated_limits_are_the_daemons() {
    use relay::api::limits::*;
    let readme = doc("docs/operator.md");
    let thousands = |n: usize| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let stated = format!(
        "Limits: objective up to {} characters; 1 to {MAX_TODOS} todos of up to {}\ncharacters; messages up to {} characters; heartbeat interval from {} to\n{}; `--max-followups` from 0 to {MAX_FOLLOWUPS}.",
        thousands(MAX_OBJECTIVE_CHARS),
        thousands(MAX_TODO_CHARS),
        thousands(MAX_MESSAGE_CHARS),
        relay::duration::format(MIN_HEARTBEAT),
        relay::duration::format(MAX_HEARTBEAT),
    );
    assert!(readme.contains(&stated), "docs/operator.md should say:\n{stated}");
}

/// `line` (digits already masked) with durations such as `#m #s`, `#m#s`,
/// `#h` written `<duration>`: an uptime or a time left varies in shape too.
fn without_durations(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let unit = |at: usize| {
            bytes.get(at) == Some(&b'#')
                && matches!(bytes.get(at + 1), Some(b'h' | b'm' | b's' | b'd'))
                && !bytes.get(at + 2).is_some_and(|b| b.is_ascii_alphabetic())
        };
        if unit(i) {
            let mut end = i + 2;
            loop {
                let next = if bytes.get(end) == Some(&b' ') { end + 1 } else { end };
                if unit(next) {
                    end = next + 2;
                } else {
                    break;
                }
            }
            out.push_str("<duration>");
            i = end;
        } else {
            let c = line[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// A shell session in the docs: each `$ command` (with its `\`
/// continuation lines) and what it printed.
struct Session {
    steps: Vec<(String, String)>,
}

impl Session {
    fn parse(block: &str) -> Session {
        let mut steps: Vec<(String, String)> = Vec::new();
        let mut lines = block.lines().peekable();
        while let Some(line) = lines.next() {
            if let Some(command) = line.strip_prefix("$ ") {
                let mut command = command.to_string();
                while command.ends_with('\\') {
                    command.push('\n');
                    command.push_str(lines.next().expect("a continuation line"));
                }
                steps.push((command, String::new()));
            } else if let Some((_, printed)) = steps.last_mut() {
                printed.push_str(line);
                printed.push('\n');
            }
        }
        for (_, printed) in &mut steps {
            *printed = printed.trim_end().to_string();
        }
        Session { steps }
    }

    /// The block again, with `printed` as each step's output.
    fn render(&self, printed: &[String]) -> String {
        let mut out = String::new();
        for ((command, _), printed) in self.steps.iter().zip(printed) {
            out.push_str(&format!("$ {command}\n"));
            for line in printed.lines() {
                out.push_str(line.trim_end());
                out.push('\n');
            }
            out.push('\n');
        }
        out.trim_end().to_string() + "\n"
    }

    /// Runs every step in one shell, `relay` being this build, on a fresh
    /// home and port shown as `home` and `port`; returns what each printed.
    fn run(&self, home_shown: &str, port_shown: &str) -> Vec<String> {
        let home = tempfile::tempdir().unwrap();
        let port = free_port().to_string();
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_relay")).parent().unwrap().to_path_buf();
        let mut script = String::from("exec 2>&1\n");
        for (n, (command, _)) in self.steps.iter().enumerate() {
            script.push_str(&format!("echo '@@step {n}'\n{command}\n"));
        }
        let output = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
            .env("RELAY_HOME", home.path())
            .env("RELAY_PORT", &port)
            .env("TZ", "UTC")
            .env_remove("RELAY_LOG")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout)
            .replace(&home.path().display().to_string(), home_shown)
            .replace(&port, port_shown);
        let mut printed = vec![String::new(); self.steps.len()];
        let mut current = None;
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("@@step ") {
                current = Some(n.parse::<usize>().unwrap());
            } else if let Some(n) = current {
                printed[n].push_str(line);
                printed[n].push('\n');
            }
        }
        printed.iter().map(|p| p.trim_end().to_string()).collect()
    }
}

/// The session in `path` that follows `marker` is what this build prints,
/// step by step, run on a fresh home and port shown as `home` and `port`.
/// `RELAY_REFRESH_DOCS=1 cargo test --test it docs::` writes a fresh
/// capture into the page.
fn check_session(path: &str, marker: &str, home: &str, port: &str, at_least: usize) {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let page = doc(path);
    let block = block_after(&page, marker);
    let session = Session::parse(block);
    assert!(session.steps.len() >= at_least, "{path}'s session has its steps");
    let printed = session.run(home, port);
    if std::env::var_os("RELAY_REFRESH_DOCS").is_some() {
        let fresh = page.replacen(block, &session.render(&printed), 1);
        std::fs::write(full, fresh).unwrap();
        return;
    }
    for ((command, captured), printed) in session.steps.iter().zip(&printed) {
        assert_eq!(
            masked(captured),
            masked(printed),
            "{path}'s session differs at `$ {command}`: refresh it with RELAY_REFRESH_DOCS=1 cargo test --test it docs::"
        );
    }
}

/// docs/operator.md's session "captured from this build".
#[test]
fn the_operator_session_is_what_this_build_prints() {
    check_session("docs/operator.md", "A session captured from this build", "/tmp/docs-ex", "3577", 10);
}

/// docs/models.md's status with a model whose key is missing.
#[test]
fn the_model_failure_session_is_what_this_build_prints() {
    check_session(
        "docs/models.md",
        "Captured from this build, with `ANTHROPIC_API_KEY` unset:",
        "~/.relay-agent",
        "3214",
        4,
    );
}

/// README's quick start on the sandbox, as a new user runs it.
#[test]
fn the_readme_quick_start_is_what_this_build_prints() {
    check_session("README.md", "Captured from this build, on a fresh home:", "~/.relay-agent", "3214", 6);
}

/// docs/state-machine.md's transition table is `fsm::TABLE`, row for row
/// and in its order, with each addition marked and the count right: a row
/// added to the code and not to the doc (or the other way) fails here.
#[test]
fn the_state_machine_doc_has_every_row_of_the_table() {
    use relay::fsm::{TABLE, Target};
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/state-machine.md")).unwrap();
    let section = &doc[doc.find("## The transition table").unwrap()..doc.find("## Additions to the seeds").unwrap()];
    let documented: Vec<(String, String, String, bool)> = section
        .lines()
        .filter(|l| {
            l.starts_with("| ") && l.split('|').nth(1).is_some_and(|c| c.trim().starts_with(char::is_uppercase))
        })
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[2].trim_matches('`').to_string(), cells[3].to_string(), cells[4] == "addition")
        })
        .collect();
    let coded: Vec<(String, String, String)> = TABLE
        .iter()
        .map(|(from, event, target)| {
            let to = match target {
                Target::To(state) => state.to_string(),
                Target::Previous => "`previous_state`".to_string(),
                Target::Stay => "stays".to_string(),
            };
            (from.to_string(), event.as_str().to_string(), to)
        })
        .collect();
    let rows: Vec<(String, String, String)> =
        documented.iter().map(|(f, e, t, _)| (f.clone(), e.clone(), t.clone())).collect();
    assert_eq!(rows, coded, "docs/state-machine.md's table is not fsm::TABLE, in its order");
    let additions = documented.iter().filter(|row| row.3).count();
    let stated = format!("{} rows: the seeds' {} and {additions} additions.", coded.len(), coded.len() - additions);
    assert!(doc.contains(&stated), "docs/state-machine.md should say: {stated}");
}

/// docs/cli.md is what the clap definitions render (`relay::cli::reference`):
/// a flag, a help text or an example changed in src/cli/ and not in the
/// page fails here. `RELAY_REFRESH_DOCS=1 cargo test --test it docs::`
/// rewrites it.
#[test]
fn the_cli_reference_is_what_the_clap_definitions_render() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md");
    let fresh = relay::cli::reference::markdown();
    if std::env::var_os("RELAY_REFRESH_DOCS").is_some() {
        std::fs::write(path, &fresh).unwrap();
        return;
    }
    let page = std::fs::read_to_string(path).unwrap_or_default();
    if page != fresh {
        let at = page
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(page.lines().count().min(fresh.lines().count()));
        panic!(
            "docs/cli.md is not what the clap definitions in src/cli/ render (first difference at line {}: {:?}, \
             rendered {:?}): regenerate it with RELAY_REFRESH_DOCS=1 cargo test --test it docs::",
            at + 1,
            page.lines().nth(at).unwrap_or(""),
            fresh.lines().nth(at).unwrap_or("")
        );
    }
}

/// The Markdown files whose links are checked: README.md, everything in
/// docs/, the example home's README and the skill.
fn markdown_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files =
        vec![root.join("README.md"), root.join(".relay-agent.example/README.md"), root.join("src/cli/skill.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `text` without its fenced code blocks and code spans: links there are
/// not links.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            let spans: Vec<&str> = line.split('`').collect();
            // An odd part is inside a code span (when the backticks pair up).
            let paired = spans.len() % 2 == 1;
            for (n, part) in spans.iter().enumerate() {
                if n % 2 == 0 || !paired {
                    out.push_str(part);
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The anchors of a Markdown page's headings, as GitHub makes them (a
/// repeated heading gets `-1`, `-2`, ...).
fn anchors(text: &str) -> std::collections::HashSet<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut anchors = std::collections::HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        let slug = relay::cli::reference::slug(heading);
        let n = seen.entry(slug.clone()).or_insert(0);
        anchors.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    anchors
}

/// Every relative link in the docs reaches a file that is there, and an
/// anchor a heading that is there (a page renamed or a heading reworded
/// leaves no dead link behind).
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let inline = regex::Regex::new(r#"\]\(([^)\s]+)(?:\s+"[^"]*")?\)"#).unwrap();
    let reference = regex::Regex::new(r"(?m)^\[[^\]]+\]:\s*(\S+)").unwrap();
    let mut dead = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let prose = prose(&text);
        let targets = inline.captures_iter(&prose).chain(reference.captures_iter(&prose)).map(|c| c[1].to_string());
        for target in targets {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').map_or((target.as_str(), None), |(p, a)| (p, Some(a)));
            let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let shown = file.strip_prefix(root).unwrap().display().to_string();
            if !resolved.exists() {
                dead.push(format!("{shown}: {target} (no such file)"));
                continue;
            }
            if let Some(anchor) = anchor.filter(|_| resolved.extension().is_some_and(|e| e == "md")) {
                let page = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&page).contains(anchor) {
                    dead.push(format!("{shown}: {target} (no such heading)"));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} links found: is the pattern right?");
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

/// docs/cli.md (rendered from the clap definitions, and kept in step by
/// the test above) has a section for every command `relay --help` lists.
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

/// docs/conduct.md lists every built-in scenario, and its example file is
/// one relay reads.
#[test]
fn the_conduct_doc_lists_every_scenario_and_its_example_parses() {
    let root = env!("CARGO_MANIFEST_DIR");
    let doc = std::fs::read_to_string(format!("{root}/docs/conduct.md")).unwrap();
    for entry in std::fs::read_dir(format!("{root}/scenarios")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap();
        assert!(doc.contains(&format!("| `{name}` |")), "docs/conduct.md lacks a row for scenario {name}");
    }
    let example = doc.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    let dir = scenarios(&[("example", example)]);
    let relay = Relay::uninitialised();
    let args = ["eval", "--provider", "ollama", "--model", "m", "--scenarios", dir.path().to_str().unwrap()];
    let error = relay.fails(&[&args[..], &["--only", "none"]].concat(), 2);
    assert!(error.contains("there are: example"), "the example does not parse: {error}");
}
