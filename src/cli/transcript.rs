//! `relay transcript`: a conversation's messages, oldest first.

use super::client::Client;
use super::{CliError, Context, instance_path, output};
use crate::api::{Role, TranscriptMessage};

pub async fn run(ctx: &Context, id: &str) -> Result<(), CliError> {
    let path = format!("{}/transcript", instance_path(id)?);
    let messages: Vec<TranscriptMessage> = Client::new(ctx)?.get(&path).await?;
    if ctx.json {
        output::json(&messages);
        return Ok(());
    }
    if messages.is_empty() {
        println!("No messages yet.");
    }
    for m in &messages {
        let who = match m.role {
            Role::Agent => "agent",
            Role::Contact => "contact",
            Role::System => "system",
            Role::Manual => "operator",
        };
        let mut lines = m.content.lines();
        println!("{}  {who:<8}  {}", output::time(m.timestamp), lines.next().unwrap_or(""));
        for line in lines {
            println!("{:31}{line}", "");
        }
        if let Some(error) = &m.delivery_error {
            println!("{:31}(not delivered: {error})", "");
        }
    }
    Ok(())
}
