//! `relay events`: the event log, like `tail`: what is stored, then exit;
//! with `--follow`, new events as they happen. `--json` prints NDJSON, one
//! event a line with its sequence number `seq`, to resume with `--after`.

use std::io::Write;
use std::time::{Duration, Instant};

use super::{CliError, Context, output};
use crate::api::{ConversationEvent, ErrorCode, EventData, EventsQuery};
use crate::client::{InstanceId, StreamEnd};
use crate::home::daemon_files;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the events of this conversation (id or unique prefix).
    #[arg(long)]
    pub id: Option<String>,
    /// Only events after this sequence number.
    #[arg(long, default_value_t = 0)]
    pub after: u64,
    /// Keep printing new events as they happen, until interrupted (or the
    /// daemon stops: exit 3, with the command that goes on from there).
    #[arg(long, short)]
    pub follow: bool,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    // Same check as every other id argument.
    let instance = args.id.as_deref().map(InstanceId::parse).transpose()?.map(|id| id.as_str().to_string());
    let query = EventsQuery { after: Some(args.after), instance, follow: Some(args.follow) };
    let json = ctx.json;
    let mut last_seq = args.after;
    // A client waiting for more events is not a slow daemon: no timeout on the stream.
    let end = ctx
        .client()?
        .events(&query, |event: ConversationEvent| {
            last_seq = event.seq;
            let mut stdout = output::stdout();
            // Flushed per event: `relay events -f | ...` sees each at once.
            if json {
                let line = serde_json::to_string(&event).expect("events serialise");
                writeln!(stdout, "{line}").and_then(|()| stdout.flush()).is_ok()
            } else {
                output::human_line(&mut stdout, &readable(&event));
                true
            }
        })
        .await?;
    match (end, args.follow) {
        (StreamEnd::Reader, _) | (StreamEnd::Daemon, false) => Ok(()),
        (StreamEnd::Cut(e), false) => {
            Err(CliError::failure(format!("the daemon's answer was cut: {}", crate::client::chain(&e))))
        }
        // Followed, the stream has no end of its own: the daemon went away
        // (it ends the stream when it stops; a killed one cuts it). Silence
        // and exit 0 would read as "all done".
        (StreamEnd::Daemon | StreamEnd::Cut(_), true) => Err(stream_lost(ctx, &args, last_seq).await),
    }
}

/// Why a followed stream ended, and how to go on without a gap.
async fn stream_lost(ctx: &Context, args: &Args, last_seq: u64) -> CliError {
    let id = args.id.as_deref().map(|id| format!(" --id {}", id.trim())).unwrap_or_default();
    let again = format!("relay events --follow --after {last_seq}{id}");
    // A daemon that is stopping ends the stream a moment before it is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    while daemon_files::is_locked(&ctx.home) {
        if Instant::now() > deadline {
            return CliError::failure(format!(
                "the daemon ended the event stream but still runs (see relay.log in {}); go on with `{again}`",
                ctx.home.root().display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    CliError::new(
        ErrorCode::DaemonStopped,
        format!("the daemon stopped; once it runs again (`relay start`), go on with `{again}`"),
    )
}

/// One line for a person: sequence number, time, conversation, what happened.
fn readable(event: &ConversationEvent) -> String {
    let what = match &event.data {
        EventData::Created { state, target_contact } => format!("created for {target_contact} ({state})"),
        EventData::Transition { from, to, trigger, reason } => {
            let reason = reason.as_deref().map(|r| format!(": {}", output::truncate(r, 80))).unwrap_or_default();
            format!("{from} -> {to} ({trigger}){reason}")
        }
        EventData::MessageIn { untrusted_contact_text, act: None, .. } => {
            format!("contact wrote: \"{}\"", output::truncate(untrusted_contact_text, 80))
        }
        EventData::MessageIn { untrusted_contact_text, act: Some(act), .. } => {
            let words = output::truncate(untrusted_contact_text, 80);
            let on = act.message_id.map(|id| format!(" {}", output::short_id(&id))).unwrap_or_default();
            match act.kind {
                crate::api::ActKind::Reaction => format!("contact reacted \"{words}\" to message{on}"),
                crate::api::ActKind::ReactionRemoved => format!("contact took back their reaction to message{on}"),
                crate::api::ActKind::Reply => format!("contact replied to message{on}: \"{words}\""),
                crate::api::ActKind::Edit => format!("contact edited message{on}: \"{words}\""),
                crate::api::ActKind::Deletion => format!("contact deleted message{on}"),
                crate::api::ActKind::Call => "contact called (not answered)".to_string(),
            }
        }
        EventData::Media { media, untrusted_contact_text, .. } => {
            let what = crate::media::label::word(media.kind);
            format!(
                "{what} {} {}: \"{}\"",
                media.reference,
                media.status.as_str().replace('_', " "),
                output::truncate(untrusted_contact_text, 80)
            )
        }
        EventData::MessageOut { text, outside_relay: true, .. } => {
            format!("operator wrote on their own WhatsApp: \"{}\"", output::truncate(text, 80))
        }
        EventData::MessageOut { role, text, send_status, .. } => {
            let who = match role {
                crate::api::Role::Manual => "operator",
                _ => "agent",
            };
            format!("{who} wrote ({}): \"{}\"", send_status.as_str(), output::truncate(text, 80))
        }
        EventData::MessageStatus { message_id, send_status, overdue, delivery_error, .. } => {
            let message = output::short_id(message_id);
            match (overdue, delivery_error) {
                (true, _) => format!("message {message} not delivered yet (delivery.timeout passed)"),
                (false, Some(error)) => format!("message {message} failed: {}", output::truncate(error, 80)),
                (false, None) => format!("message {message} {}", send_status.as_str()),
            }
        }
        EventData::Todo { todo_id, status, answer, .. } => {
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
        EventData::Recovered { reason } => format!("recovered: {}", output::truncate(reason, 120)),
    };
    format!("#{:<5} {}  {}  {what}", event.seq, output::time(event.at), output::short_id(&event.instance_id))
}
