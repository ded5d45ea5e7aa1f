//! `relay list`: every conversation, oldest first, as a table.

use comfy_table::{Table, presets::NOTHING};

use super::client::Client;
use super::output::say;
use super::{CliError, Context, output};
use crate::api::{ConversationInstance, State, TodoStatus};

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
    let mut query = Vec::new();
    if let Some(state) = args.state {
        query.push(format!("state={state}"));
    }
    if let Some(contact) = &args.contact {
        let contact = crate::contact::Contact::parse(contact).map_err(|e| CliError::usage(e.to_string()))?;
        query.push(format!("contact=%2B{}", &contact.as_str()[1..]));
    }
    let path = if query.is_empty() { "/instances".to_string() } else { format!("/instances?{}", query.join("&")) };
    let instances: Vec<ConversationInstance> = Client::new(ctx)?.get(&path).await?;
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
