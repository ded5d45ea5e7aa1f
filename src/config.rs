//! `config.json`: what `relay init` writes and the daemon reads at start.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::home::{self, Home};

pub const DEFAULT_PORT: u16 = 3214;

/// Which channel the daemon speaks through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    /// WhatsApp through whatsapp-rust (one linked device).
    Whatsapp,
    /// Simulated contacts inside the daemon, for trying relay and for tests.
    Sandbox,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Whatsapp => "whatsapp",
            ChannelKind::Sandbox => "sandbox",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub channel: ChannelKind,
    #[serde(default = "default_port")]
    pub daemon_port: u16,
}

fn default_port() -> u16 {
    DEFAULT_PORT
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("relay is not initialised in {0}: run `relay init` (or `relay init --channel sandbox` to try it)")]
    Missing(String),
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("{path} is not a valid relay config: {source}")]
    Invalid { path: String, source: serde_json::Error },
}

impl Config {
    pub fn new(channel: ChannelKind) -> Config {
        Config { channel, daemon_port: DEFAULT_PORT }
    }

    pub fn load(home: &Home) -> Result<Config, ConfigError> {
        let path = home.config_file();
        let text = std::fs::read_to_string(&path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => ConfigError::Missing(home.root().display().to_string()),
            _ => ConfigError::Io { path: path.display().to_string(), source },
        })?;
        serde_json::from_str(&text).map_err(|source| ConfigError::Invalid { path: path.display().to_string(), source })
    }

    /// Written owner-only: the config will hold model keys.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("config serialises");
        text.push('\n');
        home::write_private(path, text.as_bytes())
    }
}
