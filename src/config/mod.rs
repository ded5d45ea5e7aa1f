//! `config.json`: what `relay init` writes and the daemon reads at start.

use std::io;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::home::Home;

mod budget;
mod courtesy;
mod media;
mod model;
mod whatsapp;

pub use budget::*;
pub use courtesy::*;
pub use media::*;
pub use model::*;
pub use whatsapp::*;

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
    /// The conversation agent's model; none means conversations go to a human.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelConfig>,
    #[serde(default)]
    pub agent: AgentSettings,
    #[serde(default)]
    pub whatsapp: WhatsappSettings,
    #[serde(default)]
    pub webhooks: WebhookSettings,
    #[serde(default)]
    pub delivery: DeliverySettings,
    #[serde(default)]
    pub courtesy: CourtesySettings,
    /// Each conversation's limits when its create request sets none.
    #[serde(default)]
    pub budget: BudgetSettings,
    /// Photos, voice notes and files: limits, how long they are kept, and
    /// who transcribes voice notes.
    #[serde(default)]
    pub media: MediaSettings,
    /// How the daemon's HTTP server bounds its connections.
    #[serde(default)]
    pub http: HttpSettings,
    /// How long the event log keeps what happened.
    #[serde(default)]
    pub events: EventsSettings,
    /// How the todos' values are checked against what the contact said.
    #[serde(default)]
    pub answers: AnswerSettings,
}

/// How a todo's value is checked: relay reads what it can from the
/// contact's words by rule; the rest (a yes or no, free text, what a photo
/// shows) a second, narrow model call confirms, unless `verify` is off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnswerSettings {
    /// `true` (or "on"): values relay cannot read by rule are confirmed by
    /// a model before they are recorded. `false` ("off"): they are recorded
    /// as `unchecked`.
    #[serde(deserialize_with = "on_or_off")]
    pub verify: bool,
}

impl Default for AnswerSettings {
    fn default() -> Self {
        AnswerSettings { verify: true }
    }
}

/// A switch written as `true`/`false` or `"on"`/`"off"`.
fn on_or_off<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Switch {
        Bool(bool),
        Word(String),
    }
    match Switch::deserialize(deserializer)? {
        Switch::Bool(on) => Ok(on),
        Switch::Word(word) => match word.trim().to_ascii_lowercase().as_str() {
            "on" => Ok(true),
            "off" => Ok(false),
            _ => Err(serde::de::Error::custom(format!("\"{word}\" is not true, false, on or off"))),
        },
    }
}

/// How long the event log (`events/`, a file a day) keeps what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsSettings {
    /// A day of events is removed once its last event is this old ("90d").
    /// Followers and webhooks further behind are told where the log starts.
    #[serde(with = "crate::duration::text")]
    pub keep: Duration,
}

impl Default for EventsSettings {
    fn default() -> Self {
        EventsSettings { keep: Duration::from_secs(90 * 86_400) }
    }
}

impl EventsSettings {
    fn check(&self) -> Result<(), String> {
        if !(Duration::from_secs(86_400)..=MAX_KEEP).contains(&self.keep) {
            return Err(format!(
                "events.keep must be from 1d to 3650d (it is {}; a duration such as \"90d\")",
                crate::duration::format(self.keep)
            ));
        }
        Ok(())
    }
}

/// How long relay waits for a message to reach the contact's phone (see
/// docs/whatsapp.md, "Did the person get it?").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeliverySettings {
    /// A message no device of the contact has received this long after the
    /// channel took it is flagged; if no message of its conversation ever
    /// arrived, the conversation goes to a person. Follow-ups wait for it.
    #[serde(with = "crate::duration::text")]
    pub timeout: Duration,
}

/// A phone off for longer than a month is not coming back for this conversation.
pub const MAX_DELIVERY_TIMEOUT: Duration = Duration::from_secs(30 * 86_400);

impl Default for DeliverySettings {
    fn default() -> Self {
        DeliverySettings { timeout: Duration::from_secs(10 * 60) }
    }
}

/// How the daemon's HTTP server bounds its connections (see
/// `daemon::server`): clients are local, but a daemon runs for months.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSettings {
    /// Connections open at once; one more is refused at once (503).
    pub max_connections: usize,
    /// A request's headers must arrive within this; a kept-alive connection
    /// that asks nothing for as long is closed.
    #[serde(with = "crate::duration::text")]
    pub header_timeout: Duration,
    /// A request body that stops arriving for this long is cut off.
    #[serde(with = "crate::duration::text")]
    pub body_timeout: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
        }
    }
}

impl HttpSettings {
    fn check(&self) -> Result<(), String> {
        if !(1..=65_536).contains(&self.max_connections) {
            return Err(format!("http.max_connections must be from 1 to 65536 (it is {})", self.max_connections));
        }
        for (name, value) in [("header_timeout", self.header_timeout), ("body_timeout", self.body_timeout)] {
            if !(Duration::from_millis(100)..=Duration::from_secs(3_600)).contains(&value) {
                return Err(format!(
                    "http.{name} must be from 100ms to 1h (it is {}; a duration such as \"10s\")",
                    crate::duration::format(value)
                ));
            }
        }
        Ok(())
    }
}

/// How relay delivers events to webhooks (see docs/main-agent.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// The first retry of a failed delivery waits this long; each next one
    /// twice as long, up to `retry_max_ms`.
    pub retry_initial_ms: u64,
    pub retry_max_ms: u64,
    /// How long one delivery may take before it counts as failed.
    pub timeout_ms: u64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings { retry_initial_ms: 1_000, retry_max_ms: 300_000, timeout_ms: 10_000 }
    }
}

fn default_port() -> u16 {
    DEFAULT_PORT
}

/// config.json is a few hundred bytes; anything past this is not one.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("relay is not initialised in {0}: run `relay init` (or `relay init --channel sandbox` to try it)")]
    Missing(String),
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("{path} is {}: {source}", match source.classify() {
        serde_json::error::Category::Data => "not a relay config",
        _ => "not valid JSON",
    })]
    Invalid { path: String, source: serde_json::Error },
    #[error("{path}: {problem}")]
    Setting { path: String, problem: String },
}

impl ConfigError {
    /// The error and how to repair it, in one sentence for a person.
    pub fn with_fix(&self) -> String {
        match self.fix() {
            Some(fix) => format!("{self}; {fix}"),
            None => self.to_string(),
        }
    }

    /// How to repair the config, for every reader that reports it (the
    /// CLI's commands, the daemon, `relay doctor`). `relay init` cannot
    /// read a file that is not a config either, so the way out it offers
    /// is a fresh one, the broken one kept beside it.
    pub fn fix(&self) -> Option<String> {
        let aside = |path: &str| {
            format!("or move it aside (`mv {path} {path}.broken`) and run `relay init` to write a new one")
        };
        match self {
            ConfigError::Missing(_) | ConfigError::Io { .. } => None,
            // The error itself says where: serde_json's "at line 3 column 5".
            ConfigError::Invalid { path, .. } => Some(format!("correct it there, {}", aside(path))),
            ConfigError::Setting { path, .. } => {
                Some(format!("correct it (docs/configuration.md has every setting and its default), {}", aside(path)))
            }
        }
    }
}

impl Config {
    pub fn new(channel: ChannelKind) -> Config {
        Config {
            channel,
            daemon_port: DEFAULT_PORT,
            model: None,
            agent: AgentSettings::default(),
            whatsapp: WhatsappSettings::default(),
            webhooks: WebhookSettings::default(),
            delivery: DeliverySettings::default(),
            courtesy: CourtesySettings::default(),
            budget: BudgetSettings::default(),
            media: MediaSettings::default(),
            http: HttpSettings::default(),
            events: EventsSettings::default(),
            answers: AnswerSettings::default(),
        }
    }

    /// The config as `relay init` leaves it: read and checked, as the daemon
    /// needs it. Every reader but `relay init` (which may be repairing it)
    /// goes through here, so the daemon refuses exactly what init refuses.
    pub fn load(home: &Home) -> Result<Config, ConfigError> {
        let config = Config::read(home)?;
        config
            .check()
            .map_err(|problem| ConfigError::Setting { path: home.config_file().display().to_string(), problem })?;
        Ok(config)
    }

    /// Every rule a config must meet beyond its shape.
    pub fn check(&self) -> Result<(), String> {
        self.agent.check()?;
        self.whatsapp.check()?;
        self.courtesy.check()?;
        self.budget.check()?;
        self.media.check()?;
        self.http.check()?;
        self.events.check()?;
        if !(Duration::from_secs(1)..=MAX_DELIVERY_TIMEOUT).contains(&self.delivery.timeout) {
            return Err(format!(
                "delivery.timeout must be from 1s to 30d (it is {}; a duration such as \"10m\")",
                crate::duration::format(self.delivery.timeout)
            ));
        }
        match &self.model {
            Some(model) => model.check(),
            None => Ok(()),
        }
    }

    /// The config as written, shape checked but not its settings: for
    /// `relay init`, which is how a wrong setting gets fixed.
    pub fn read(home: &Home) -> Result<Config, ConfigError> {
        let path = home.config_file();
        let shown = || path.display().to_string();
        let missing = |source: io::Error| match source.kind() {
            io::ErrorKind::NotFound => ConfigError::Missing(home.root().display().to_string()),
            _ => ConfigError::Io { path: shown(), source },
        };
        // Read no further than a config can be: a link to /dev/zero or a
        // FIFO in its place must be an error, not a hang or all the memory.
        let meta = std::fs::metadata(&path).map_err(missing)?;
        if !meta.is_file() {
            return Err(ConfigError::Setting { path: shown(), problem: "is not a regular file".into() });
        }
        if meta.len() > MAX_CONFIG_BYTES {
            let problem = format!("is {} bytes; a relay config is at most {MAX_CONFIG_BYTES}", meta.len());
            return Err(ConfigError::Setting { path: shown(), problem });
        }
        let text = std::fs::read_to_string(&path).map_err(missing)?;
        // The error names the setting ("whatsapp.presence: ..."), not just a column.
        let mut reader = serde_json::Deserializer::from_str(&text);
        let mut config: Config = serde_path_to_error::deserialize(&mut reader).map_err(|error| {
            let setting = error.path().to_string();
            let source = error.into_inner();
            // Broken JSON is broken wherever it is: not a setting's problem.
            let data = source.classify() == serde_json::error::Category::Data;
            match setting.as_str() {
                "." | "" | "?" => ConfigError::Invalid { path: shown(), source },
                _ if !data => ConfigError::Invalid { path: shown(), source },
                _ => ConfigError::Setting { path: shown(), problem: format!("{setting}: {source}") },
            }
        })?;
        config.agent.move_legacy_settings(config.model.as_mut());
        if let Some(model) = config.model.as_mut() {
            model.move_legacy_settings();
        }
        Ok(config)
    }

    /// Replaced atomically and owner-only: the config may hold a model key.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        crate::store::atomic::replace(path, &crate::store::to_pretty_json(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any delivery timeout from 1s to 30d is taken; any other is refused
        /// before the daemon starts (a huge one overflowed the clock at the
        /// first send).
        #[test]
        fn a_delivery_timeout_is_taken_only_within_its_bounds(
            seconds in proptest::prop_oneof![0u64..3_000_000, 0u64..u64::MAX / 2]
        ) {
            let mut config = Config::new(ChannelKind::Sandbox);
            config.delivery.timeout = Duration::from_secs(seconds);
            let within = (1..=30 * 86_400).contains(&seconds);
            proptest::prop_assert_eq!(config.check().is_ok(), within, "{}", seconds);
        }

        /// The event log keeps from a day to ten years; anything else is
        /// refused before the daemon starts, naming the setting.
        #[test]
        fn an_events_keep_is_taken_only_within_its_bounds(
            seconds in proptest::prop_oneof![0u64..400_000_000, 0u64..u64::MAX / 2]
        ) {
            let mut config = Config::new(ChannelKind::Sandbox);
            config.events.keep = Duration::from_secs(seconds);
            let within = (86_400..=3_650 * 86_400).contains(&seconds);
            match config.check() {
                Ok(()) => proptest::prop_assert!(within, "{}", seconds),
                Err(problem) => {
                    proptest::prop_assert!(!within, "{}", seconds);
                    proptest::prop_assert!(problem.starts_with("events.keep must be"), "{}", problem);
                }
            }
        }
    }
}
