//! `relay status`: the daemon, its channel and its conversations.

use super::output::say;
use super::{CliError, Context, output};

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let status = ctx.client()?.status().await?;
    if ctx.json {
        output::json(&status);
        return Ok(());
    }
    let uptime = humantime::format_duration(std::time::Duration::from_secs(status.uptime_seconds));
    say!("relay {} is running", status.version);
    say!("  pid            {}", status.pid);
    say!("  uptime         {uptime}");
    say!("  port           {}", status.port);
    let channel = &status.channel;
    match &channel.phone {
        Some(phone) => say!("  channel        {} ({phone}): {}", channel.kind, channel.state),
        None => say!("  channel        {}: {}", channel.kind, channel.state),
    }
    if let Some(version) = &channel.version {
        say!("                 WhatsApp Web client {version}");
    }
    if let Some(detail) = &channel.detail {
        say!("                 {detail}");
    }
    match &status.model {
        Some(model) => say!("  model          {model}"),
        None => say!("  model          none: conversations go to a human (answer with `relay send`)"),
    }
    if let Some(error) = &status.model_error {
        say!("  model error    {error}");
    }
    say!("  conversations  {} active, {} in all", status.active_instance_count, status.total_instance_count);
    if status.unrouted_message_count > 0 {
        say!(
            "  unrouted       {} messages from contacts with no conversation (in unrouted.jsonl)",
            status.unrouted_message_count
        );
    }
    // Deliveries that fail now: each retried until taken, so say so here
    // rather than only in `relay webhook list`.
    for webhook in &status.failing_webhooks {
        say!(
            "  webhook        {} failing ({} attempts): {}",
            webhook.id,
            webhook.failures,
            webhook.last_error.as_deref().unwrap_or("no error recorded")
        );
        say!("                 {} events waiting for {}", webhook.pending, webhook.url);
    }
    say!("  home           {}", status.home);
    Ok(())
}
