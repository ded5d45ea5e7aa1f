//! `relay status`: the daemon, its channel and its conversations.

use super::client::Client;
use super::{CliError, Context, output};
use crate::api::DaemonStatusResponse;

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let status: DaemonStatusResponse = Client::new(ctx)?.get("/status").await?;
    if ctx.json {
        output::json(&status);
        return Ok(());
    }
    let uptime = humantime::format_duration(std::time::Duration::from_secs(status.uptime_seconds));
    println!("relay {} is running", status.version);
    println!("  pid            {}", status.pid);
    println!("  uptime         {uptime}");
    println!("  port           {}", status.port);
    println!("  channel        {}: {}", status.channel.kind, status.channel.state);
    match &status.model {
        Some(model) => println!("  model          {model}"),
        None => println!("  model          none: conversations go to a human (answer with `relay send`)"),
    }
    if let Some(error) = &status.model_error {
        println!("  model error    {error}");
    }
    println!("  conversations  {} active, {} in all", status.active_instance_count, status.total_instance_count);
    println!("  home           {}", status.home);
    Ok(())
}
