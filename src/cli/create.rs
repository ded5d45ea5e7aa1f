//! `relay create`: starts a conversation, from flags or from a template
//! (`--template NAME --var key=value`). Plain output is the id alone, so
//! `ID=$(relay create ...)` works.

use super::output::say;
use super::{CliError, Context, output};
use crate::api::{CreateInstanceRequest, HeartbeatOverrides, NewTodo};
use crate::template::Templates;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What the conversation should achieve, in plain words.
    #[arg(long, required_unless_present = "template", conflicts_with = "template")]
    pub objective: Option<String>,
    /// The contact's phone number in international format, e.g. +56912345678.
    #[arg(long)]
    pub contact: String,
    /// One thing to get done; repeat for several (ids 1, 2, ... in this order).
    #[arg(long = "todo", required_unless_present = "template", conflicts_with = "template")]
    pub todos: Vec<String>,
    /// Start from this template (`relay template list`); fill its
    /// placeholders with --var.
    #[arg(long, value_name = "NAME")]
    pub template: Option<String>,
    /// A template variable: --var address="Av. Apoquindo 123"; repeat for several.
    #[arg(long = "var", value_name = "KEY=VALUE", value_parser = parse_var, requires = "template")]
    pub vars: Vec<(String, String)>,
    /// How long to wait for a reply before a follow-up (90s, 30m, 2h) [default: 30m].
    #[arg(long, value_parser = parse_duration)]
    pub heartbeat_interval: Option<std::time::Duration>,
    /// Follow-ups before the conversation is ABANDONED [default: 5].
    #[arg(long)]
    pub max_followups: Option<u32>,
    /// The contact's time zone, an IANA name such as America/Santiago
    /// [default: their number's country's, else courtesy.default_tz].
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// When relay starts nothing on its own, in the contact's time:
    /// 22:00-08:00, or off [default: courtesy.quiet_hours].
    #[arg(long, value_name = "FROM-TO|off")]
    pub quiet_hours: Option<String>,
    /// Write to a number on the do-not-contact list anyway; the reason is
    /// recorded in the conversation and the list.
    #[arg(long, value_name = "REASON")]
    pub override_opt_out: Option<String>,
    /// Makes a retry safe: the same key again prints the conversation the
    /// first call created and creates nothing (kept for 24 hours).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

pub(super) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crate::duration::parse(s).map_err(|e| e.to_string())
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.to_string())),
        _ => Err(format!("'{s}' is not KEY=VALUE")),
    }
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let interval_ms = args.heartbeat_interval.map(|d| d.as_millis() as u64);
    let (objective, todos, interval_ms, max_followups) = match &args.template {
        None => (args.objective.unwrap_or_default(), args.todos, interval_ms, args.max_followups),
        Some(name) => {
            let template = Templates::of(&ctx.home).load(name).map_err(super::template::error)?;
            let filled = template.fill(&args.vars).map_err(super::template::error)?;
            // Flags given here win over the template's.
            (
                filled.objective,
                filled.todos,
                interval_ms.or(filled.heartbeat_interval_ms),
                args.max_followups.or(filled.max_followups),
            )
        }
    };
    let request = CreateInstanceRequest {
        objective,
        target_contact: args.contact,
        todos: todos.into_iter().map(|text| NewTodo { text }).collect(),
        heartbeat_config: Some(HeartbeatOverrides { interval_ms, max_followups }),
        time_zone: args.tz,
        quiet_hours: args.quiet_hours,
        override_opt_out: args.override_opt_out,
    };
    let client = ctx.client()?.with_idempotency_key(args.idempotency_key)?;
    let created = client.create(&request).await?;
    if ctx.json {
        output::json(&created);
    } else {
        say!("{}", created.id);
    }
    Ok(())
}
