//! `relay wait`: blocks until a conversation reaches a state (or changes),
//! then prints it. The daemon does the waiting (a long poll), not a loop here.
//! A conversation that has ended in a state not waited for answers at once
//! (exit 5, "has ended in FAILED"): the daemon's wait decides that, for MCP too.

use std::time::Duration;

use super::{CliError, Context, get, output};
use crate::api::limits::MAX_WAIT;
use crate::api::{ErrorCode, WaitQuery};
use crate::client::InstanceId;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// What to wait for: state names (comma-separated), `terminal`, or
    /// `change` (any change) [default: terminal,NEEDS_HUMAN_INTERVENTION].
    #[arg(long, value_name = "STATES")]
    pub until: Option<String>,
    /// Give up after this long (exit code 8), at most 1h.
    #[arg(long, default_value = "50s", value_parser = parse_timeout)]
    pub timeout: Duration,
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    let timeout = crate::duration::parse(s).map_err(|e| e.to_string())?;
    if timeout > MAX_WAIT {
        return Err("at most 1h; wait again after it".into());
    }
    Ok(timeout)
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    // Checked here too, for an error that names the flag.
    if let Some(until) = &args.until {
        crate::engine::wait::Until::parse(until).map_err(|e| CliError::usage(format!("--until: {e}")))?;
    }
    let id = InstanceId::parse(&args.id)?;
    let query = WaitQuery { until: args.until.clone(), timeout_ms: Some(args.timeout.as_millis() as u64) };
    let waited = ctx.client()?.wait(&id, &query).await?;
    if ctx.json {
        output::json(&waited.instance);
    } else {
        get::print(&waited.instance);
    }
    if waited.reached {
        return Ok(());
    }
    Err(CliError::new(
        ErrorCode::TimedOut,
        format!(
            "timed out after {}: the conversation is {}",
            crate::duration::format(args.timeout),
            waited.instance.state
        ),
    ))
}
