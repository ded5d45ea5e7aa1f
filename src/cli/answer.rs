//! `relay answer`: the operator answers the conversation agent's question.
//! The answer goes to the agent, which carries on; the contact never sees it
//! (to speak to the contact, use `relay send`).

use super::client::Client;
use super::output::say;
use super::{CliError, Context, instance_path, output};
use crate::api::{AnswerRequest, ConversationInstance};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// The answer, for the agent.
    pub answer: String,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let path = format!("{}/answer", instance_path(&args.id)?);
    let instance: ConversationInstance =
        Client::new(ctx)?.post(&path, Some(&AnswerRequest { answer: args.answer })).await?;
    if ctx.json {
        output::json(&instance);
        return Ok(());
    }
    let question = instance.earlier_questions.last().map(|q| format!(" ({})", q.id)).unwrap_or_default();
    say!("Answered{question}; the agent goes on. {} is now {}.", instance.id, instance.state);
    Ok(())
}
