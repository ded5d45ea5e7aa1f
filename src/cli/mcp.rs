//! `relay mcp`: serves relay's tools ([`crate::mcp`]) to an AI agent over
//! the Model Context Protocol on stdin/stdout, until the client closes stdin.
//! stdout carries protocol messages only; nothing else is printed there.

use std::time::Duration;

use rmcp::ServiceExt;

use super::{CliError, Context};
use crate::mcp::RelayTools;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// How often `wait_for_conversation` tells a client that asked for
    /// progress (a progressToken) where the conversation stands; many
    /// clients restart their timeout on each notice.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = super::at_least_a_second)]
    pub progress_every: Duration,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let tools = RelayTools::new(ctx.home.clone(), ctx.port).with_progress_every(args.progress_every);
    let service = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| CliError::failure(format!("the MCP session did not start: {e}")))?;
    service.waiting().await.map_err(|e| CliError::failure(format!("the MCP session failed: {e}")))?;
    Ok(())
}
