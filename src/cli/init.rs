//! `relay init`: creates the home (owner-only) and writes config.json.
//! Run again, it changes only what its flags say.

use std::io::{BufRead, IsTerminal, Write};

use serde::Serialize;

use super::{CliError, Context, output};
use crate::config::{ChannelKind, Config};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The channel relay speaks through [default: whatsapp; asked when interactive].
    #[arg(long, value_enum)]
    pub channel: Option<ChannelKind>,
}

#[derive(Serialize)]
struct Initialised {
    home: String,
    config_file: String,
    channel: ChannelKind,
    daemon_port: u16,
    created: bool,
}

pub fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let existing = match Config::load(&ctx.home) {
        Ok(config) => Some(config),
        Err(crate::config::ConfigError::Missing(_)) => None,
        Err(other) => return Err(other.into()),
    };
    let channel = match (args.channel, &existing) {
        (Some(channel), _) => channel,
        (None, Some(config)) => config.channel,
        (None, None) if !ctx.json && std::io::stdin().is_terminal() => ask_channel()?,
        (None, None) => ChannelKind::Whatsapp,
    };
    let mut config = existing.clone().unwrap_or_else(|| Config::new(channel));
    config.channel = channel;
    if let Some(port) = ctx.port {
        config.daemon_port = port;
    }
    let fail = |e: std::io::Error| CliError::failure(format!("cannot write {}: {e}", ctx.home.root().display()));
    ctx.home.create().map_err(fail)?;
    config.save(&ctx.home.config_file()).map_err(fail)?;

    let done = Initialised {
        home: ctx.home.root().display().to_string(),
        config_file: ctx.home.config_file().display().to_string(),
        channel: config.channel,
        daemon_port: config.daemon_port,
        created: existing.is_none(),
    };
    if ctx.json {
        output::json(&done);
        return Ok(());
    }
    let verb = if done.created { "Initialised" } else { "Updated" };
    println!("{verb} relay in {} (channel {}, port {}).", done.home, channel.as_str(), done.daemon_port);
    match channel {
        ChannelKind::Sandbox => {
            println!("The sandbox channel simulates contacts: nothing is sent over WhatsApp.");
            println!("Next: `relay start`, then `relay create ...` and play the contact with `relay sandbox say`.");
        }
        ChannelKind::Whatsapp => {
            println!("WhatsApp linking (QR code) is not in this build yet: the daemon will report \"not linked\".");
            println!("To try relay now: `relay init --channel sandbox`.");
        }
    }
    if crate::daemon::lifecycle::is_locked(&ctx.home) {
        println!("The daemon is running: `relay stop && relay start` to apply this config.");
    }
    Ok(())
}

fn ask_channel() -> Result<ChannelKind, CliError> {
    print!("Channel: whatsapp, or sandbox (simulated contacts, to try relay) [whatsapp]: ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).map_err(|e| CliError::failure(e.to_string()))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "" | "whatsapp" => Ok(ChannelKind::Whatsapp),
        "sandbox" => Ok(ChannelKind::Sandbox),
        other => Err(CliError::usage(format!("unknown channel '{other}' (whatsapp or sandbox)"))),
    }
}
