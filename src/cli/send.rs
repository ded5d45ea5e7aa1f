//! `relay send`: the operator writes to the contact (recorded as "manual").

use super::output::say;
use super::{CliError, Context, output};
use crate::api::SendMessageRequest;
use crate::client::InstanceId;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// The text to send.
    pub message: String,
    /// Makes a retry safe: the same key again prints the message the first
    /// call sent and sends nothing (kept for 24 hours).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let id = InstanceId::parse(&args.id)?;
    let request = SendMessageRequest { message: args.message };
    let client = ctx.client()?.with_idempotency_key(args.idempotency_key)?;
    let sent = client.send(&id, &request).await?;
    if ctx.json {
        output::json(&sent);
    } else {
        say!("Sent at {} (conversation {}).", output::time(sent.timestamp), sent.instance_id);
    }
    Ok(())
}
