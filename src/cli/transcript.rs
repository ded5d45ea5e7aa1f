//! `relay transcript`: a conversation's messages, oldest first, a page at
//! a time.

use super::output::{complain, say};
use super::{CliError, Context, output};
use crate::api::paging::{self, DEFAULT_LIMIT};
use crate::api::{Role, SendStatus, TranscriptQuery};
use crate::client::InstanceId;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// How many messages a page shows (1 to 1000).
    #[arg(long, default_value_t = DEFAULT_LIMIT as u64, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub limit: u64,
    /// Start after the page that gave this cursor.
    #[arg(long, conflicts_with = "all", value_parser = cursor)]
    pub cursor: Option<String>,
    /// Every page, not only the first.
    #[arg(long)]
    pub all: bool,
    /// With --json: the page as one object, {"messages": [...],
    /// "next_cursor": "...", "remaining": N} (as MCP's get_transcript
    /// answers), for a program to page with --cursor.
    #[arg(long)]
    pub with_cursor: bool,
}

/// `--cursor` as the daemon reads it, checked before anything is asked.
fn cursor(text: &str) -> Result<String, String> {
    paging::message_cursor(text).map(|id| id.to_string())
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let id = InstanceId::parse(&args.id)?;
    output::json_only(ctx, "--with-cursor", args.with_cursor)?;
    let client = ctx.client()?;
    let (messages, more) = match args.all {
        true => (client.transcript(&id).await?, None),
        false => {
            let query = TranscriptQuery { limit: Some(args.limit as usize), cursor: args.cursor.clone() };
            let page = client.transcript_page(&id, &query).await?;
            (page.items, page.next.map(|next| (page.remaining, next)))
        }
    };
    // Where the next page starts: below the messages, or on stderr beside JSON.
    let hint = more.map(|(remaining, next)| {
        let limit = match args.limit {
            limit if limit == DEFAULT_LIMIT as u64 => String::new(),
            limit => format!(" --limit {limit}"),
        };
        let more = output::count(remaining as u64, "more message");
        format!("{more}; use `relay transcript {}{limit} --cursor {next}` for the next page, or --all", args.id)
    });
    if ctx.json && args.with_cursor {
        let (remaining, next_cursor) = more.map_or((0, None), |(remaining, next)| (remaining, Some(next.to_string())));
        output::json(&crate::mcp::Transcript { messages, next_cursor, remaining });
        return Ok(());
    }
    if ctx.json {
        output::json(&messages);
        if let Some(hint) = hint {
            complain!("{hint}; --with-cursor puts the cursor in the JSON");
        }
        return Ok(());
    }
    if messages.is_empty() {
        say!("No messages yet.");
    }
    show(&messages);
    if let Some(hint) = hint {
        say!("{hint}");
    }
    Ok(())
}

/// The messages for a person, oldest first, each with its ticks, its file
/// and what became of it.
fn show(messages: &[crate::api::TranscriptMessage]) {
    // A contact's reaction, reply, edit or deletion reads with the message it acts on.
    let by_id: std::collections::HashMap<uuid::Uuid, &crate::api::TranscriptMessage> =
        messages.iter().map(|m| (m.id, m)).collect();
    for m in messages {
        let content = match m.role {
            Role::Contact => crate::agent::acts::contact_message(m, &m.content, &by_id, &[]),
            _ => m.content.clone(),
        };
        let who = match m.role {
            Role::Agent => "agent",
            Role::Contact => "contact",
            Role::System => "system",
            Role::Manual => "operator",
        };
        // WhatsApp's ticks, after the message: ✓ the server has it, ✓✓ the
        // contact's phone has it.
        let mark = match m.send_status {
            _ if m.outside_relay => "  (on the operator's own WhatsApp)",
            Some(SendStatus::Sent) => "  ✓",
            Some(SendStatus::Delivered) => "  ✓✓",
            Some(SendStatus::Read) => "  ✓✓ read",
            Some(SendStatus::Played) => "  ✓✓ played",
            _ => "",
        };
        let lines: Vec<&str> = content.lines().collect();
        let last = lines.len().saturating_sub(1);
        for (n, line) in lines.iter().enumerate() {
            let mark = if n == last { mark } else { "" };
            match n {
                0 => say!("{}  {who:<8}  {line}{mark}", output::time(m.timestamp)),
                _ => say!("{:31}{line}{mark}", ""),
            }
        }
        if lines.is_empty() {
            say!("{}  {who:<8}  {}", output::time(m.timestamp), mark.trim_start());
        }
        if let Some(media) = &m.media {
            say!("{:31}↳ {}, message {}", "", file_line(media), m.id);
        }
        match (m.send_status, &m.delivery_error) {
            (_, Some(error)) => say!("{:31}(not delivered: {error})", ""),
            (Some(SendStatus::Unconfirmed), None) => {
                say!("{:31}(unconfirmed: relay stopped while sending it; it may not have arrived)", "")
            }
            (Some(SendStatus::Pending), None) => say!("{:31}(sending)", ""),
            _ => {}
        }
    }
}

/// A message's file in a few words: "photo m1, image/jpeg, 2 KB" when it is
/// kept, else what became of it.
fn file_line(media: &crate::api::MediaInfo) -> String {
    use crate::api::MediaStatus;
    let kind = crate::media::label::word(media.kind);
    match media.status {
        MediaStatus::Stored => {
            let facts = [media.mime.clone(), media.bytes.map(crate::media::label::size)];
            let facts: Vec<String> = facts.into_iter().flatten().collect();
            format!("{kind} {}, {}", media.reference, facts.join(", "))
        }
        status => format!("{kind} {}: {}", media.reference, status.as_str().replace('_', " ")),
    }
}
