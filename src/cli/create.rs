//! `relay create`: starts a conversation, from flags or from a template
//! (`--template NAME --var key=value`). Plain output is the id alone, so
//! `ID=$(relay create ...)` works.

use super::output::{complain, say};
use super::{CliError, Context, output};
use chrono::{DateTime, Utc};

use crate::api::{AnswerSchema, BudgetRequest, NewTodo, StartTime, ZoneSource, limits};
use crate::client::request::{NewConversation, Problem, millis};
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
    /// What the answer to the --todo just before is, for a typed `value` in
    /// the report: yes-no, date, time, date-time, email, number, integer,
    /// text, choice:a|b|c, or a JSON schema ({"type": "integer", "minimum": 1}).
    #[arg(long = "answer", value_name = "KIND", value_parser = parse_answer, requires = "todos")]
    pub answers: Vec<AnswerSchema>,
    /// Which todo each --answer is for (by position), from where they stand
    /// on the command line: set by [`super::parse`].
    #[arg(skip)]
    pub answer_of: Vec<usize>,
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
    /// Agent turns at most (the first message, each reply, each follow-up);
    /// then the conversation ends with ended_by budget [default: budget.max_turns, none].
    #[arg(long, value_name = "N", value_parser = parse_max_turns)]
    pub max_turns: Option<u32>,
    /// Model tokens at most (input + output); no turn starts once they are
    /// used, and the conversation ends with ended_by budget [default: budget.max_tokens, none].
    #[arg(long, value_name = "N", value_parser = parse_max_tokens)]
    pub max_tokens: Option<u64>,
    /// End the conversation this long from now, whatever it is doing (3d,
    /// 12h): ended_by expired [default: budget.expires_in, none].
    #[arg(long, value_name = "DURATION", value_parser = parse_expires_in, allow_hyphen_values = true)]
    pub expires_in: Option<std::time::Duration>,
    /// End the conversation at this time (RFC 3339, e.g.
    /// 2026-03-01T18:00:00-03:00); not with --expires-in.
    #[arg(long, value_name = "TIME", value_parser = parse_expires_at, conflicts_with = "expires_in")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Start later: the first message waits until then (and then for quiet
    /// hours, as any first message). A time with its offset
    /// (2026-12-01T10:00:00-03:00, "2026-12-01 10:00 UTC"), a time on the
    /// contact's clock, read in their zone ("2026-12-01 10:00", "tomorrow
    /// 10:00", "today 3pm"), or how long from now ("in 2h"); at most 30 days
    /// ahead.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<String>,
    /// Write to a number on the do-not-contact list anyway; the reason is
    /// recorded in the conversation and the list.
    #[arg(long, value_name = "REASON")]
    pub override_opt_out: Option<String>,
    /// A fact relay's agent may use but must never write to the contact
    /// (an account note, an internal reference); relay refuses any message
    /// of the agent's that repeats it. Repeat for several.
    #[arg(long = "private", value_name = "TEXT")]
    pub private_context: Vec<String>,
    /// A file the agent may send the contact (send_attachment), e.g. an
    /// invoice or a photo; its name is the one the contact sees. Repeat for
    /// several (at most 10; ids a1, a2, ... in this order).
    #[arg(long = "attach", value_name = "FILE")]
    pub attach: Vec<std::path::PathBuf>,
    /// Makes a retry safe: the same key again prints the conversation the
    /// first call created and creates nothing (kept for 24 hours).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

/// A problem with the conversation to create or the file to send, in the
/// CLI's words.
pub(super) fn refusal(problem: Problem) -> CliError {
    match problem {
        Problem::TooManyFiles { given } => CliError::usage(format!(
            "at most {} files per conversation (--attach was given {given} times)",
            limits::MAX_ATTACHMENTS
        )),
        Problem::Unreadable(why) => CliError::usage(why),
        Problem::Daemon(error) => error.into(),
    }
}

pub(super) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crate::duration::parse(s).map_err(|e| e.to_string())
}

pub(super) fn parse_max_turns(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("give at least 1 turn (the first message is one)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a number of turns (e.g. 10)")),
    }
}

pub(super) fn parse_max_tokens(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("give at least 1 token".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a number of tokens (e.g. 50000)")),
    }
}

/// A deadline from now: a positive duration of at most a year.
pub(super) fn parse_expires_in(s: &str) -> Result<std::time::Duration, String> {
    if s.trim().starts_with('-') {
        return Err("a deadline cannot be in the past: give how long from now, e.g. 3d or 12h".into());
    }
    let expires_in = parse_duration(s)?;
    match crate::engine::budget::expires_in_problem(expires_in) {
        Some(problem) => Err(format!("the deadline {problem}")),
        None => Ok(expires_in),
    }
}

/// A deadline as a time (RFC 3339), in the future.
fn parse_expires_at(s: &str) -> Result<DateTime<Utc>, String> {
    let at = crate::engine::budget::parse_time(s)?;
    match crate::engine::budget::expires_at_problem(at, crate::clock::now()) {
        Some(problem) => Err(format!("the deadline {problem}")),
        None => Ok(at),
    }
}

/// A start time's words, checked before the daemon reads them in the
/// contact's zone (which it alone knows for sure).
fn parse_start_at(s: &str) -> Result<String, String> {
    crate::api::start_at::parse(s).map(|_| s.to_string())
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.to_string())),
        _ => Err(format!("'{s}' is not KEY=VALUE")),
    }
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let new = NewConversation {
        objective: args.objective.unwrap_or_default(),
        contact: args.contact,
        todos: with_answers(args.todos, args.answers, &args.answer_of),
        heartbeat_interval_ms: args.heartbeat_interval.map(millis),
        max_followups: args.max_followups,
        time_zone: args.tz,
        quiet_hours: args.quiet_hours,
        override_opt_out: args.override_opt_out,
        budget: BudgetRequest {
            max_turns: args.max_turns,
            max_tokens: args.max_tokens,
            expires_in_ms: args.expires_in.map(millis),
            expires_at: args.expires_at,
        },
        private_context: args.private_context,
        attach: args.attach,
        start_at: args.start_at,
    };
    let new = match &args.template {
        None => new,
        Some(name) => {
            let template = Templates::of(&ctx.home).load(name).map_err(super::template::error)?;
            new.from_template(template.fill(&args.vars).map_err(super::template::error)?)
        }
    };
    let ready = new.read_files().map_err(refusal)?;
    let client = ctx.client()?.with_idempotency_key(args.idempotency_key)?;
    let created = ready.create(&client).await?;
    if ctx.json {
        output::json(&created);
    } else {
        say!("{}", created.id);
        // On stderr: stdout is the id alone, for `ID=$(relay create ...)`.
        if let Some(start) = &created.start {
            complain!("relay: {}", starts(start));
        }
    }
    Ok(())
}

/// When a conversation starts, on the contact's clock and this machine's,
/// and where the zone came from: a zone relay had to assume says so.
fn starts(start: &StartTime) -> String {
    let zone = match start.zone_source {
        ZoneSource::Given => "the zone given",
        ZoneSource::Country => "the zone of the number's country",
        ZoneSource::Default => {
            "courtesy.default_tz: relay cannot tell the zone from the number, whose country keeps several times \
             or is unknown; give --tz if it is wrong"
        }
    };
    format!(
        "starts {} in {} ({zone}); that is {} here, {}",
        start.local,
        start.time_zone,
        output::time(start.at),
        output::relative(start.at)
    )
}

pub(super) fn parse_answer(text: &str) -> Result<AnswerSchema, String> {
    AnswerSchema::shorthand(text)
}

/// The todos, each with the --answer given after it.
pub(super) fn with_answers(todos: Vec<String>, answers: Vec<AnswerSchema>, answer_of: &[usize]) -> Vec<NewTodo> {
    let mut todos: Vec<NewTodo> = todos.into_iter().map(NewTodo::new).collect();
    for (schema, &n) in answers.into_iter().zip(answer_of) {
        if let Some(todo) = todos.get_mut(n) {
            todo.answer_schema = Some(schema);
        }
    }
    todos
}

/// Which --todo each --answer follows, from their places on the command
/// line (`indices`): each --answer is for the --todo just before it.
pub(super) fn pair_answers(todos: &[usize], answers: &[usize]) -> Result<Vec<usize>, String> {
    let mut of = Vec::with_capacity(answers.len());
    for &at in answers {
        let Some(n) = todos.iter().rposition(|&t| t < at) else {
            return Err("--answer says what a --todo's answer is: put it after that --todo".into());
        };
        if of.contains(&n) {
            return Err(format!("todo {} has two --answer: give one", n + 1));
        }
        of.push(n);
    }
    Ok(of)
}
