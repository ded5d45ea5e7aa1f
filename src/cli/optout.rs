//! `relay optout list | add | remove`: the do-not-contact list, the numbers
//! relay does not write to (a contact who asked to be left alone, or a
//! number the operator listed). Reasons can come from a conversation (the
//! agent's account of the contact's request), so the human views show them
//! made visible like any text relay did not write.

use comfy_table::Table;

use super::output::say;
use super::{CliError, Context, output};
use crate::api::{OptOut, OptOutRequest, OptOutSource};
use crate::contact::Contact;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Show the numbers relay does not write to: since when, who listed them, why.
    List,
    /// Put a number on the list: its conversations end (queued ones too) and
    /// nothing more is sent to it. A number listed already keeps its entry.
    Add(AddArgs),
    /// Take a number off the list: relay may write to it again.
    Remove {
        /// The phone number in international format, e.g. +56912345678.
        contact: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The phone number in international format, e.g. +56912345678.
    pub contact: String,
    /// Why, in your words (kept with the entry).
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
}

pub async fn run(ctx: &Context, command: Command) -> Result<(), CliError> {
    match command {
        Command::List => {
            let all = ctx.client()?.opt_outs().await?;
            if ctx.json {
                output::json(&all);
            } else if all.is_empty() {
                say!("No numbers on the do-not-contact list.");
            } else {
                let mut table = Table::new();
                table.load_preset(comfy_table::presets::NOTHING).set_header([
                    "CONTACT",
                    "SINCE",
                    "LISTED BY",
                    "OVERRIDES",
                    "REASON",
                ]);
                for entry in &all {
                    table.add_row([
                        entry.contact.clone(),
                        output::time(entry.since),
                        listed_by(entry.source).to_string(),
                        entry.overrides.len().to_string(),
                        output::truncate(&entry.reason, 48),
                    ]);
                }
                say!("{table}");
            }
        }
        Command::Add(args) => {
            // The number is checked here first: a typo is the caller's to
            // fix before relay looks for its daemon.
            let contact = checked(&args.contact)?;
            let request = OptOutRequest { contact: contact.to_string(), reason: args.reason };
            let added = ctx.client()?.add_opt_out(&request).await?;
            if ctx.json {
                output::json(&added);
            } else if added.added {
                say!(
                    "{contact} is on the do-not-contact list: relay will not write to it, and its conversations have ended."
                );
            } else {
                let entry = &added.opt_out;
                say!(
                    "{contact} was on the do-not-contact list already ({}): its entry is kept as it was, and its \
                     conversations have ended.",
                    listing(entry)
                );
            }
        }
        Command::Remove { contact } => {
            let contact = checked(&contact)?;
            let removed = ctx.client()?.remove_opt_out(contact.as_str()).await?;
            if ctx.json {
                output::json(&removed);
            } else {
                say!("{contact} is off the do-not-contact list ({}): relay may write to it again.", listing(&removed));
            }
        }
    }
    Ok(())
}

/// `text` as a phone number, or the reason it is not one (exit 2).
fn checked(text: &str) -> Result<Contact, CliError> {
    Contact::parse(text).map_err(|e| CliError::usage(e.to_string()))
}

fn listed_by(source: OptOutSource) -> &'static str {
    match source {
        OptOutSource::Contact => "contact",
        OptOutSource::Operator => "operator",
    }
}

/// "listed by the contact on 2026-11-23 20:45:10 -03:00: they asked ...",
/// the reason on one line (it may be the agent's words).
fn listing(entry: &OptOut) -> String {
    let who = match entry.source {
        OptOutSource::Contact => "the contact asked",
        OptOutSource::Operator => "listed by the operator",
    };
    format!("{who} on {}: {}", output::time(entry.since), output::truncate(&entry.reason, 120))
}
