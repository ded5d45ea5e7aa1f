//! `relay send`: the operator writes to the contact (recorded as "manual").

use super::client::Client;
use super::{CliError, Context, instance_path, output};
use crate::api::{SendMessageRequest, TranscriptMessage};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// The text to send.
    pub message: String,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let path = format!("{}/send", instance_path(&args.id)?);
    let request = SendMessageRequest { message: args.message };
    let sent: TranscriptMessage =
        Client::new(ctx)?.with_timeout(super::client::SEND_TIMEOUT).post(&path, Some(&request)).await?;
    if ctx.json {
        output::json(&sent);
    } else {
        println!("Sent at {} (conversation {}).", output::time(sent.timestamp), sent.instance_id);
    }
    Ok(())
}
