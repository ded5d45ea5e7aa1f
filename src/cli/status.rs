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
    let channel = &status.channel;
    match &channel.phone {
        Some(phone) => println!("  channel        {} ({phone}): {}", channel.kind, channel.state),
        None => println!("  channel        {}: {}", channel.kind, channel.state),
    }
    if let Some(detail) = &channel.detail {
        println!("                 {detail}");
    }
    match &status.model {
        Some(model) => println!("  model          {model}"),
        None => println!("  model          none: conversations go to a human (answer with `relay send`)"),
    }
    if let Some(error) = &status.model_error {
        println!("  model error    {error}");
    }
    println!("  conversations  {} active, {} in all", status.active_instance_count, status.total_instance_count);
    if status.unrouted_message_count > 0 {
        println!(
            "  unrouted       {} messages from contacts with no conversation (in unrouted.jsonl)",
            status.unrouted_message_count
        );
    }
    println!("  home           {}", status.home);
    Ok(())
}
