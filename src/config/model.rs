//! The agent's model (`model` in config.json: provider, name, where its key
//! comes from, how each call to it is made) and how turns run (`agent`).

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

/// How the model makes its tool calls (`model.tool_calls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ToolCalls {
    /// The provider's own tool calls. Until the turn has acted the request
    /// requires one (`tool_choice: "required"`, Anthropic's `any`).
    Native,
    /// The calls as one JSON document the server is made to write by a JSON
    /// schema (`response_format` on Chat Completions, `format` on Ollama's
    /// native API); the tools stay in the request, with `tool_choice: "none"`.
    #[value(name = "json_schema")]
    JsonSchema,
    /// The provider's own tool calls, and calls the model writes as text
    /// (`<tool_call>`, JSON, `send_message(text="...")`) when it makes none.
    Text,
}

impl ToolCalls {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCalls::Native => "native",
            ToolCalls::JsonSchema => "json_schema",
            ToolCalls::Text => "text",
        }
    }

    /// What the old `model.text_tool_calls` meant.
    fn from_text_tool_calls(read_text: bool) -> ToolCalls {
        if read_text { ToolCalls::Text } else { ToolCalls::Native }
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
    /// How the model makes its tool calls; absent, [`ModelConfig::tool_calls`]
    /// decides by provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<ToolCalls>,
    /// The setting `tool_calls` replaced: `true` was "text", `false`
    /// "native". Read, moved into `tool_calls` ([`Config::read`]), never
    /// written.
    ///
    /// [`Config::read`]: super::Config::read
    #[serde(default, skip_serializing)]
    pub text_tool_calls: Option<bool>,
    /// The sampling temperature sent with each call; absent,
    /// [`ModelConfig::temperature`] decides by provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The longest answer one call may write; absent, [`DEFAULT_MAX_OUTPUT_TOKENS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// How long one call may take; absent, [`ModelConfig::request_timeout_secs`]
    /// decides by provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout_secs: Option<u64>,
    /// Whether the model is shown the contacts' photos; absent,
    /// [`ModelConfig::vision`] decides by provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
}

/// The output limit of a model section that sets none.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 1024;
/// The temperature sent to local servers when the model section sets none.
pub const DEFAULT_LOCAL_TEMPERATURE: f64 = 0.2;

impl ModelConfig {
    /// `name` at `provider`, every other setting left to its default.
    pub fn new(provider: Provider, name: &str) -> ModelConfig {
        ModelConfig {
            provider,
            name: name.to_string(),
            base_url: None,
            api_key_env: None,
            api_key: None,
            tool_calls: None,
            text_tool_calls: None,
            temperature: None,
            max_output_tokens: None,
            request_timeout_secs: None,
            vision: None,
        }
    }

    /// "provider/name", as `relay status` shows it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.provider.as_str(), self.name)
    }

    /// How the model makes its tool calls: as `tool_calls` says (or the old
    /// `text_tool_calls`), else the provider's default
    /// ([`ModelConfig::default_tool_calls`]).
    pub fn tool_calls(&self) -> ToolCalls {
        self.tool_calls
            .or(self.text_tool_calls.map(ToolCalls::from_text_tool_calls))
            .unwrap_or(self.default_tool_calls())
    }

    /// `native` for the hosted APIs, whose models make reliable tool calls,
    /// and `json_schema` for the servers local models run on, where a schema
    /// holds a reply that a tool-call request does not (docs/conversation-agent.md,
    /// "Tool calls through a JSON schema").
    pub fn default_tool_calls(&self) -> ToolCalls {
        if self.is_local() { ToolCalls::JsonSchema } else { ToolCalls::Native }
    }

    /// Moves the old `text_tool_calls` into `tool_calls` when only it is
    /// set, so the next save writes the new name. When both are set they
    /// must agree ([`ModelConfig::check`]).
    pub(super) fn move_legacy_settings(&mut self) {
        if self.tool_calls.is_none() {
            self.tool_calls = self.text_tool_calls.map(ToolCalls::from_text_tool_calls);
        }
    }

    /// Whether the model runs on a server the operator runs (`openai-compatible`,
    /// `ollama`), usually a small model, often on a CPU, rather than a hosted API.
    fn is_local(&self) -> bool {
        matches!(self.provider, Provider::OpenaiCompatible | Provider::Ollama)
    }

    /// The temperature to send: as `temperature` says, else 0.2 for local
    /// servers (small models call their tools more reliably cold) and none
    /// for the hosted APIs, whose defaults suit their models (and some of
    /// OpenAI's refuse the parameter).
    pub fn temperature(&self) -> Option<f64> {
        self.temperature.or(self.is_local().then_some(DEFAULT_LOCAL_TEMPERATURE))
    }

    /// The longest answer one call may write.
    pub fn max_output_tokens(&self) -> u64 {
        self.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS)
    }

    /// How long one call may take: as `request_timeout_secs` says, else 60 s
    /// for the hosted APIs and 300 s for local servers, where a CPU model's
    /// first prompt can take over a minute to read.
    pub fn request_timeout_secs(&self) -> u64 {
        self.request_timeout_secs.unwrap_or(if self.is_local() { 300 } else { 60 })
    }

    /// Whether the model is shown the contacts' photos: as `vision` says,
    /// else yes for the hosted APIs (their current models all see) and no
    /// for local servers, whose small models mostly do not, and would be
    /// sent images they cannot read.
    pub fn vision(&self) -> bool {
        self.vision.unwrap_or(!self.is_local())
    }

    /// Refuses a model section that names no model, or no server to send to,
    /// or a call setting no call could be made with.
    /// rig-core would fill the gap with a default server (openai-compatible
    /// without a URL would go to api.openai.com): a conversation must never
    /// reach a provider the operator did not name.
    pub(super) fn check(&self) -> Result<(), String> {
        let provider = self.provider.as_str();
        if self.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
            return Err("model.temperature must be between 0 and 2".into());
        }
        // Anthropic's Messages API refuses every call with a temperature over 1.
        if self.provider == Provider::Anthropic && self.temperature.is_some_and(|t| t > 1.0) {
            return Err("model.temperature must be between 0 and 1 for anthropic, whose API takes no more".into());
        }
        if self.max_output_tokens == Some(0) {
            return Err("model.max_output_tokens must be at least 1".into());
        }
        if self.request_timeout_secs == Some(0) {
            return Err("model.request_timeout_secs must be at least 1".into());
        }
        if let (Some(old), Some(new)) = (self.text_tool_calls, self.tool_calls)
            && ToolCalls::from_text_tool_calls(old) != new
        {
            return Err(format!(
                "model.text_tool_calls ({old}) and model.tool_calls (\"{}\") disagree: text_tool_calls is the old \
                 name of tool_calls (true is \"text\", false is \"native\"); remove it, or run `relay init \
                 --tool-calls {}` to keep tool_calls alone",
                new.as_str(),
                new.as_str()
            ));
        }
        if self.provider == Provider::Anthropic && self.tool_calls() == ToolCalls::JsonSchema {
            return Err(
                "model.tool_calls \"json_schema\" is for Chat Completions servers and Ollama; anthropic takes \
                 \"native\" or \"text\""
                    .into(),
            );
        }
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

/// `agent.request_timeout_secs` and `agent.max_output_tokens` as every
/// config written before they moved to `model` held them.
const OLD_DEFAULT_TIMEOUT_SECS: u64 = 60;
const OLD_DEFAULT_MAX_OUTPUT_TOKENS: u64 = 1024;

/// How turns run. Every field has a safe default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Model calls in one turn before it is cut off.
    pub max_rounds: u32,
    /// `agent.request_timeout_secs` of a config written before it became
    /// `model.request_timeout_secs`: read, moved there, never written here.
    #[serde(rename = "request_timeout_secs", skip_serializing)]
    pub(super) legacy_request_timeout_secs: Option<u64>,
    /// Retries of a call that timed out or got 429/5xx, with backoff.
    pub max_retries: u32,
    /// The first retry waits this long; each next one twice as long.
    pub retry_backoff_ms: u64,
    /// The transcript characters a turn's context may hold (newest kept).
    pub history_budget_chars: usize,
    /// `agent.max_output_tokens`, likewise moved to `model.max_output_tokens`.
    #[serde(rename = "max_output_tokens", skip_serializing)]
    pub(super) legacy_max_output_tokens: Option<u64>,
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
    /// Moves the call settings a config written before they were per model
    /// kept here into `model`, where its own settings win; with no model
    /// they have nothing to apply to. Either way they leave `agent`, so the
    /// next save writes them only under `model`.
    pub(super) fn move_legacy_settings(&mut self, model: Option<&mut ModelConfig>) {
        // Every config `relay init` wrote before held the old defaults (60,
        // 1024) whether or not anyone chose them: those stay unset, so a
        // local server still gets its own default (300 s), not 60 s.
        let timeout = self.legacy_request_timeout_secs.take().filter(|&s| s != OLD_DEFAULT_TIMEOUT_SECS);
        let tokens = self.legacy_max_output_tokens.take().filter(|&n| n != OLD_DEFAULT_MAX_OUTPUT_TOKENS);
        if let Some(model) = model {
            model.request_timeout_secs = model.request_timeout_secs.or(timeout);
            model.max_output_tokens = model.max_output_tokens.or(tokens);
        }
    }

    /// Refuses settings that would make every turn fail or never end.
    pub(super) fn check(&self) -> Result<(), String> {
        let problems = [
            (self.max_rounds == 0, "agent.max_rounds must be at least 1"),
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
            legacy_request_timeout_secs: None,
            max_retries: 3,
            retry_backoff_ms: 1000,
            history_budget_chars: 24_000,
            legacy_max_output_tokens: None,
            reply_window_ms: 1500,
            min_scheduled_heartbeat_secs: 60,
            max_scheduled_heartbeat_secs: 7 * 24 * 3600,
            max_concurrent_model_calls: 16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(provider: Provider) -> ModelConfig {
        ModelConfig { base_url: Some("http://127.0.0.1:8000/v1".into()), ..ModelConfig::new(provider, "m") }
    }

    #[test]
    fn the_defaults_suit_hosted_apis_and_local_servers() {
        for provider in [Provider::Anthropic, Provider::Openai] {
            let hosted = model(provider);
            assert_eq!((hosted.temperature(), hosted.request_timeout_secs()), (None, 60), "{provider:?}");
            assert_eq!(hosted.max_output_tokens(), 1024);
        }
        for provider in [Provider::OpenaiCompatible, Provider::Ollama] {
            let local = model(provider);
            assert_eq!((local.temperature(), local.request_timeout_secs()), (Some(0.2), 300), "{provider:?}");
            assert_eq!(local.max_output_tokens(), 1024);
        }
        let set = ModelConfig {
            temperature: Some(0.0),
            max_output_tokens: Some(4000),
            request_timeout_secs: Some(5),
            ..model(Provider::Ollama)
        };
        assert_eq!((set.temperature(), set.max_output_tokens(), set.request_timeout_secs()), (Some(0.0), 4000, 5));
    }

    /// Photos go to the hosted APIs' models and not to local servers' unless
    /// `vision` says otherwise; absent, it is not written.
    #[test]
    fn vision_defaults_by_provider_and_the_setting_wins() {
        for (provider, sees) in [
            (Provider::Anthropic, true),
            (Provider::Openai, true),
            (Provider::OpenaiCompatible, false),
            (Provider::Ollama, false),
        ] {
            assert_eq!(model(provider).vision(), sees, "{provider:?}");
            assert_eq!(ModelConfig { vision: Some(!sees), ..model(provider) }.vision(), !sees, "{provider:?}");
        }
        assert!(serde_json::to_value(model(Provider::Openai)).unwrap().get("vision").is_none());
        let read: ModelConfig =
            serde_json::from_str(r#"{"provider": "ollama", "name": "gemma3", "vision": true}"#).unwrap();
        assert!(read.vision());
        assert!(
            serde_json::from_str::<ModelConfig>(r#"{"provider": "ollama", "name": "m", "vision": "yes"}"#).is_err()
        );
    }

    /// Anthropic takes a temperature up to 1, the others up to 2.
    #[test]
    fn a_temperature_over_1_is_refused_for_anthropic() {
        let at = |provider, t| ModelConfig { temperature: Some(t), ..model(provider) }.check();
        assert_eq!(at(Provider::Anthropic, 1.0), Ok(()));
        assert_eq!(
            at(Provider::Anthropic, 1.5).unwrap_err(),
            "model.temperature must be between 0 and 1 for anthropic, whose API takes no more"
        );
        assert_eq!(at(Provider::Openai, 1.5), Ok(()));
    }

    #[test]
    fn a_zero_output_limit_or_timeout_is_refused_by_name() {
        let zero_tokens = ModelConfig { max_output_tokens: Some(0), ..model(Provider::Openai) };
        assert_eq!(zero_tokens.check().unwrap_err(), "model.max_output_tokens must be at least 1");
        let zero_timeout = ModelConfig { request_timeout_secs: Some(0), ..model(Provider::Openai) };
        assert_eq!(zero_timeout.check().unwrap_err(), "model.request_timeout_secs must be at least 1");
        let ones = ModelConfig { max_output_tokens: Some(1), request_timeout_secs: Some(1), ..model(Provider::Openai) };
        assert_eq!(ones.check(), Ok(()));
    }

    /// An old config's `agent` values move into the model section, whose
    /// own values win, and are never written back under `agent`.
    #[test]
    fn the_old_agent_settings_move_into_the_model_section() {
        let mut agent: AgentSettings =
            serde_json::from_str(r#"{"request_timeout_secs": 7, "max_output_tokens": 77}"#).unwrap();
        let mut own = ModelConfig { max_output_tokens: Some(500), ..model(Provider::Openai) };
        agent.move_legacy_settings(Some(&mut own));
        assert_eq!((own.request_timeout_secs, own.max_output_tokens), (Some(7), Some(500)));
        let written = serde_json::to_value(&agent).unwrap();
        assert!(written.get("request_timeout_secs").is_none() && written.get("max_output_tokens").is_none());
        assert_eq!(agent, AgentSettings::default());
    }

    /// Hosted APIs make native calls; local servers get the schema. The old
    /// `text_tool_calls` still says which, unless `tool_calls` does; the two
    /// disagreeing, or the schema for Anthropic, are refused by name.
    #[test]
    fn tool_calls_default_by_provider_and_the_old_setting_still_counts() {
        for (provider, default) in [
            (Provider::Anthropic, ToolCalls::Native),
            (Provider::Openai, ToolCalls::Native),
            (Provider::OpenaiCompatible, ToolCalls::JsonSchema),
            (Provider::Ollama, ToolCalls::JsonSchema),
        ] {
            assert_eq!(model(provider).tool_calls(), default, "{provider:?}");
        }
        let old = |read_text| ModelConfig { text_tool_calls: Some(read_text), ..model(Provider::OpenaiCompatible) };
        assert_eq!((old(true).tool_calls(), old(false).tool_calls()), (ToolCalls::Text, ToolCalls::Native));
        let mut moved = old(false);
        moved.move_legacy_settings();
        assert_eq!((moved.tool_calls, moved.check()), (Some(ToolCalls::Native), Ok(())));
        let written = serde_json::to_value(&moved).unwrap();
        assert_eq!((&written["tool_calls"], written.get("text_tool_calls")), (&serde_json::json!("native"), None));

        let both = ModelConfig { tool_calls: Some(ToolCalls::JsonSchema), ..old(true) };
        assert!(
            both.check()
                .unwrap_err()
                .starts_with("model.text_tool_calls (true) and model.tool_calls (\"json_schema\") disagree")
        );
        let anthropic = ModelConfig { tool_calls: Some(ToolCalls::JsonSchema), ..model(Provider::Anthropic) };
        assert!(anthropic.check().unwrap_err().starts_with("model.tool_calls \"json_schema\" is for"));
        for mode in [ToolCalls::Native, ToolCalls::JsonSchema, ToolCalls::Text] {
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, mode.as_str());
            assert_eq!(serde_json::from_value::<ToolCalls>(json).unwrap(), mode);
        }
    }

    proptest::proptest! {
        /// Any temperature from 0 to 2 is taken, any other refused by name.
        #[test]
        fn a_temperature_is_taken_only_from_0_to_2(
            t in proptest::prop_oneof![-1.0f64..3.0, proptest::num::f64::ANY]
        ) {
            let config = ModelConfig { temperature: Some(t), ..model(Provider::OpenaiCompatible) };
            let within = (0.0..=2.0).contains(&t);
            match config.check() {
                Ok(()) => proptest::prop_assert!(within, "{t}"),
                Err(problem) => {
                    proptest::prop_assert!(!within, "{t}: {problem}");
                    proptest::prop_assert_eq!(problem, "model.temperature must be between 0 and 2");
                }
            }
        }
    }
}
