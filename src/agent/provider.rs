//! From `config.json`'s model section to a rig-core model. Each provider
//! speaks its real protocol; `openai-compatible` speaks Chat Completions at
//! `<base-url>/chat/completions`.

use rig_core::DynModel;
use rig_core::operation::Completion;
use rig_core::providers::anthropic::AnthropicConfig;
use rig_core::providers::ollama::OllamaConfig;
use rig_core::providers::openai::{OpenAIConfig, Route};

use crate::config::{ModelConfig, Provider};

/// Builds the model. Fails (with a message for the operator) when its API key
/// cannot be found.
pub fn connect(config: &ModelConfig) -> Result<DynModel<Completion>, String> {
    let key = api_key(config)?;
    let name = config.name.clone();
    let model = match config.provider {
        Provider::Anthropic => {
            let key = key.ok_or_else(|| missing_key(config))?;
            let mut provider = AnthropicConfig::new(key);
            if let Some(url) = &config.base_url {
                provider = provider.with_base_url(url);
            }
            provider.client().completion(name).into()
        }
        Provider::Openai | Provider::OpenaiCompatible => {
            let key = match (config.provider, key) {
                (_, Some(key)) => key,
                (Provider::Openai, None) => return Err(missing_key(config)),
                // Local servers often need no key; rig then sends none.
                (_, None) => String::new(),
            };
            let mut provider = OpenAIConfig::new(key.clone()).with_route(Route::Chat);
            if key.is_empty() {
                provider = provider.with_auth(rig_core::providers::openai::wire::Auth::OptionalBearer);
            }
            if let Some(url) = &config.base_url {
                provider = provider.with_base_url(url.trim_end_matches('/'));
            }
            provider.client().chat(name).into()
        }
        Provider::Ollama => {
            let mut provider = OllamaConfig::new();
            if let Some(url) = &config.base_url {
                provider = provider.with_base_url(url);
            }
            if let Some(key) = key {
                provider = provider.with_api_key(key);
            }
            provider.client().native_completion(name).into()
        }
    };
    Ok(model)
}

/// The key from the environment variable named in the config, else the
/// stored key, else none.
fn api_key(config: &ModelConfig) -> Result<Option<String>, String> {
    if let Some(var) = &config.api_key_env {
        return match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(format!(
                "the environment variable {var} (which config.json names for the {} API key) is not set \
                 in the daemon's environment",
                config.provider.as_str()
            )),
        };
    }
    Ok(config.api_key.clone().filter(|k| !k.trim().is_empty()))
}

fn missing_key(config: &ModelConfig) -> String {
    format!(
        "no API key for {}: run `relay init --provider {} --model {} --api-key-env VAR`",
        config.provider.as_str(),
        config.provider.as_str(),
        config.name
    )
}
