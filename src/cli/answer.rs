//! `relay answer`: the operator answers the conversation agent's question.
//! The answer goes to the agent, which carries on; the contact never sees it
//! (to speak to the contact, use `relay send`).

use super::output::say;
use super::{CliError, Context, output};
use crate::api::AnswerRequest;
use crate::client::InstanceId;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// The answer, for the agent.
    pub answer: String,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let id = InstanceId::parse(&args.id)?;
    let instance = ctx.client()?.answer(&id, &AnswerRequest { answer: args.answer }).await?;
    if ctx.json {
        output::json(&instance);
        return Ok(());
    }
    let question = instance.earlier_questions.last().map(|q| format!(" ({})", q.id)).unwrap_or_default();
    say!("Answered{question}; the agent goes on. {} is now {}.", instance.id, instance.state);
    Ok(())
}
