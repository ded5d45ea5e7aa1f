//! `relay cancel`, `relay pause`, `relay resume`.

use super::client::Client;
use super::output::say;
use super::{CliError, Context, instance_path, output};
use crate::api::ConversationInstance;

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
    let path = format!("{}/{verb}", instance_path(id)?);
    let instance: ConversationInstance = Client::new(ctx)?.post(&path, None::<&()>).await?;
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
