//! `relay sandbox say|outbox`: play a contact on the sandbox channel, and
//! read what relay sent. For trying relay and for tests; on the WhatsApp
//! channel the daemon refuses them.

use super::output::say;
use super::{CliError, Context, output};
use crate::api::{OutboxQuery, SandboxSayRequest};
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
    let client = ctx.client()?;
    match command {
        Command::Say { contact, text } => {
            let request = SandboxSayRequest { contact, text };
            let said = client.sandbox_say(&request).await?;
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
            let contact = match contact {
                Some(c) => Some(Contact::parse(&c).map_err(|e| CliError::usage(e.to_string()))?.to_string()),
                None => None,
            };
            let sent = client.sandbox_outbox(&OutboxQuery { contact: contact.clone() }).await?;
            if ctx.json {
                output::json(&sent);
            } else if sent.is_empty() {
                match contact {
                    Some(contact) => say!("relay has sent nothing to {contact} yet."),
                    None => say!("relay has sent nothing yet."),
                }
            } else {
                for e in &sent {
                    let head = format!("{}  to {}  ", output::time(e.timestamp), e.contact);
                    say!("{head}{}", output::hang(&e.text, head.chars().count()));
                }
            }
        }
    }
    Ok(())
}
