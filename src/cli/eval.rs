//! `relay eval`: its flags, the model they name, and the scorecard printed
//! as each scenario finishes (a table, or one JSON document with `--json`).
//! Running and scoring the scenarios is [`crate::eval`]'s. Exit 1 when a
//! scenario failed.

use std::path::PathBuf;
use std::time::Duration;

use comfy_table::{Table, presets::NOTHING};

use super::output;
use super::{CliError, Context};
use crate::config::{AgentSettings, ModelConfig, Provider};
use crate::eval::{Eval, ScenarioScore, Scorecard, Spent};
use crate::trial;

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

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let (model, agent) = model_under_test(ctx, &args)?;
    let scenarios = crate::eval::scenarios(args.scenarios.as_deref(), &args.only)?;
    let eval = Eval::new(model, agent, scenarios, args.timeout)?;
    if !ctx.json {
        trial::quiet_if_reader_gone(output::show(&format!(
            "relay eval: {}, {} (each on a sandbox of its own, with a scripted contact; times are wall clock)\n",
            eval.model(),
            output::count(eval.scenarios().len() as u64, "scenario")
        )))?;
    }
    let mut scores = Vec::new();
    for scenario in eval.scenarios() {
        trial::stop_if_stdout_closed();
        let score = eval.run(scenario).await?;
        if !ctx.json {
            trial::quiet_if_reader_gone(show(&score))?;
        }
        scores.push(score);
    }
    let card = eval.scorecard(scores);
    let all_passed = card.total.passed == card.total.scenarios;
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
fn model_under_test(ctx: &Context, args: &Args) -> Result<(ModelConfig, AgentSettings), CliError> {
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
