//! `config.json`: what `relay init` writes and the daemon reads at start.

use std::io;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::home::Home;

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

/// How relay delivers events to webhooks (see docs/agents.md).
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

/// The LLM providers relay speaks to (through rig-core).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Chat Completions API.
    Openai,
    /// Any server speaking Chat Completions at <base-url>/chat/completions
    /// (vLLM, llama.cpp, LM Studio, Ollama's /v1).
    OpenaiCompatible,
    /// Ollama's native API.
    Ollama,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::OpenaiCompatible => "openai-compatible",
            Provider::Ollama => "ollama",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub provider: Provider,
    /// The model's name at the provider, e.g. "claude-haiku-4-5" or "gpt-4o-mini".
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable that holds the API key (preferred).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The API key itself; this file is owner-only (0600). Never logged or shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Whether tool calls the model writes in its text (`<tool_call>`, JSON,
    /// `send_message(text="...")`) are read when it makes no native ones;
    /// absent, [`ModelConfig::reads_text_tool_calls`] decides by provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_tool_calls: Option<bool>,
}

impl ModelConfig {
    /// "provider/name", as `relay status` shows it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.provider.as_str(), self.name)
    }

    /// Whether calls written as text are read: as `text_tool_calls` says,
    /// else on for the servers small local models run on (`openai-compatible`,
    /// `ollama`), whose models often write their calls, and off for the
    /// hosted APIs, whose models make native calls.
    pub fn reads_text_tool_calls(&self) -> bool {
        self.text_tool_calls.unwrap_or(matches!(self.provider, Provider::OpenaiCompatible | Provider::Ollama))
    }

    /// Refuses a model section that names no model, or no server to send to.
    /// rig-core would fill the gap with a default server (openai-compatible
    /// without a URL would go to api.openai.com): a conversation must never
    /// reach a provider the operator did not name.
    fn check(&self) -> Result<(), String> {
        let provider = self.provider.as_str();
        if self.name.trim().is_empty() {
            return Err(format!(
                "model.name is empty: say which model, e.g. `relay init --provider {provider} --model NAME`"
            ));
        }
        match &self.base_url {
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => Err(format!(
                "model.base_url must start with http:// or https:// (it is '{url}'): \
                 `relay init --provider {provider} --model {} --base-url URL` sets it",
                self.name
            )),
            None if self.provider == Provider::OpenaiCompatible => Err(format!(
                "model.base_url is missing: openai-compatible needs the URL of your server (the part before \
                 /chat/completions, e.g. http://127.0.0.1:8000/v1): \
                 `relay init --provider openai-compatible --model {} --base-url URL` sets it",
                self.name
            )),
            _ => Ok(()),
        }
    }

    /// Where the API key comes from, in words, for `relay init` to show.
    pub fn key_source(&self) -> String {
        let needs_key = matches!(self.provider, Provider::Anthropic | Provider::Openai);
        match (&self.api_key_env, &self.api_key) {
            (Some(var), _) => format!("key from ${var}, which the daemon's environment must have"),
            (None, Some(_)) => "key stored in config.json".into(),
            (None, None) if needs_key => format!(
                "NO API KEY: the daemon will have none, and every conversation will go to you until you run \
                 `relay init --provider {} --model {} --api-key-env VAR`",
                self.provider.as_str(),
                self.name
            ),
            (None, None) => "no API key is sent".into(),
        }
    }
}

/// How turns run. Every field has a safe default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Model calls in one turn before it is cut off.
    pub max_rounds: u32,
    /// How long one model call may take.
    pub request_timeout_secs: u64,
    /// Retries of a call that timed out or got 429/5xx, with backoff.
    pub max_retries: u32,
    /// The first retry waits this long; each next one twice as long.
    pub retry_backoff_ms: u64,
    /// The transcript characters a turn's context may hold (newest kept).
    pub history_budget_chars: usize,
    /// The longest answer a model call may write.
    pub max_output_tokens: u64,
    /// After a contact message, how long to wait for more before answering
    /// them all in one turn.
    pub reply_window_ms: u64,
    /// Bounds on the delay the agent may choose with schedule_next_heartbeat.
    pub min_scheduled_heartbeat_secs: u64,
    pub max_scheduled_heartbeat_secs: u64,
    /// Model calls in flight at once, across all conversations. Others wait
    /// their turn: a thousand heartbeats due in the same minute then cost a
    /// bounded number of connections and buffers, and a provider's rate
    /// limit sees a steady stream rather than a burst.
    pub max_concurrent_model_calls: usize,
}

impl AgentSettings {
    /// Refuses settings that would make every turn fail or never end.
    fn check(&self) -> Result<(), String> {
        let problems = [
            (self.max_rounds == 0, "agent.max_rounds must be at least 1"),
            (self.request_timeout_secs == 0, "agent.request_timeout_secs must be at least 1"),
            (self.max_output_tokens == 0, "agent.max_output_tokens must be at least 1"),
            (self.history_budget_chars == 0, "agent.history_budget_chars must be at least 1"),
            (self.max_concurrent_model_calls == 0, "agent.max_concurrent_model_calls must be at least 1"),
            (
                self.min_scheduled_heartbeat_secs == 0
                    || self.min_scheduled_heartbeat_secs > self.max_scheduled_heartbeat_secs,
                "agent.min_scheduled_heartbeat_secs must be at least 1 and at most max_scheduled_heartbeat_secs",
            ),
        ];
        match problems.iter().find(|(bad, _)| *bad) {
            Some((_, problem)) => Err(problem.to_string()),
            None => Ok(()),
        }
    }
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            max_rounds: 8,
            request_timeout_secs: 60,
            max_retries: 3,
            retry_backoff_ms: 1000,
            history_budget_chars: 24_000,
            max_output_tokens: 1024,
            reply_window_ms: 1500,
            min_scheduled_heartbeat_secs: 60,
            max_scheduled_heartbeat_secs: 7 * 24 * 3600,
            max_concurrent_model_calls: 16,
        }
    }
}

/// How relay uses WhatsApp. Every field has a safe default (see docs/whatsapp.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WhatsappSettings {
    /// Typing time, gaps and the per-minute cap.
    pub pacing: PacingSettings,
    /// How long a message waits for the connection to come back before it
    /// counts as not sent.
    pub connect_wait_secs: u64,
    /// Tries of one message before it counts as not sent (the conversation
    /// then fails, as the design's error table says).
    pub send_attempts: u32,
    /// The first retry waits this long; each next one twice as long.
    pub retry_backoff_ms: u64,
    /// When the contact's messages show as read (blue ticks): see
    /// [`ReadReceipts`]. Unset in an older config: what `mark_read` said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_receipts: Option<ReadReceipts>,
    /// The older switch, still read: `true` is `after_turn`, `false` `never`.
    /// `read_receipts`, when given, wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_read: Option<bool>,
    /// Whether the linked device tells WhatsApp it is online.
    pub presence: Presence,
}

/// When relay marks a contact's messages read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadReceipts {
    /// A few seconds after each message arrives, as a person glancing at
    /// the phone would (the blue ticks do not come together with the reply).
    OnArrival,
    /// Once the agent's turn that answers them has finished.
    AfterTurn,
    /// Never: the contact sees grey ticks only.
    Never,
}

/// What the linked device says of being online.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Unavailable right after each connection, so WhatsApp keeps notifying
    /// the operator's phone ("typing..." before a send is still shown).
    #[default]
    Quiet,
    /// Left available, as whatsapp-rust announces it on connecting.
    Available,
}

impl Default for WhatsappSettings {
    fn default() -> Self {
        WhatsappSettings {
            pacing: PacingSettings::default(),
            connect_wait_secs: 120,
            send_attempts: 3,
            retry_backoff_ms: 2_000,
            read_receipts: Some(ReadReceipts::OnArrival),
            mark_read: None,
            presence: Presence::Quiet,
        }
    }
}

impl WhatsappSettings {
    /// When to mark messages read: `read_receipts`, else the older
    /// `mark_read`, else on arrival.
    pub fn read_receipts(&self) -> ReadReceipts {
        match (self.read_receipts, self.mark_read) {
            (Some(setting), _) => setting,
            (None, Some(true)) => ReadReceipts::AfterTurn,
            (None, Some(false)) => ReadReceipts::Never,
            (None, None) => ReadReceipts::OnArrival,
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.send_attempts == 0 {
            return Err("whatsapp.send_attempts must be at least 1".into());
        }
        self.pacing.check()
    }
}

#[cfg(test)]
mod whatsapp_tests {
    use super::*;

    fn whatsapp(json: &str) -> WhatsappSettings {
        serde_json::from_str(json).unwrap()
    }

    /// `read_receipts` wins; an older config's `mark_read` still means what
    /// it meant; neither is on arrival. What `relay init` writes reads back.
    #[test]
    fn read_receipts_and_the_older_mark_read() {
        assert_eq!(whatsapp("{}").read_receipts(), ReadReceipts::OnArrival);
        assert_eq!(whatsapp(r#"{"mark_read": true}"#).read_receipts(), ReadReceipts::AfterTurn);
        assert_eq!(whatsapp(r#"{"mark_read": false}"#).read_receipts(), ReadReceipts::Never);
        let both = whatsapp(r#"{"mark_read": false, "read_receipts": "on_arrival"}"#);
        assert_eq!(both.read_receipts(), ReadReceipts::OnArrival);
        assert_eq!(whatsapp(r#"{"read_receipts": "after_turn"}"#).read_receipts(), ReadReceipts::AfterTurn);
        let written = serde_json::to_value(WhatsappSettings::default()).unwrap();
        assert_eq!(written["read_receipts"], "on_arrival");
        assert_eq!(written["presence"], "quiet");
        assert!(written.get("mark_read").is_none());
        assert_eq!(whatsapp(&written.to_string()), WhatsappSettings::default());
        assert!(serde_json::from_str::<WhatsappSettings>(r#"{"read_receipts": "sometimes"}"#).is_err());
        assert_eq!(whatsapp(r#"{"presence": "available"}"#).presence, Presence::Available);
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
    #[error("{path} is not a valid relay config: {source}")]
    Invalid { path: String, source: serde_json::Error },
    #[error("{path}: {problem}")]
    Setting { path: String, problem: String },
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
        serde_path_to_error::deserialize(&mut reader).map_err(|error| {
            let setting = error.path().to_string();
            let source = error.into_inner();
            match setting.as_str() {
                "." | "" | "?" => ConfigError::Invalid { path: shown(), source },
                _ => ConfigError::Setting { path: shown(), problem: format!("{setting}: {source}") },
            }
        })
    }

    /// Replaced atomically and owner-only: the config may hold a model key.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        crate::store::atomic::replace(path, &crate::store::to_pretty_json(self))
    }
}

/// Pacing settings, `whatsapp.pacing` in config.json (the WhatsApp channel
/// paces its sends by them: see `channel::whatsapp::pacing`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PacingSettings {
    /// "typing…" shows for this long per character of the message...
    pub typing_ms_per_char: u64,
    /// ...but never shorter than this...
    pub min_typing_ms: u64,
    /// ...nor longer than this.
    pub max_typing_ms: u64,
    /// Shortest time between two messages to the same contact.
    pub min_gap_ms: u64,
    /// Most messages sent in any minute, all contacts together.
    pub max_messages_per_minute: u32,
}

impl Default for PacingSettings {
    fn default() -> Self {
        PacingSettings {
            typing_ms_per_char: 30,
            min_typing_ms: 1_000,
            max_typing_ms: 6_000,
            min_gap_ms: 2_000,
            max_messages_per_minute: 20,
        }
    }
}

impl PacingSettings {
    pub fn check(&self) -> Result<(), String> {
        if self.min_typing_ms > self.max_typing_ms {
            return Err("whatsapp.pacing.min_typing_ms must be at most max_typing_ms".into());
        }
        if self.max_messages_per_minute == 0 {
            return Err("whatsapp.pacing.max_messages_per_minute must be at least 1".into());
        }
        Ok(())
    }

    /// How long "typing…" shows before a message of `chars` characters.
    pub fn typing_time(&self, chars: usize) -> Duration {
        let ms = self.typing_ms_per_char.saturating_mul(chars as u64).clamp(self.min_typing_ms, self.max_typing_ms);
        Duration::from_millis(ms)
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
    }
}
