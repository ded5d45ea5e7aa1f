//! `relay sandbox say|outbox|offline|online|read|lock|unlock`: play a
//! contact (and their phone, and WhatsApp's reach-out lock) on the sandbox
//! channel, and read what relay sent. For trying relay and for tests; on
//! the WhatsApp channel the daemon refuses them.

use super::output::say;
use super::{CliError, Context, output};
use crate::api::{OutboxQuery, PhoneAction, PhoneRequest, SandboxLockRequest, SandboxLockState, SandboxSayRequest};
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
    /// CONTACT's phone goes offline: what relay sends stays `sent` (no ✓✓).
    Offline {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
    },
    /// CONTACT's phone comes back: what it held is delivered.
    Online {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
    },
    /// CONTACT reads every message their phone has (blue ticks).
    Read {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
    },
    /// Simulate WhatsApp's reach-out lock: until it ends, a message to a
    /// contact that has neither written nor received one is refused (error
    /// 463), and relay holds first messages to new contacts.
    Lock {
        /// How long from now it holds, e.g. 30m, 2h, 1d.
        // Hyphens allowed: "-2h" is a wrong duration, said as such.
        #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
        until: String,
        /// Asking WhatsApp about the lock says none holds: only the refused
        /// first message (error 463) reveals it.
        #[arg(long)]
        unreported: bool,
    },
    /// Lift the simulated reach-out lock (relay is told, and asks again).
    Unlock,
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
        Command::Lock { until, unreported } => {
            let lock = client.sandbox_lock(&SandboxLockRequest { lasts: until, unreported }).await?;
            lock_said(ctx, &lock);
        }
        Command::Unlock => {
            let lock = client.sandbox_unlock().await?;
            lock_said(ctx, &lock);
        }
        Command::Offline { contact } => phone(ctx, &client, contact, PhoneAction::Offline).await?,
        Command::Online { contact } => phone(ctx, &client, contact, PhoneAction::Online).await?,
        Command::Read { contact } => phone(ctx, &client, contact, PhoneAction::Read).await?,
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

async fn phone(
    ctx: &Context,
    client: &crate::client::Client,
    contact: String,
    action: PhoneAction,
) -> Result<(), CliError> {
    let phone = client.sandbox_phone(&PhoneRequest { contact, action }).await?;
    if ctx.json {
        output::json(&phone);
        return Ok(());
    }
    let who = &phone.contact;
    match action {
        PhoneAction::Offline => say!("{who}'s phone is offline: messages to it stay sent, not delivered."),
        PhoneAction::Online => {
            let read = match phone.read {
                0 => String::new(),
                n => format!(", and {} read while it was offline", output::count(n, "message")),
            };
            say!("{who}'s phone is online: {} delivered{read}.", output::count(phone.delivered, "held message"))
        }
        PhoneAction::Read if !phone.online => {
            say!("{who}'s phone is offline: what they read is told to relay when it is back online.")
        }
        PhoneAction::Read => say!("{who} read {}.", output::count(phone.read, "message")),
    }
    Ok(())
}

fn lock_said(ctx: &Context, lock: &SandboxLockState) {
    if ctx.json {
        output::json(lock);
        return;
    }
    match lock.until {
        Some(until) if lock.reported => say!(
            "Locked until {}: messages to new contacts are refused (error 463), and WhatsApp says so when asked.",
            output::time(until)
        ),
        Some(until) => say!(
            "Locked until {}: messages to new contacts are refused (error 463); asked, WhatsApp says nothing.",
            output::time(until)
        ),
        None => say!("Unlocked: messages to new contacts go out."),
    }
}
