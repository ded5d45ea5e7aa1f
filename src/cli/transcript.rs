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
        let mut lines = m.content.lines();
        say!("{}  {who:<8}  {}", output::time(m.timestamp), lines.next().unwrap_or(""));
        for line in lines {
            say!("{:31}{line}", "");
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
