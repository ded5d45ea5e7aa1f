//! `relay webhook add | list | remove`: URLs the daemon POSTs every event
//! to, signed with HMAC-SHA256 (see docs/main-agent.md for how to verify).

use comfy_table::Table;

use super::output::say;
use super::{CliError, Context, output};
use crate::api::WebhookRequest;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Register a URL; prints its secret (shown only this once). A URL
    /// registered already (same events) is not added twice: shows that webhook.
    Add(AddArgs),
    /// Show the webhooks and how their deliveries go (failures, last error).
    List,
    /// Stop delivering to a webhook.
    Remove {
        /// The webhook's id (wh_...), or a unique prefix of at least 4 hex digits.
        id: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Where to POST the events (http or https).
    pub url: String,
    /// Only these event types, comma-separated: created, transition,
    /// message_in, media, message_out, message_status, todo, question, answer
    /// [default: all].
    #[arg(long, value_delimiter = ',')]
    pub events: Vec<String>,
}

pub async fn run(ctx: &Context, command: Command) -> Result<(), CliError> {
    let client = ctx.client()?;
    match command {
        Command::Add(args) => {
            let request = WebhookRequest { url: args.url, events: args.events };
            let created = client.add_webhook(&request).await?;
            if ctx.json {
                output::json(&created);
            } else if let (true, Some(secret)) = (created.created, &created.secret) {
                say!("Added webhook {} -> {}", created.webhook.id, without_password(&created.webhook.url));
                say!("Secret (shown only now; it signs each delivery): {secret}");
            } else {
                let id = &created.webhook.id;
                say!("Webhook {id} already delivers to {} (nothing added).", without_password(&created.webhook.url));
                say!(
                    "Its secret is the one shown when it was added; for a new one: relay webhook remove {id}, then add it again."
                );
            }
        }
        Command::List => {
            let all = client.webhooks().await?;
            if ctx.json {
                output::json(&all);
            } else if all.is_empty() {
                say!("No webhooks: `relay webhook add URL`.");
            } else {
                let mut table = Table::new();
                table.load_preset(comfy_table::presets::NOTHING).set_header([
                    "ID",
                    "URL",
                    "EVENTS",
                    "DELIVERED",
                    "PENDING",
                    "FAILURES",
                    "LAST ERROR",
                ]);
                for w in &all {
                    let events = if w.events.is_empty() { "all".to_string() } else { w.events.join(",") };
                    let error = w.last_error.as_deref().map(|e| output::truncate(e, 40)).unwrap_or_default();
                    table.add_row([
                        w.id.clone(),
                        output::truncate(&without_password(&w.url), 40),
                        events,
                        format!("#{}", w.delivered_seq),
                        w.pending.to_string(),
                        w.failures.to_string(),
                        error,
                    ]);
                }
                say!("{table}");
            }
        }
        Command::Remove { id } => {
            let removed = client.remove_webhook(&id).await?;
            if ctx.json {
                output::json(&removed);
            } else {
                say!("Removed webhook {} ({}).", removed.id, without_password(&removed.url));
            }
        }
    }
    Ok(())
}

/// `url` with the password of its user info, if any, written `***`: a
/// terminal (and whoever reads over a shoulder or a scrollback) needs the
/// address, not the credential. `--json` keeps the URL as registered.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(user, _)| user);
            let hidden = if user_info.contains(':') { format!("{user}:***") } else { user.to_string() };
            format!("{scheme}://{hidden}@{host}{path}")
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::without_password;

    #[test]
    fn a_password_in_a_url_is_not_shown() {
        assert_eq!(without_password("https://ana:s3cret@hooks.example/x?y=1"), "https://ana:***@hooks.example/x?y=1");
        assert_eq!(without_password("https://ana@hooks.example/x"), "https://ana@hooks.example/x");
        assert_eq!(without_password("http://127.0.0.1:9/h@x"), "http://127.0.0.1:9/h@x");
        assert_eq!(without_password("not a url"), "not a url");
    }
}
