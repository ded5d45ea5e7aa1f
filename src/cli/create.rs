//! `relay create`: starts a conversation. Plain output is the id alone, so
//! `ID=$(relay create ...)` works.

use super::client::Client;
use super::{CliError, Context, output};
use crate::api::{CreateInstanceRequest, CreateInstanceResponse, HeartbeatOverrides, NewTodo};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What the conversation should achieve, in plain words.
    #[arg(long)]
    pub objective: String,
    /// The contact's phone number in international format, e.g. +56912345678.
    #[arg(long)]
    pub contact: String,
    /// One thing to get done; repeat for several (ids 1, 2, ... in this order).
    #[arg(long = "todo", required = true)]
    pub todos: Vec<String>,
    /// How long to wait for a reply before a follow-up (90s, 30m, 2h) [default: 30m].
    #[arg(long, value_parser = parse_duration)]
    pub heartbeat_interval: Option<std::time::Duration>,
    /// Follow-ups before the conversation is ABANDONED [default: 5].
    #[arg(long)]
    pub max_followups: Option<u32>,
    /// Makes a retry safe: the same key again prints the conversation the
    /// first call created and creates nothing (kept for 24 hours).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crate::duration::parse(s).map_err(|e| e.to_string())
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let request = CreateInstanceRequest {
        objective: args.objective,
        target_contact: args.contact,
        todos: args.todos.into_iter().map(|text| NewTodo { text }).collect(),
        heartbeat_config: Some(HeartbeatOverrides {
            interval_ms: args.heartbeat_interval.map(|d| d.as_millis() as u64),
            max_followups: args.max_followups,
        }),
    };
    let client = Client::new(ctx)?.with_idempotency_key(args.idempotency_key);
    let created: CreateInstanceResponse = client.post("/instances", Some(&request)).await?;
    if ctx.json {
        output::json(&created);
    } else {
        println!("{}", created.id);
    }
    Ok(())
}
