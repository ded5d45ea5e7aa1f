//! `relay media ID MESSAGE --out FILE`: the file of a conversation's message
//! (a contact's photo, voice note or document), copied out of the relay home.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use super::output::say;
use super::{CliError, Context, output};
use crate::client::InstanceId;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation's id (or a unique prefix).
    id: String,
    /// The message: its file's reference (m1), its id, or a unique start of
    /// its id (4 characters or more), as `relay transcript` shows them.
    message: String,
    /// Where to write the file (owner-only); `-` for standard output.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    force: bool,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let id = InstanceId::parse(&args.id)?;
    let bytes = ctx.client()?.media(&id, &args.message).await?;
    if args.out.as_os_str() == "-" {
        output::stdout().write_all(&bytes).map_err(|e| CliError::failure(format!("cannot write the file: {e}")))?;
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).mode(0o600);
    if args.force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let written = options.open(&args.out).and_then(|mut file| file.write_all(&bytes));
    written.map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            CliError::usage(format!("{} exists: pass --force to replace it", args.out.display()))
        }
        _ => CliError::failure(format!("cannot write {}: {e}", args.out.display())),
    })?;
    if ctx.json {
        output::json(&serde_json::json!({"path": args.out, "bytes": bytes.len()}));
    } else {
        say!("Wrote {} ({}).", args.out.display(), crate::media::label::size(bytes.len() as u64));
    }
    Ok(())
}
