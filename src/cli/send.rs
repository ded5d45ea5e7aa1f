//! `relay send`: the operator writes to the contact, or sends a file
//! (`--file`), recorded as "manual".

use super::output::say;
use super::{CliError, Context, output};
use crate::client::InstanceId;
use crate::client::request::{self, Outgoing};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// The text to send.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub message: Option<String>,
    /// Send this file instead (a photo goes as an image, anything else as a
    /// document); it becomes one of the conversation's attachments.
    #[arg(long, value_name = "FILE")]
    pub file: Option<std::path::PathBuf>,
    /// Words under the file.
    #[arg(long, value_name = "TEXT", requires = "file")]
    pub caption: Option<String>,
    /// Makes a retry safe: the same key again prints the message the first
    /// call sent and sends nothing (kept for 24 hours).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let id = InstanceId::parse(&args.id)?;
    let client = ctx.client()?.with_idempotency_key(args.idempotency_key)?;
    let outgoing = match (args.message, args.file) {
        (_, Some(path)) => Outgoing::File { path, caption: args.caption },
        // clap asks for a message when there is no file.
        (message, None) => Outgoing::Text(message.unwrap_or_default()),
    };
    let sent = request::send(&client, &id, outgoing).await.map_err(super::create::refusal)?;
    if ctx.json {
        output::json(&sent);
    } else {
        say!("Sent at {} (conversation {}).", output::time(sent.timestamp), sent.instance_id);
    }
    Ok(())
}
