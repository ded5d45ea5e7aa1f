//! `relay mcp`: serves relay's tools ([`crate::mcp`]) to an AI agent over
//! the Model Context Protocol on stdin/stdout, until the client closes stdin.
//! stdout carries protocol messages only; nothing else is printed there.

use rmcp::ServiceExt;

use super::{CliError, Context};
use crate::mcp::RelayTools;

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let tools = RelayTools::new(ctx.home.clone(), ctx.port);
    let service = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| CliError::failure(format!("the MCP session did not start: {e}")))?;
    service.waiting().await.map_err(|e| CliError::failure(format!("the MCP session failed: {e}")))?;
    Ok(())
}
