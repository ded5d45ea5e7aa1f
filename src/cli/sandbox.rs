//! `relay sandbox say|outbox`: play a contact on the sandbox channel, and
//! read what relay sent. For trying relay and for tests; on the WhatsApp
//! channel the daemon refuses them.

use super::client::Client;
use super::output::say;
use super::{CliError, Context, output};
use crate::api::{OutboxEntry, SandboxSayRequest, SandboxSayResponse};
use crate::contact::Contact;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Deliver a message from CONTACT, as if it came over WhatsApp.
    Say {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
        text: String,
    },
    /// List what relay sent to contacts, oldest first.
    Outbox {
        /// Only messages to this contact.
        #[arg(long)]
        contact: Option<String>,
    },
}

pub async fn run(ctx: &Context, command: Command) -> Result<(), CliError> {
    let client = Client::new(ctx)?;
    match command {
        Command::Say { contact, text } => {
            let request = SandboxSayRequest { contact, text };
            let said: SandboxSayResponse = client.post("/sandbox/messages", Some(&request)).await?;
            if ctx.json {
                output::json(&said);
            } else {
                match said.instance_id {
                    Some(id) => say!("Delivered to conversation {id}."),
                    None => say!(
                        "{} has no live conversation: not answered, kept in unrouted.jsonl (as on WhatsApp).",
                        said.contact
                    ),
                }
            }
        }
        Command::Outbox { contact } => {
            let path = match contact {
                Some(c) => {
                    let c = Contact::parse(&c).map_err(|e| CliError::usage(e.to_string()))?;
                    format!("/sandbox/outbox?contact=%2B{}", &c.as_str()[1..])
                }
                None => "/sandbox/outbox".to_string(),
            };
            let sent: Vec<OutboxEntry> = client.get(&path).await?;
            if ctx.json {
                output::json(&sent);
            } else if sent.is_empty() {
                say!("relay has sent nothing yet.");
            } else {
                for e in &sent {
                    say!("{}  to {}  {}", output::time(e.timestamp), e.contact, e.text);
                }
            }
        }
    }
    Ok(())
}
