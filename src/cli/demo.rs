//! `relay demo`: one whole conversation on this machine, with no keys and no
//! WhatsApp. A real daemon runs on a temporary home with the sandbox
//! channel; its model is the scripted model server (run here, speaking
//! Chat Completions through rig-core like any provider); a scripted contact
//! answers. The demo prints the conversation as it happens, then `relay get`.
//! It says plainly that the model and the contact are simulated.

use std::io::Write;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{CliError, Context, output};
use crate::api::{CreateInstanceRequest, ErrorCode, NewTodo, OutboxQuery, SandboxSayRequest};
use crate::client::{Client, InstanceId};
use crate::config::{ChannelKind, Config, ModelConfig, Provider};
use crate::home::Home;
use crate::scripted_model::{Reply, Responder, ScriptedModel};

const CONTACT: &str = "+56912345678";
/// What the simulated contact says, one answer per message relay sends.
const CONTACT_SAYS: [&str; 2] = ["Hi! Friday works for me.", "Afternoon is best, around 3pm."];
const GIVE_UP: Duration = Duration::from_secs(60);

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    // However the demo ends, its daemon stops and its home goes. Ctrl-C and
    // `kill` are caught (before anything exists to clean up), and a reader
    // that goes away (`relay demo | head -3`) is a failed write here rather
    // than death by SIGPIPE, which would orphan the daemon.
    // SAFETY: no other thread is running yet (a single-threaded runtime).
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let mut signals = Signals::new().map_err(|e| CliError::failure(format!("demo: cannot catch signals: {e}")))?;
    let fail = |what: &str, e: &dyn std::fmt::Display| CliError::failure(format!("demo: cannot {what}: {e}"));
    let root = std::env::temp_dir().join(format!("relay-demo-{}", std::process::id()));
    let home = Home::at(&root);
    home.create().map_err(|e| fail("create its home", &e))?;
    let mut daemon = None;
    let ended = tokio::select! {
        result = demo(ctx, &home, &mut daemon) => match result {
            Err(error) if error.error.code == ErrorCode::ReaderGone => Ended::Signal(libc::SIGPIPE),
            result => Ended::Finished(result),
        },
        signal = signals.next() => Ended::Signal(signal),
    };
    if let Some(daemon) = daemon {
        daemon.stop().await;
    }
    let _ = std::fs::remove_dir_all(&root);
    match ended {
        Ended::Finished(result) => result,
        // Cleaned up: now end as the signal would have, so a shell (or a
        // pipeline) sees what it expects: quiet for a closed pipe,
        // "interrupted" for Ctrl-C.
        Ended::Signal(signal) => {
            // SAFETY: restores the default action, then raises the signal.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
            unreachable!("signal {signal} ends the process")
        }
    }
}

enum Ended {
    Finished(Result<(), CliError>),
    Signal(libc::c_int),
}

/// Lines for a person, made visible like `say!`'s; a closed stdout stops the demo.
fn show(line: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", output::visible(line))
        .and_then(|()| out.flush())
        .map_err(|e| CliError::new(ErrorCode::ReaderGone, format!("demo: cannot write to stdout: {e}")))
}

/// SIGINT, SIGTERM and SIGHUP, caught for the demo's whole life.
struct Signals(Vec<(libc::c_int, tokio::signal::unix::Signal)>);

impl Signals {
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            (libc::SIGINT, SignalKind::interrupt()),
            (libc::SIGTERM, SignalKind::terminate()),
            (libc::SIGHUP, SignalKind::hangup()),
        ];
        kinds.into_iter().map(|(number, kind)| Ok((number, signal(kind)?))).collect::<std::io::Result<_>>().map(Signals)
    }

    /// The next of them to arrive.
    async fn next(&mut self) -> libc::c_int {
        let arrivals = self.0.iter_mut().map(|(number, signal)| {
            Box::pin(async move {
                signal.recv().await;
                *number
            })
        });
        futures_util::future::select_all(arrivals).await.0
    }
}

/// The demo's daemon, a child process in a process group of its own: a
/// Ctrl-C reaches the demo alone, which stops the daemon in order.
struct Daemon {
    child: tokio::process::Child,
    home: Home,
    port: u16,
}

impl Daemon {
    /// Asks the daemon to stop and waits for it (killing it if it does not
    /// stop, or cannot be asked), so that its home can go.
    async fn stop(mut self) {
        let ctx = Context { home: self.home.clone(), json: true, port: Some(self.port) };
        let asked = match ctx.client() {
            Ok(client) => client.with_timeout(Duration::from_secs(5)).shutdown().await.is_ok(),
            Err(_) => false,
        };
        if !asked || tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

async fn demo(ctx: &Context, home: &Home, daemon_slot: &mut Option<Daemon>) -> Result<(), CliError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| CliError::failure(format!("demo: cannot {what}: {e}"));
    let model = ScriptedModel::start(demo_model()).await.map_err(|e| fail("start the scripted model server", &e))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| fail("find a free port", &e))?
        .port();
    let mut config = Config::new(ChannelKind::Sandbox);
    config.daemon_port = port;
    config.agent.reply_window_ms = 300;
    config.model = Some(ModelConfig {
        provider: Provider::OpenaiCompatible,
        name: "scripted-demo".into(),
        base_url: Some(model.base_url().to_string()),
        api_key_env: None,
        api_key: None,
        text_tool_calls: None,
        temperature: None,
        max_output_tokens: None,
        request_timeout_secs: None,
    });
    config.save(&home.config_file()).map_err(|e| fail("write its config", &e))?;

    let say = |line: String| if ctx.json { Ok(()) } else { show(&line) };
    say("relay demo: one whole conversation on this machine.".into())?;
    say("SIMULATED: the model is a scripted model server and the contact is scripted too.".into())?;
    say("Nothing is sent over WhatsApp and no API key is used.".into())?;
    say(format!("  home   {} (removed at the end)", home.root().display()))?;
    say(format!("  model  scripted model server at {} (OpenAI Chat Completions)", model.base_url()))?;
    say(format!("  times  {}\n", output::zone()))?;

    let exe = std::env::current_exe().map_err(|e| fail("find the relay binary", &e))?;
    let child = tokio::process::Command::new(exe)
        .args(["daemon", "--port", &port.to_string()])
        .env("RELAY_HOME", home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail("start the daemon", &e))?;
    let daemon = daemon_slot.insert(Daemon { child, home: home.clone(), port });
    let started = Instant::now();
    while Client::on_port(port).health().await.is_err() {
        if started.elapsed() > Duration::from_secs(15) || daemon.child.try_wait().ok().flatten().is_some() {
            return Err(CliError::failure("demo: the daemon did not start"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let demo_ctx = Context { home: home.clone(), json: ctx.json, port: Some(port) };
    let client = demo_ctx.client()?;

    let request = CreateInstanceRequest {
        objective: "Arrange the delivery of order 1042".into(),
        target_contact: CONTACT.into(),
        todos: vec![
            NewTodo { text: "Agree on the delivery day".into() },
            NewTodo { text: "Agree on a time window".into() },
        ],
        heartbeat_config: None,
    };
    say(format!(
        "$ relay create --objective \"{}\" --contact {CONTACT} --todo \"{}\" --todo \"{}\"",
        request.objective, request.todos[0].text, request.todos[1].text
    ))?;
    let created = client.create(&request).await?;
    say(format!("{}\n", created.id))?;

    let id = InstanceId::parse(&created.id.to_string())?;
    let (mut seen_history, mut seen_messages, mut answered) = (0, 0, 0);
    let final_state = loop {
        let instance = client.get(&id).await?;
        let transcript = client.transcript(&id).await?;
        let mut lines: Vec<(chrono::DateTime<chrono::Utc>, String)> = Vec::new();
        for t in instance.history.iter().skip(seen_history) {
            let from = t.from_state.map(|s| format!("{s} -> ")).unwrap_or_default();
            lines.push((t.timestamp, format!("state    {from}{} ({})", t.to_state, t.trigger)));
        }
        for m in transcript.iter().skip(seen_messages) {
            lines.push((m.timestamp, format!("{:<8} {}", format!("{:?}", m.role).to_lowercase(), m.content)));
        }
        lines.sort_by_key(|(at, _)| *at);
        for (at, line) in lines {
            say(format!("{}  {line}", at.with_timezone(&chrono::Local).format("%H:%M:%S%.3f")))?;
        }
        (seen_history, seen_messages) = (instance.history.len(), transcript.len());
        if instance.state.is_terminal() {
            break instance;
        }
        // The simulated contact answers each message relay sent, after a moment.
        let sent = client.sandbox_outbox(&OutboxQuery::default()).await?;
        if sent.len() > answered && answered < CONTACT_SAYS.len() {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let say_request = SandboxSayRequest { contact: CONTACT.into(), text: CONTACT_SAYS[answered].into() };
            client.sandbox_say(&say_request).await?;
            answered += 1;
            continue;
        }
        if started.elapsed() > GIVE_UP {
            break instance;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    if let Some(daemon) = daemon_slot.take() {
        daemon.stop().await;
    }
    if ctx.json {
        let document = serde_json::to_string_pretty(&final_state).expect("output serialises");
        let mut out = std::io::stdout().lock();
        writeln!(out, "{document}")
            .and_then(|()| out.flush())
            .map_err(|e| CliError::new(ErrorCode::ReaderGone, format!("demo: cannot write to stdout: {e}")))?;
    } else {
        show(&format!("\n$ relay get {}", final_state.id))?;
        super::get::print(&final_state);
        show(&format!(
            "\n{}, {} requests seen by the scripted model server.",
            output::count(final_state.usage.model_calls, "model call"),
            model.requests().len()
        ))?;
        show("Try it yourself on the sandbox: relay init --channel sandbox && relay start (see the README).")?;
    }
    if final_state.state.is_terminal() {
        Ok(())
    } else {
        Err(CliError::failure(format!("demo: the conversation did not finish within {}s", GIVE_UP.as_secs())))
    }
}

/// The demo's scripted "model": answers from what the conversation holds,
/// as a real model would, but by rule.
fn demo_model() -> Responder {
    Arc::new(|_n, request: &Value| {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let heard = messages
            .iter()
            .filter(|m| m["role"] == "user" && m["content"].as_str().is_some_and(|c| !c.starts_with("(no new message")))
            .count();
        let after_tools = messages.last().is_some_and(|m| m["role"] == "tool");
        let tool = |name: &str, args: Value| (name.to_string(), args);
        match (heard, after_tools) {
            (0, false) => Reply::Tools(vec![tool(
                "send_message",
                json!({"text": "Hi! I'm arranging the delivery of your order 1042. Which day suits you this week?"}),
            )]),
            (1, false) => Reply::Tools(vec![
                tool("mark_todo_item", json!({"todo_id": "1", "status": "completed", "answer": "Friday"})),
                tool("send_message", json!({"text": "Great, Friday it is. What time of day works best?"})),
            ]),
            (_, false) => Reply::Tools(vec![
                tool("mark_todo_item", json!({"todo_id": "2", "status": "completed", "answer": "Friday, around 3pm"})),
                tool("send_message", json!({"text": "Perfect: Friday around 3pm. Thank you, see you then!"})),
            ]),
            (heard, true) if heard >= 2 => Reply::Tools(vec![tool(
                "end_conversation",
                json!({"reason": "both todos are done", "outcome": "achieved", "summary": "day and time window agreed"}),
            )]),
            (_, true) => Reply::Text(String::new()),
        }
    })
}
