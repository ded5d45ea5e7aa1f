//! What a conversation needs, checked (`relay doctor`): one [`Check`] each
//! (ok, warning, failed or skipped) with the fix: the home and its
//! permissions, config.json, the daemon, its service (`relay service
//! install`), the channel and its receipts, the
//! model (one tiny request, and in json_schema mode a second asking for a
//! call through the schema; none offline), disk space and the clock. It
//! changes nothing; printing the report is the command line's.
//!
//! Every check reads what relay itself reads (`Config::load`, the daemon's
//! `/status` and event log, the agent's own provider construction), so it
//! cannot pass where relay would fail for the same reason. What it cannot
//! see it says: the clock is compared with times on this machine only.

mod service;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::api::{DaemonStatusResponse, ErrorCode, EventData, EventsQuery, SendStatus, WaitReason};
use crate::client::{Client, Error};
use crate::clock;
use crate::config::{Config, ConfigError, ModelConfig};
use crate::home::Home;
use crate::util::count;

/// The longest the model may take to answer "OK": its own request timeout
/// (a local model on a CPU may need most of a minute to load), up to this.
const MODEL_TIMEOUT_CAP: Duration = Duration::from_secs(60);
/// The prompt of the model check: no conversation text ever goes out here.
const MODEL_PROMPT: &str = "Reply with OK.";
/// How far back in the event log the receipts check looks.
const RECENT_EVENTS: u64 = 2000;
/// Free space below this: relay soon cannot write its files.
const DISK_WARNING: u64 = 500 * 1000 * 1000;
const DISK_FAILED: u64 = 50 * 1000 * 1000;
/// A clock behind a file's time by more than this has gone backwards.
const CLOCK_SLACK: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warning,
    Failed,
    Skipped,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
        }
    }
}

/// One check: what it looked at, what it found, and what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The model check only: how long the provider took to answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

impl Check {
    fn new(name: &'static str, status: Status, detail: impl Into<String>) -> Check {
        Check { name, status, detail: detail.into(), fix: None, latency_ms: None }
    }
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check::new(name, Status::Ok, detail)
    }
    fn skipped(name: &'static str, detail: impl Into<String>) -> Check {
        Check::new(name, Status::Skipped, detail)
    }
    fn warning(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { fix: Some(fix.into()), ..Check::new(name, Status::Warning, detail) }
    }
    fn failed(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { fix: Some(fix.into()), ..Check::new(name, Status::Failed, detail) }
    }
}

/// Every check, in order, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    /// No check failed (warnings allowed).
    pub ok: bool,
}

impl Report {
    /// The names of the checks that failed.
    pub fn failed(&self) -> Vec<&'static str> {
        self.checks.iter().filter(|c| c.status == Status::Failed).map(|c| c.name).collect()
    }
}

/// Runs every check on `home`, whose daemon is asked on the port the user
/// gave, if any (as `Client::new` does); `offline`: nothing is sent over the
/// network, so the model is not asked.
pub async fn examine(home: &Home, port: Option<u16>, offline: bool) -> Report {
    let config = Config::load(home);
    let daemon = async { Client::new(home, port)?.status().await }.await;
    let mut checks = vec![check_home(home), check_config(home, &config), check_daemon(&daemon)];
    checks.push(service::check_service(home, daemon.as_ref().ok().map(|status| status.pid)));
    match &daemon {
        Ok(status) => {
            checks.push(check_channel(status));
            checks.push(check_receipts(home, port, status).await);
        }
        Err(_) => {
            let why = "not checked: no answer from the daemon (it holds the channel)";
            checks.push(Check::skipped("channel", why));
            checks.push(Check::skipped("receipts", why));
        }
    }
    checks.push(check_courtesy(&config, daemon.as_ref().ok()));
    checks.push(check_model(&config, daemon.as_ref().ok(), offline).await);
    checks.push(check_disk(home));
    checks.push(check_clock(home));
    let ok = !checks.iter().any(|c| c.status == Status::Failed);
    Report { checks, ok }
}

/// relay's care for the people it writes to and the number it writes from:
/// WhatsApp's reach-out lock (from the daemon), and settings that leave a
/// contact less protected than the defaults do.
fn check_courtesy(config: &Result<Config, ConfigError>, status: Option<&DaemonStatusResponse>) -> Check {
    let Ok(config) = config else { return Check::skipped("courtesy", "not checked: config.json cannot be read") };
    let courtesy = &config.courtesy;
    // (what is found, what to do), each said: one may hide no other.
    let mut found: Vec<(String, &str)> = Vec::new();
    if let Some(status) = status
        && let Some(lock) = &status.first_contact.reach_out_lock
    {
        let waiting = status.first_contact.waiting.get(&WaitReason::ReachOutLock).copied().unwrap_or(0);
        found.push((
            format!("{}; conversations waiting for it: {waiting}", lock.describe()),
            "nothing to force: relay asks WhatsApp again when it ends, and replies still go out; write first to \
             fewer people a day (courtesy.max_new_contacts_per_day)",
        ));
    }
    if let Some(empty) = courtesy.no_opt_out_words() {
        found.push((
            empty.into(),
            "remove courtesy.opt_out_words from config.json for the defaults (STOP, BAJA, PARAR, ...), or list the \
             words your contacts use",
        ));
    }
    if courtesy.disclosure_off() {
        found.push((
            "courtesy.disclosure is off: contacts are not told that an automated assistant writes to them".into(),
            "set courtesy.disclosure to the line relay should send: where the contact lives the law may require it \
             (in the EU, the AI Act's Article 50(1))",
        ));
    } else if courtesy.operator_name.is_none() {
        found.push((
            "courtesy.operator_name is not set: the disclosure says the assistant writes for \"the person it works \
             for\""
                .into(),
            "`relay init --operator-name \"Your Name\"`",
        ));
    }
    if !found.is_empty() {
        let (details, fixes): (Vec<String>, Vec<&str>) = found.into_iter().unzip();
        return Check::warning("courtesy", details.join("; "), fixes.join("; "));
    }
    let name = courtesy.operator_name.as_deref().unwrap_or_default();
    Check::ok("courtesy", format!("{}, the disclosure names {name}", courtesy.describe()))
}

/// The home exists, is this user's, and lets no one else in: what the
/// daemon checks (and tightens) at every start, reported here unchanged.
fn check_home(home: &Home) -> Check {
    use std::os::unix::fs::MetadataExt;
    let root = home.root();
    let meta = match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => meta,
        Ok(_) => return Check::failed("home", format!("{} is not a folder", root.display()), "set RELAY_HOME"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::failed("home", format!("{} does not exist", root.display()), "run `relay init`");
        }
        Err(e) => {
            return Check::failed(
                "home",
                format!("cannot read {}: {e}", root.display()),
                "give your user access to it, or set RELAY_HOME",
            );
        }
    };
    let me = crate::sys::effective_uid();
    if meta.uid() != me {
        return Check::failed(
            "home",
            format!("{} belongs to another user (uid {}, you are {me})", root.display(), meta.uid()),
            "relay only runs on a home of its own user: set RELAY_HOME to one of yours",
        );
    }
    let loose = home.loose();
    if loose.is_empty() {
        return Check::ok("home", format!("{}, owner-only", root.display()));
    }
    let mut named: Vec<String> = loose
        .iter()
        .take(3)
        .map(|(path, _)| match path.strip_prefix(root) {
            Ok(inside) if !inside.as_os_str().is_empty() => inside.display().to_string(),
            _ => "the home folder".into(),
        })
        .collect();
    if loose.len() > 3 {
        named.push(format!("{} more", loose.len() - 3));
    }
    Check::warning(
        "home",
        format!("others can read or enter {} in {} (keys, conversations)", named.join(", "), root.display()),
        format!("`chmod -R go-rwx {}` (the daemon also tightens them when it starts)", root.display()),
    )
}

fn check_config(home: &Home, config: &Result<Config, ConfigError>) -> Check {
    match config {
        Ok(config) => Check::ok(
            "config",
            format!(
                "{}, channel {}, port {}",
                home.config_file().display(),
                config.channel.as_str(),
                config.daemon_port
            ),
        ),
        Err(ConfigError::Missing(_)) => Check::failed(
            "config",
            format!("relay is not initialised: no {}", home.config_file().display()),
            "run `relay init` (or `relay init --channel sandbox` to try relay)",
        ),
        Err(e) => {
            let fix = e.fix().unwrap_or_else(|| "make config.json readable by you (see `ls -l` of it)".into());
            Check::failed("config", e.to_string(), fix)
        }
    }
}

fn check_daemon(daemon: &Result<DaemonStatusResponse, Error>) -> Check {
    let status = match daemon {
        Ok(status) => status,
        Err(e) => {
            let fix = match e.code {
                ErrorCode::NotInitialised | ErrorCode::InvalidConfig => "fix the config first, then `relay start`",
                ErrorCode::DaemonNotRunning | ErrorCode::DaemonStopped => "run `relay start`",
                _ => "see relay.log in the home; `relay stop` and `relay start` restart it",
            };
            let detail = match e.code {
                // A config it cannot read: no daemon started from it either.
                ErrorCode::DaemonNotRunning
                | ErrorCode::DaemonStopped
                | ErrorCode::NotInitialised
                | ErrorCode::InvalidConfig => "not running".to_string(),
                _ => format!("does not answer as it should: {}", e.error),
            };
            return Check::failed("daemon", detail, fix);
        }
    };
    let uptime = humantime::format_duration(Duration::from_secs(status.uptime_seconds));
    let running = format!("running (pid {}, port {}, up {uptime})", status.pid, status.port);
    let mine = env!("CARGO_PKG_VERSION");
    if status.version != mine {
        return Check::warning(
            "daemon",
            format!("{running}, but it is relay {} and this command is relay {mine}", status.version),
            "`relay stop` and `relay start` run the installed version",
        );
    }
    Check::ok("daemon", running)
}

/// The channel as the daemon sees it. For WhatsApp, the daemon's own text
/// under a blocked state says what to run, so it is the fix. The WhatsApp
/// Web version is not part of `/status`; a state that names one shows it.
fn check_channel(status: &DaemonStatusResponse) -> Check {
    let channel = &status.channel;
    let who = match &channel.phone {
        Some(phone) => format!("{} ({phone})", channel.kind),
        None => channel.kind.clone(),
    };
    let version = channel.version.as_ref().map(|v| format!(", client version {v}")).unwrap_or_default();
    let seen = format!("{who}: {}{version}", channel.state);
    if let Some(span) = channel.missing.filter(|_| channel.connected) {
        return Check::warning(
            "channel",
            format!("{seen}; the last catch-up did not finish: contacts' messages {} may be missing", span.describe()),
            "the conversations live then say so (`relay get`): ask those contacts whether they wrote",
        );
    }
    if channel.connected {
        return Check::ok("channel", seen);
    }
    let detail = channel.detail.clone();
    match channel.state.as_str() {
        "connecting" | "reconnecting" | "pairing" => Check::warning(
            "channel",
            match detail {
                Some(detail) => format!("{seen} ({detail})"),
                None => seen,
            },
            "sends wait for the connection; if it lasts, see relay.log in the home and docs/whatsapp.md",
        ),
        _ => Check::failed("channel", seen, detail.unwrap_or_else(|| "see `relay status` and docs/whatsapp.md".into())),
    }
}

/// The last receipt from a contact's phone, from the event log: a link
/// that takes messages but delivers none shows here, not in the channel's
/// state. Messages flagged overdue since the last receipt are the sign.
async fn check_receipts(home: &Home, port: Option<u16>, status: &DaemonStatusResponse) -> Check {
    let query = EventsQuery {
        after: Some(status.last_event_seq.saturating_sub(RECENT_EVENTS)),
        instance: None,
        follow: Some(false),
    };
    let mut last_receipt: Option<(DateTime<Utc>, SendStatus)> = None;
    let (mut sent, mut overdue_since) = (0u64, 0u64);
    let read = match Client::new(home, port) {
        Ok(client) => {
            client
                .events(&query, |event| {
                    match event.data {
                        EventData::MessageOut { .. } => sent += 1,
                        EventData::MessageStatus {
                            send_status: status @ (SendStatus::Delivered | SendStatus::Read | SendStatus::Played),
                            ..
                        } => {
                            last_receipt = Some((event.at, status));
                            overdue_since = 0;
                        }
                        EventData::MessageStatus { overdue: true, .. } => overdue_since += 1,
                        _ => {}
                    }
                    true
                })
                .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = read {
        return Check::failed(
            "receipts",
            format!("cannot read the event log: {}", e.error),
            "see relay.log in the home",
        );
    }
    let since = match last_receipt {
        Some((at, _)) => format!("the last receipt ({})", clock::relative(at)),
        None => format!("the last {RECENT_EVENTS} events began (no receipt in them)"),
    };
    match last_receipt {
        _ if overdue_since > 0 => Check::warning(
            "receipts",
            format!("{} not delivered within delivery.timeout since {since}", count(overdue_since, "message")),
            "the contacts' phones may be offline; if no message arrives anywhere, the link is broken: \
             `relay status`, relay.log",
        ),
        Some((at, status)) => Check::ok(
            "receipts",
            format!("last receipt: {} at {} ({})", status.as_str(), clock::time(at), clock::relative(at)),
        ),
        None if sent == 0 => Check::skipped("receipts", "nothing sent lately, so no receipt is due"),
        None => Check::ok("receipts", format!("{} sent lately, no receipt yet", count(sent, "message"))),
    }
}

/// One tiny request to the configured model, built as the agent builds it.
/// Neither the key nor the prompt is ever shown; the provider's error is,
/// cut short.
async fn check_model(
    config: &Result<Config, ConfigError>,
    daemon: Option<&DaemonStatusResponse>,
    offline: bool,
) -> Check {
    let Ok(config) = config else {
        return Check::skipped("model", "not checked: config.json cannot be read");
    };
    let Some(model) = &config.model else {
        return Check::skipped("model", "none configured: conversations go to you (`relay send`)");
    };
    let label = model.label();
    if offline {
        // No request, but a key variable that is not set needs no network to see.
        if let Some(var) = model.api_key_env.as_ref().filter(|var| std::env::var_os(var).is_none()) {
            return Check::failed(
                "model",
                format!("{label}: ${var}, which config.json names for the API key, is not set in this shell"),
                format!("set {var} here and in the daemon's environment (then `relay stop`, `relay start`)"),
            );
        }
        return Check::skipped("model", format!("{label}: not checked (--offline)"));
    }
    let latency = match ask(model).await {
        Ok(latency) => latency,
        Err((detail, fix)) => return Check::failed("model", format!("{label}: {detail}"), fix),
    };
    let answered = format!("{label} answered in {} ms", latency.as_millis());
    let mut check = match daemon {
        Some(daemon) if daemon.model.as_deref() != Some(label.as_str()) => Check::warning(
            "model",
            format!("{answered}, but the daemon runs with {}", daemon.model.as_deref().unwrap_or("no model")),
            "`relay stop` and `relay start` load config.json's model",
        ),
        Some(DaemonStatusResponse { model_error: Some(error), .. }) => Check::warning(
            "model",
            format!("{answered}, but the daemon's last call failed: {error}"),
            "the daemon reads the key at start, from its own environment: restart it (`relay stop`, `relay start`) \
             from a shell that has it",
        ),
        _ => Check::ok("model", answered.clone()),
    };
    // In json_schema mode, whether the server holds a reply to the schema.
    if model.tool_calls() == crate::config::ToolCalls::JsonSchema {
        let timeout = Duration::from_secs(model.request_timeout_secs()).min(MODEL_TIMEOUT_CAP);
        use crate::agent::probe::{Probe, json_schema};
        match json_schema(model, timeout).await {
            Probe::Honoured(said) => check.detail = format!("{}; {said}", check.detail),
            Probe::NotHonoured { detail, fix } => {
                check = Check::failed("model", format!("{answered}, but {detail}"), fix)
            }
            Probe::Unclear { detail, fix } => check = Check::warning("model", format!("{answered}, but {detail}"), fix),
        }
    }
    check.latency_ms = Some(latency.as_millis() as u64);
    check
}

/// Sends [`MODEL_PROMPT`]; how long the answer took, or (what failed, the fix).
async fn ask(model: &ModelConfig) -> Result<Duration, (String, String)> {
    use rig_core::completion::{CompletionRequest, Message};
    let provider = model.provider.as_str();
    let connected = crate::agent::provider::connect(model).map_err(|e| match &model.api_key_env {
        // Read here from this shell's environment; the daemon reads it from its own.
        Some(var) => (
            format!("${var}, which config.json names for the API key, is not set in this shell"),
            format!("set {var} here and in the daemon's environment (then `relay stop`, `relay start`)"),
        ),
        None => (e, format!("`relay init --provider {provider} --model {} --api-key-env VAR`", model.name)),
    })?;
    let request = CompletionRequest::from(vec![Message::user(MODEL_PROMPT)]).max_tokens(16);
    let timeout = Duration::from_secs(model.request_timeout_secs()).min(MODEL_TIMEOUT_CAP);
    let started = Instant::now();
    match tokio::time::timeout(timeout, connected.call(request)).await {
        Ok(Ok(_)) => Ok(started.elapsed()),
        Ok(Err(e)) => Err((
            // Cut short, as the agent cuts its own (a provider may echo a page).
            crate::agent::excerpt::excerpt(
                &e.to_string(),
                &[MODEL_PROMPT],
                &crate::agent::provider::key(model).iter().map(String::as_str).collect::<Vec<_>>(),
            ),
            if e.to_string().contains("error sending request") {
                "nothing answers at model.base_url: check that the server runs there and is reachable from this \
                 machine"
                    .to_string()
            } else {
                "check the key, model.name and model.base_url in config.json (`relay init --provider ... --model \
                 ...` rewrites them)"
                    .to_string()
            },
        )),
        Err(_) => Err((
            format!("no answer within {}s", timeout.as_secs()),
            "check that the provider (model.base_url) is reachable from this machine".into(),
        )),
    }
}

/// Free space where the home is (or would be).
fn check_disk(home: &Home) -> Check {
    let Some(at) = home.root().ancestors().find(|p| p.exists()) else {
        return Check::skipped("disk", "no folder of the home's path exists");
    };
    let free = match free_bytes(at) {
        Ok(free) => free,
        Err(e) => return Check::skipped("disk", format!("cannot tell the free space of {}: {e}", at.display())),
    };
    let detail = format!("{:.1} GB free on the filesystem of {}", free as f64 / 1e9, at.display());
    let fix = "free space there: a full disk stops relay from recording messages, and conversations with it";
    if free < DISK_FAILED {
        Check::failed("disk", detail, fix)
    } else if free < DISK_WARNING {
        Check::warning("disk", detail, fix)
    } else {
        Check::ok("disk", detail)
    }
}

fn free_bytes(path: &Path) -> std::io::Result<u64> {
    crate::sys::free_bytes(path)
}

/// Only what this machine can tell without a time server: the clock is not
/// before this relay binary was written, nor before the home's last write
/// (heartbeats and delivery timeouts are measured against it). The daemon
/// shares this clock, so asking it would prove nothing.
fn check_clock(home: &Home) -> Check {
    let now = clock::now();
    let fix = "set the system clock (e.g. `timedatectl set-ntp true`); WhatsApp refuses a device whose clock is wrong";
    if !(2020..2100).contains(&chrono::Datelike::year(&now)) {
        return Check::failed("clock", format!("the clock says {}", clock::time(now)), fix);
    }
    let mut marks: Vec<(String, DateTime<Utc>)> = Vec::new();
    if let Some(at) = std::env::current_exe().ok().and_then(|exe| modified(&exe)) {
        marks.push(("this relay binary".into(), at));
    }
    // The event log's newest file is its last write.
    let newest_events = std::fs::read_dir(home.events_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .max_by_key(|path| modified(path));
    let written = [(newest_events, "the event log"), (Some(home.config_file()), "config.json")];
    for (path, what) in written {
        if let Some(at) = path.and_then(|path| modified(&path)) {
            marks.push((what.to_string(), at));
        }
    }
    if let Some((what, at)) = marks.iter().filter(|(_, at)| *at - now > CLOCK_SLACK).max_by_key(|(_, at)| *at) {
        return Check::warning(
            "clock",
            format!("the clock says {}, before {what} was written ({})", clock::time(now), clock::time(*at)),
            fix,
        );
    }
    Check::ok(
        "clock",
        format!("{}: after this relay binary and the home's last writes (no time server asked)", clock::time(now)),
    )
}

fn modified(path: &Path) -> Option<DateTime<Utc>> {
    let at: SystemTime = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(at.into())
}
