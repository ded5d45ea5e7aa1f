//! `relay wait`: blocks until a conversation reaches a state (or changes),
//! then prints it. The daemon does the waiting (a long poll), not a loop here.
//! A conversation that has ended in a state not waited for answers at once
//! (exit 5, "has ended in FAILED"): the daemon's wait decides that, for MCP too.

use std::time::Duration;

use super::client::Client;
use super::{CliError, Context, get, instance_path, output};
use crate::api::WaitResponse;

/// Exit code when the wait timed out first.
pub const EXIT_TIMED_OUT: u8 = 8;

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
    if timeout > Duration::from_secs(3600) {
        return Err("at most 1h; wait again after it".into());
    }
    Ok(timeout)
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    // Checked here too, for an error that names the flag.
    if let Some(until) = &args.until {
        crate::engine::wait::Until::parse(until).map_err(|e| CliError::usage(format!("--until: {e}")))?;
    }
    let mut path = format!("{}/wait?timeout_ms={}", instance_path(&args.id)?, args.timeout.as_millis());
    if let Some(until) = &args.until {
        path.push_str(&format!("&until={}", query_escape(until)));
    }
    let client = Client::new(ctx)?.with_timeout(args.timeout + Duration::from_secs(30));
    let waited: WaitResponse = client.get(&path).await?;
    if ctx.json {
        output::json(&waited.instance);
    } else {
        get::print(&waited.instance);
    }
    if waited.reached {
        return Ok(());
    }
    Err(CliError::new(
        EXIT_TIMED_OUT,
        "timed_out",
        format!(
            "timed out after {}: the conversation is {}",
            crate::duration::format(args.timeout),
            waited.instance.state
        ),
    ))
}

/// State names, commas and words: only letters, `_`, `-` and `,` reach the
/// query as they are; anything else is percent-encoded.
fn query_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b',' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
