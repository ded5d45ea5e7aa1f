//! `relay transcript`: a conversation's messages, oldest first.

use super::output::say;
use super::{CliError, Context, output};
use crate::api::{Role, SendStatus};
use crate::client::InstanceId;

pub async fn run(ctx: &Context, id: &str) -> Result<(), CliError> {
    let id = InstanceId::parse(id)?;
    let messages = ctx.client()?.transcript(&id).await?;
    if ctx.json {
        output::json(&messages);
        return Ok(());
    }
    if messages.is_empty() {
        say!("No messages yet.");
    }
    for m in &messages {
        let who = match m.role {
            Role::Agent => "agent",
            Role::Contact => "contact",
            Role::System => "system",
            Role::Manual => "operator",
        };
        // WhatsApp's ticks, after the message: ✓ the server has it, ✓✓ the
        // contact's phone has it.
        let mark = match m.send_status {
            Some(SendStatus::Sent) => "  ✓",
            Some(SendStatus::Delivered) => "  ✓✓",
            Some(SendStatus::Read) => "  ✓✓ read",
            Some(SendStatus::Played) => "  ✓✓ played",
            _ => "",
        };
        let lines: Vec<&str> = m.content.lines().collect();
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
    Ok(())
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
