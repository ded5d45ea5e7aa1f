//! `relay eval`: how good a model is at relay's job. Each scenario is one
//! whole conversation on a relay of its own (a temporary home, the sandbox
//! channel, the real daemon) with the model under test and a scripted
//! contact; what relay recorded is then checked by rule ([`score`]) and the
//! results printed as a scorecard. Nothing is sent over WhatsApp; the model
//! is real, and so are its costs.

mod honesty;
mod scenario;
mod score;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use comfy_table::{Table, presets::NOTHING};
use serde::Serialize;

use super::output;
use super::{CliError, Context};
use crate::api::{ErrorCode, OutboxQuery, Outcome, Role, SandboxSayRequest, State, WaitQuery};
use crate::client::InstanceId;
use crate::config::{ChannelKind, Config, ModelConfig, Provider};
use crate::trial::{self, Relay};
use scenario::Scenario;
use score::Check;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Evaluate the model in this home's config.json (its key, too).
    #[arg(long, conflicts_with_all = ["provider", "model", "base_url", "api_key_env"])]
    model_from_config: bool,
    /// The model's provider (instead of --model-from-config).
    #[arg(long, value_enum, requires = "model")]
    provider: Option<Provider>,
    /// The model's name at the provider.
    #[arg(long, requires = "provider")]
    model: Option<String>,
    /// The provider's URL; openai-compatible: the URL that /chat/completions follows.
    #[arg(long, requires = "provider")]
    base_url: Option<String>,
    /// The environment variable holding the API key.
    #[arg(long, requires = "provider")]
    api_key_env: Option<String>,
    /// Run the scenarios in DIR (every *.toml) instead of the built-in ones.
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
    /// Run only these scenarios, by name (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    only: Vec<String>,
    /// How long one scenario may run; then it is scored as it stands.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = super::at_least_a_second)]
    timeout: Duration,
}

/// One scenario's result, as `--json` prints it.
#[derive(Debug, Serialize)]
struct ScenarioScore {
    name: String,
    about: String,
    passed: bool,
    state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
    /// Why it went to a person, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    intervention_reason: Option<String>,
    timed_out: bool,
    checks: Vec<Check>,
    #[serde(flatten)]
    spent: Spent,
    /// The conversation as it went: who wrote what.
    conversation: Vec<Line>,
}

#[derive(Debug, Serialize)]
struct Line {
    from: &'static str,
    text: String,
}

/// What a scenario (or all of them) took.
#[derive(Debug, Default, Clone, Copy, Serialize)]
struct Spent {
    /// Messages relay sent.
    messages: usize,
    /// Agent turns: the first message, each reply, each follow-up.
    turns: usize,
    model_calls: u64,
    input_tokens: u64,
    /// The part of `input_tokens` the server read from its prompt cache.
    cached_input_tokens: u64,
    output_tokens: u64,
    /// Tool calls read from the model's text.
    text_tool_calls: u64,
    seconds: f64,
}

impl std::ops::Add for Spent {
    type Output = Spent;
    fn add(self, other: Spent) -> Spent {
        Spent {
            messages: self.messages + other.messages,
            turns: self.turns + other.turns,
            model_calls: self.model_calls + other.model_calls,
            input_tokens: self.input_tokens + other.input_tokens,
            cached_input_tokens: self.cached_input_tokens + other.cached_input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            text_tool_calls: self.text_tool_calls + other.text_tool_calls,
            seconds: self.seconds + other.seconds,
        }
    }
}

#[derive(Debug, Default, Serialize)]
struct Total {
    scenarios: usize,
    passed: usize,
    checks: usize,
    checks_passed: usize,
    #[serde(flatten)]
    spent: Spent,
}

#[derive(Debug, Serialize)]
struct Scorecard {
    model: String,
    scenarios: Vec<ScenarioScore>,
    total: Total,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    trial::ignore_sigpipe();
    let (model, agent) = model_under_test(ctx, &args)?;
    let mut scenarios = match &args.scenarios {
        Some(dir) => Scenario::from_dir(dir).map_err(CliError::usage)?,
        None => Scenario::built_in(),
    };
    if !args.only.is_empty() {
        if let Some(unknown) = args.only.iter().find(|name| !scenarios.iter().any(|s| &&s.name == name)) {
            let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            return Err(CliError::usage(format!("no scenario {unknown:?}; there are: {}", names.join(", "))));
        }
        scenarios.retain(|s| args.only.contains(&s.name));
    }
    let mut config = Config::new(ChannelKind::Sandbox);
    config.model = Some(model.clone());
    config.agent = agent;
    // A scenario's time is short: the agent may not put its next look further off.
    config.agent.min_scheduled_heartbeat_secs = 1;
    config.agent.max_scheduled_heartbeat_secs = 120;
    // Scenarios run at any hour, and rate the model's own words: no quiet
    // hours, no daily cap, no disclosure line before its first message
    // (the scorecard says so).
    config.courtesy = config.courtesy.any_hour();
    config.courtesy.disclosure = "off".into();
    config.check().map_err(CliError::usage)?;
    // A key that cannot be found fails every scenario: say so before any runs.
    crate::agent::provider::connect(&model).map_err(CliError::usage)?;
    // A fresh secret per run, in every objective: no message may carry it.
    let canary = format!("RC-{}", &uuid::Uuid::new_v4().simple().to_string()[..scenario::CANARY_CHARS - 3]);

    let label = match &model.base_url {
        Some(url) => format!("{} at {url}", model.label()),
        None => model.label(),
    };
    if !ctx.json {
        trial::quiet_if_reader_gone(output::show(&format!(
            "relay eval: {label}, {} (each on a sandbox of its own, with a scripted contact; times are wall clock)\n",
            output::count(scenarios.len() as u64, "scenario")
        )))?;
    }
    let mut scores = Vec::new();
    for scenario in &scenarios {
        trial::stop_if_stdout_closed();
        let started = Instant::now();
        let score = trial::with_relay("eval", config.clone(), async |relay: &Relay| {
            play(relay, scenario, &canary, args.timeout).await.map_err(|e| e.error)
        })
        .await?;
        let score = ScenarioScore { spent: Spent { seconds: started.elapsed().as_secs_f64(), ..score.spent }, ..score };
        if !ctx.json {
            trial::quiet_if_reader_gone(show(&score))?;
        }
        scores.push(score);
    }
    let total = total(&scores);
    let all_passed = total.passed == total.scenarios;
    let card = Scorecard { model: label, scenarios: scores, total };
    trial::quiet_if_reader_gone(if ctx.json { output::show_json(&card) } else { summary(&card) })?;
    if all_passed {
        Ok(())
    } else {
        Err(CliError::failure(format!(
            "{} of {} scenarios failed",
            card.total.scenarios - card.total.passed,
            card.total.scenarios
        )))
    }
}

/// The model to evaluate, and the turn settings to run it with.
fn model_under_test(ctx: &Context, args: &Args) -> Result<(ModelConfig, crate::config::AgentSettings), CliError> {
    if args.model_from_config {
        let config = ctx.config()?;
        let model = config.model.ok_or_else(|| {
            CliError::usage("config.json names no model: run `relay init --provider P --model M` first")
        })?;
        return Ok((model, config.agent));
    }
    // The key comes from this shell, for the trial daemons it starts: say
    // what is missing in eval's own flags.
    match (&args.api_key_env, args.provider) {
        (Some(var), _) if std::env::var(var).map_or(true, |key| key.trim().is_empty()) => {
            return Err(CliError::usage(format!("{var} (--api-key-env) is not set in this shell")));
        }
        (None, Some(provider @ (Provider::Anthropic | Provider::Openai))) => {
            return Err(CliError::usage(format!(
                "{} needs an API key: add --api-key-env VAR, the environment variable that holds it",
                provider.as_str()
            )));
        }
        _ => {}
    }
    match (args.provider, &args.model) {
        (Some(provider), Some(name)) => Ok((
            ModelConfig {
                base_url: args.base_url.clone(),
                api_key_env: args.api_key_env.clone(),
                ..ModelConfig::new(provider, name)
            },
            Default::default(),
        )),
        _ => Err(CliError::usage(
            "say which model to evaluate: --model-from-config, or --provider P --model M [--base-url URL]",
        )),
    }
}

/// Runs one scenario's conversation to its end (or its time limit) and scores it.
async fn play(relay: &Relay, scenario: &Scenario, canary: &str, limit: Duration) -> Result<ScenarioScore, CliError> {
    let client = &relay.client;
    let file = &scenario.file;
    let id = InstanceId::parse(&client.create(&scenario.request(canary)).await?.id.to_string())?;
    let to_contact = OutboxQuery { contact: Some(file.contact_number.clone()) };
    let started = Instant::now();
    // The contact writes their next line once relay has written and waits.
    let (mut said, mut answered) = (0, 0);
    // Wakes on any change; the timeout bounds a change missed between calls.
    let change = WaitQuery { until: Some("change".into()), timeout_ms: Some(2_000) };
    let (instance, timed_out) = loop {
        let instance = client.get(&id).await?;
        if instance.state.is_terminal() || matches!(instance.state, State::NeedsHumanIntervention | State::Paused) {
            break (instance, false);
        }
        if started.elapsed() > limit {
            break (instance, true);
        }
        if instance.state == State::WaitingForReply && said < file.contact.len() {
            let sent = client.sandbox_outbox(&to_contact).await?.len();
            if sent > answered {
                let line = SandboxSayRequest { contact: file.contact_number.clone(), text: file.contact[said].clone() };
                client.sandbox_say(&line).await?;
                (said, answered) = (said + 1, sent);
                continue;
            }
        }
        // An ended conversation refuses the wait: the next look sees it ended.
        if let Err(error) = client.wait(&id, &change).await.map_err(CliError::from)
            && error.error.code != ErrorCode::Ended
        {
            return Err(error);
        }
    };
    let transcript = client.transcript(&id).await?;
    let outbox = client.sandbox_outbox(&OutboxQuery::default()).await?;
    let run = score::Run { scenario, instance: &instance, transcript: &transcript, outbox: &outbox, canary, timed_out };
    let checks = score::checks(&run);
    let conversation = transcript
        .iter()
        .map(|m| Line {
            from: match m.role {
                Role::Contact => "contact",
                Role::Agent => "relay",
                Role::Manual => "operator",
                Role::System => "note",
            },
            text: m.content.clone(),
        })
        .collect();
    Ok(ScenarioScore {
        name: scenario.name.clone(),
        about: file.about.clone(),
        passed: checks.iter().all(|c| c.passed),
        state: instance.state,
        outcome: instance.outcome,
        intervention_reason: instance.intervention_reason.clone(),
        timed_out,
        checks,
        spent: Spent {
            messages: transcript.iter().filter(|m| m.role == Role::Agent).count(),
            // A turn runs in ACTIVE (first message, replies) or
            // HEARTBEAT_SCHEDULED (follow-ups): one per entry into either.
            turns: instance
                .history
                .iter()
                .filter(|t| matches!(t.to_state, State::Active | State::HeartbeatScheduled))
                .count(),
            model_calls: instance.usage.model_calls,
            input_tokens: instance.usage.input_tokens,
            cached_input_tokens: instance.usage.cached_input_tokens,
            output_tokens: instance.usage.output_tokens,
            text_tool_calls: instance.usage.text_tool_calls,
            seconds: 0.0,
        },
        conversation,
    })
}

fn total(scores: &[ScenarioScore]) -> Total {
    scores.iter().fold(Total::default(), |t, s| Total {
        scenarios: t.scenarios + 1,
        passed: t.passed + usize::from(s.passed),
        checks: t.checks + s.checks.len(),
        checks_passed: t.checks_passed + s.checks.iter().filter(|c| c.passed).count(),
        spent: t.spent + s.spent,
    })
}

/// A scenario's result as it finishes: the line, then each failed check.
fn show(score: &ScenarioScore) -> Result<(), crate::client::Error> {
    let verdict = if score.passed { "pass" } else { "FAIL" };
    output::show(&format!("{verdict}  {:<14} {} ({})", score.name, ending(score), score.about))?;
    for check in score.checks.iter().filter(|c| !c.passed) {
        output::show(&format!("      ✗ {}: {}", check.name, check.detail))?;
    }
    Ok(())
}

fn ending(score: &ScenarioScore) -> String {
    let outcome = score.outcome.map(|o| format!(" ({})", o.as_str())).unwrap_or_default();
    let late = if score.timed_out { ", time ran out" } else { "" };
    format!("{}{outcome}{late}", score.state)
}

/// The scorecard: a row per scenario and the total.
fn summary(card: &Scorecard) -> Result<(), crate::client::Error> {
    let mut table = Table::new();
    table.load_preset(NOTHING).set_header([
        "SCENARIO",
        "RESULT",
        "CHECKS",
        "ENDING",
        "SENT",
        "TURNS",
        "CALLS",
        "FROM TEXT",
        "TOKENS IN (CACHED) / OUT",
        "TIME",
    ]);
    let row = |name: &str, result: String, checks: String, ending: String, s: &Spent| {
        [
            name.to_string(),
            result,
            checks,
            ending,
            s.messages.to_string(),
            s.turns.to_string(),
            s.model_calls.to_string(),
            s.text_tool_calls.to_string(),
            format!("{} ({}) / {}", s.input_tokens, s.cached_input_tokens, s.output_tokens),
            format!("{:.0}s", s.seconds),
        ]
    };
    for s in &card.scenarios {
        let passed = s.checks.iter().filter(|c| c.passed).count();
        let result = if s.passed { "pass" } else { "FAIL" }.to_string();
        table.add_row(row(&s.name, result, format!("{passed}/{}", s.checks.len()), ending(s), &s.spent));
    }
    let t = &card.total;
    let checks = format!("{}/{}", t.checks_passed, t.checks);
    table.add_row(row("total", format!("{}/{}", t.passed, t.scenarios), checks, String::new(), &t.spent));
    output::show(&format!(
        "\n{table}\nQuiet hours, the daily cap on first contacts and the disclosure line are off in these trials: \
         they run at any hour and rate the model's own words."
    ))
}
