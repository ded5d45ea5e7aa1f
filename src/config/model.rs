//! The agent's model (`model` in config.json: provider, name, where its key
//! comes from) and how turns run (`agent`).

use serde::{Deserialize, Serialize};

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
    pub(super) fn check(&self) -> Result<(), String> {
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
    pub(super) fn check(&self) -> Result<(), String> {
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
