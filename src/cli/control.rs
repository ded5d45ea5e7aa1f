//! `relay cancel`, `relay pause`, `relay resume`.

use super::output::say;
use super::{CliError, Context, output};
use crate::client::InstanceId;

#[derive(Debug, Clone, Copy)]
pub enum Action {
    Cancel,
    Pause,
    Resume,
}

pub async fn run(ctx: &Context, id: &str, action: Action) -> Result<(), CliError> {
    let verb = match action {
        Action::Cancel => "cancel",
        Action::Pause => "pause",
        Action::Resume => "resume",
    };
    let id = InstanceId::parse(id)?;
    let client = ctx.client()?;
    let instance = match action {
        Action::Cancel => client.cancel(&id).await?,
        Action::Pause => client.pause(&id).await?,
        Action::Resume => client.resume(&id).await?,
    };
    if ctx.json {
        output::json(&instance);
        return Ok(());
    }
    // The entry of this command (the conversation may have moved on since).
    let from = instance
        .history
        .iter()
        .rev()
        .find(|t| t.trigger == verb)
        .and_then(|t| t.from_state)
        .map(|s| format!(" (was {s})"))
        .unwrap_or_default();
    say!("{} is now {}{from}", instance.id, instance.state);
    Ok(())
}
