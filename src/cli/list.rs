//! `relay list`: every conversation, oldest first, as a table.

use comfy_table::{Table, presets::NOTHING};

use super::output::say;
use super::{CliError, Context, output};
use crate::api::{ListQuery, State, TodoStatus};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only conversations in this state (e.g. WAITING_FOR_REPLY, paused).
    #[arg(long)]
    pub state: Option<State>,
    /// Only conversations with this contact.
    #[arg(long)]
    pub contact: Option<String>,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let contact = match &args.contact {
        Some(contact) => {
            Some(crate::contact::Contact::parse(contact).map_err(|e| CliError::usage(e.to_string()))?.to_string())
        }
        None => None,
    };
    let query = ListQuery { state: args.state.map(|s| s.to_string()), contact };
    let instances = ctx.client()?.list(&query).await?;
    if ctx.json {
        output::json(&instances);
        return Ok(());
    }
    if instances.is_empty() {
        say!("No conversations yet. Start one with `relay create`.");
        return Ok(());
    }
    let mut table = Table::new();
    table.load_preset(NOTHING).set_header(["ID", "STATE", "CONTACT", "TODOS", "UPDATED", "OBJECTIVE"]);
    for i in &instances {
        let done = i.todos.iter().filter(|t| matches!(t.status, TodoStatus::Completed | TodoStatus::Skipped)).count();
        table.add_row([
            output::short_id(&i.id),
            i.state.to_string(),
            i.target_contact.clone(),
            format!("{done}/{}", i.todos.len()),
            output::time(i.updated_at),
            output::truncate(&i.objective, 48),
        ]);
    }
    say!("{table}");
    Ok(())
}
