//! `relay demo`: one whole conversation on this machine, with no keys and no
//! WhatsApp. A real daemon runs on a temporary home with the sandbox
//! channel; its model is the scripted model server (run here, speaking
//! Chat Completions through rig-core like any provider); a scripted contact
//! answers. The demo prints the conversation as it happens, then `relay get`.
//! It says plainly that the model and the contact are simulated.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{CliError, Context, output};
use crate::api::{ConversationInstance, CreateInstanceRequest, NewTodo, OutboxQuery, SandboxSayRequest};
use crate::client::InstanceId;
use crate::config::{ChannelKind, Config, ModelConfig, Provider};
use crate::scripted_model::{Reply, Responder, ScriptedModel};
use crate::trial::{self, Relay};

const CONTACT: &str = "+56912345678";
/// The contact's time zone, given at create (Chile keeps several).
const ZONE: &str = "America/Santiago";
/// What the simulated contact says, one answer per message relay sends.
const CONTACT_SAYS: [&str; 2] = ["Hi! Friday works for me.", "Afternoon is best, around 3pm."];
const GIVE_UP: Duration = Duration::from_secs(60);

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let model = ScriptedModel::start(demo_model())
        .await
        .map_err(|e| CliError::failure(format!("demo: cannot start the scripted model server: {e}")))?;
    let mut config = Config::new(ChannelKind::Sandbox);
    config.agent.reply_window_ms = 300;
    // The demo runs at any hour: no quiet hours, no daily cap (it says so).
    config.courtesy = config.courtesy.any_hour();
    config.model = Some(ModelConfig {
        base_url: Some(model.base_url().to_string()),
        ..ModelConfig::new(Provider::OpenaiCompatible, "scripted-demo")
    });
    let run = async |relay: &Relay| demo(ctx, relay, &model).await.map_err(|e| e.error);
    Ok(trial::with_relay("demo", config, run).await?)
}

async fn demo(ctx: &Context, relay: &Relay, model: &ScriptedModel) -> Result<(), CliError> {
    let say = |line: String| if ctx.json { Ok(()) } else { output::show(&line) };
    say("relay demo: one whole conversation on this machine.".into())?;
    say("SIMULATED: the model is a scripted model server and the contact is scripted too.".into())?;
    say("Nothing is sent over WhatsApp and no API key is used.".into())?;
    say(format!("  home   {} (removed at the end)", relay.home.root().display()))?;
    say(format!("  model  scripted model server at {} (OpenAI Chat Completions)", model.base_url()))?;
    say("  courtesy  quiet hours and the daily cap are off here, so the demo runs at any hour".into())?;
    say(format!("  times  {}\n", output::zone()))?;
    let client = &relay.client;
    let request = CreateInstanceRequest {
        objective: "Arrange the delivery of order 1042".into(),
        target_contact: CONTACT.into(),
        todos: vec![NewTodo::new("Agree on the delivery day"), NewTodo::new("Agree on a time window")],
        heartbeat_config: None,
        // Chile keeps several times: the contact's zone is given, as it
        // should be (and the demo does not depend on this machine's zone).
        time_zone: Some(ZONE.into()),
        ..Default::default()
    };
    say(format!(
        "$ relay create --objective \"{}\" --contact {CONTACT} --tz {ZONE} --todo \"{}\" --todo \"{}\"",
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
        // The simulated contact answers each message relay sent, after a
        // moment, once the conversation waits for it: so the demo prints the
        // same order however slow the machine.
        let sent = client.sandbox_outbox(&OutboxQuery::default()).await?;
        let waiting = instance.state == crate::api::State::WaitingForReply;
        if waiting && sent.len() > answered && answered < CONTACT_SAYS.len() {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let say_request = SandboxSayRequest::text(CONTACT, CONTACT_SAYS[answered]);
            client.sandbox_say(&say_request).await?;
            answered += 1;
            continue;
        }
        if relay.started.elapsed() > GIVE_UP {
            break instance;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    print_end(ctx, &final_state, model)?;
    if final_state.state.is_terminal() {
        Ok(())
    } else {
        Err(CliError::failure(format!("demo: the conversation did not finish within {}s", GIVE_UP.as_secs())))
    }
}

/// The conversation as it ended, as `relay get` shows it, and what the
/// scripted model served.
fn print_end(ctx: &Context, final_state: &ConversationInstance, model: &ScriptedModel) -> Result<(), CliError> {
    if ctx.json {
        trial::quiet_if_reader_gone(output::show_json(final_state))?;
    } else {
        output::show(&format!("\n$ relay get {}", final_state.id))?;
        super::get::print(final_state);
        output::show(&format!(
            "\n{}, {} requests seen by the scripted model server.",
            output::count(final_state.usage.model_calls, "model call"),
            model.requests().len()
        ))?;
        output::show("Try it yourself on the sandbox: relay init --channel sandbox && relay start (see the README).")?;
    }
    Ok(())
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
                tool(
                    "mark_todo_item",
                    json!({"todo_id": "2", "status": "completed", "answer": "Friday, around 3pm", "quote": "around 3pm"}),
                ),
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
