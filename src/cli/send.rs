//! `relay send`: the operator writes to the contact (recorded as "manual").

use super::client::Client;
use super::output::say;
use super::{CliError, Context, instance_path, output};
use crate::api::{SendMessageRequest, TranscriptMessage};

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
    let path = format!("{}/send", instance_path(&args.id)?);
    let request = SendMessageRequest { message: args.message };
    let client = Client::new(ctx)?.with_timeout(super::client::SEND_TIMEOUT).with_idempotency_key(args.idempotency_key);
    let sent: TranscriptMessage = client.post(&path, Some(&request)).await?;
    if ctx.json {
        output::json(&sent);
    } else {
        say!("Sent at {} (conversation {}).", output::time(sent.timestamp), sent.instance_id);
    }
    Ok(())
}
