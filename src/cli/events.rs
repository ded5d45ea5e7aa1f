//! `relay events`: the event log, like `tail`: what is stored, then exit;
//! with `--follow`, new events as they happen. `--json` prints NDJSON, one
//! event a line with its sequence number `seq`, to resume with `--after`.

use std::io::Write;

use super::client::Client;
use super::{CliError, Context, output};
use crate::api::{ConversationEvent, EventData};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the events of this conversation (id or unique prefix).
    #[arg(long)]
    pub id: Option<String>,
    /// Only events after this sequence number.
    #[arg(long, default_value_t = 0)]
    pub after: u64,
    /// Keep printing new events as they happen (until interrupted).
    #[arg(long, short)]
    pub follow: bool,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let mut path = format!("/events?after={}&follow={}", args.after, args.follow);
    if let Some(id) = &args.id {
        // Same check as every other id argument.
        super::instance_path(id)?;
        path.push_str(&format!("&instance={}", id.trim()));
    }
    let json = ctx.json;
    // A client waiting for more events is not a slow daemon: no timeout on the stream.
    Client::new(ctx)?
        .get_lines(&path, |event: ConversationEvent| {
            let mut stdout = std::io::stdout().lock();
            // Flushed per event: `relay events -f | ...` sees each at once.
            if json {
                let line = serde_json::to_string(&event).expect("events serialise");
                writeln!(stdout, "{line}").and_then(|()| stdout.flush()).is_ok()
            } else {
                output::human_line(&mut stdout, &readable(&event));
                true
            }
        })
        .await
}

/// One line for a person: sequence number, time, conversation, what happened.
fn readable(event: &ConversationEvent) -> String {
    let what = match &event.data {
        EventData::Created { state, target_contact } => format!("created for {target_contact} ({state})"),
        EventData::Transition { from, to, trigger, reason } => {
            let reason = reason.as_deref().map(|r| format!(": {}", output::truncate(r, 80))).unwrap_or_default();
            format!("{from} -> {to} ({trigger}){reason}")
        }
        EventData::MessageIn { untrusted_contact_text, .. } => {
            format!("contact wrote: \"{}\"", output::truncate(untrusted_contact_text, 80))
        }
        EventData::MessageOut { role, text, send_status, .. } => {
            let who = match role {
                crate::api::Role::Manual => "operator",
                _ => "agent",
            };
            format!("{who} wrote ({}): \"{}\"", format!("{send_status:?}").to_lowercase(), output::truncate(text, 80))
        }
        EventData::Todo { todo_id, status, answer } => {
            let answer = answer.as_deref().map(|a| format!(": {}", output::truncate(a, 80))).unwrap_or_default();
            format!("todo {todo_id} {}{answer}", status.as_str())
        }
        EventData::Question { question } => {
            let asked = question.question.as_deref().unwrap_or(&question.reason);
            format!("question {}: {}", question.id, output::truncate(asked, 80))
        }
        EventData::Answer { question_id, answer } => {
            format!("answer to {question_id}: {}", output::truncate(answer, 80))
        }
    };
    format!("#{:<5} {}  {}  {what}", event.seq, output::time(event.at), output::short_id(&event.instance_id))
}
