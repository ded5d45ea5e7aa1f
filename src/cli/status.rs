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
    if let Some(span) = &channel.missing {
        say!("                 the last catch-up did not finish: messages {} may be missing", span.describe());
    }
    if channel.catching_up {
        say!("                 catching up on what came while relay was away: follow-ups and first messages wait");
    }
    match &status.model {
        Some(model) => say!("  model          {model}"),
        None => say!("  model          none: conversations go to a human (answer with `relay send`)"),
    }
    if let Some(error) = &status.model_error {
        say!("  model error    {error}");
    }
    say!("  conversations  {} active, {} in all", status.active_instance_count, status.total_instance_count);
    first_contact(&status.first_contact);
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

/// What holds relay back from writing first, when anything does.
fn first_contact(status: &crate::api::FirstContactStatus) {
    if let Some(lock) = &status.reach_out_lock {
        say!("  reach-out lock {}", lock.describe());
        say!("                 first messages to new contacts wait; replies still go out");
    }
    let cap = match status.max_per_day {
        0 => "no daily cap".to_string(),
        n => format!("at most {n} a day"),
    };
    say!("  first contacts {} started in the last 24 hours ({cap})", status.started_last_24h);
    for (reason, count) in &status.waiting {
        say!("  waiting        {} for {}", output::count(*count as u32, "conversation"), reason.words());
    }
}
