//! From `config.json`'s model section to a rig-core model. Each provider
//! speaks its real protocol; `openai-compatible` speaks Chat Completions at
//! `<base-url>/chat/completions`, with the system prompt as a plain string
//! ([`SystemAsString`]), the form every such server accepts.

use bytes::Bytes;
use rig_core::DynModel;
use rig_core::http_client::{HeaderMap, HttpMiddleware, Method, Uri};
use rig_core::operation::Completion;
use rig_core::providers::anthropic::AnthropicConfig;
use rig_core::providers::ollama::OllamaConfig;
use rig_core::providers::openai::{OpenAIConfig, Route};
use rig_core::wasm_compat::WasmBoxedFuture;

use serde_json::Value;

use crate::config::{ModelConfig, Provider};

/// Builds the model. Fails (with a message for the operator) when its API key
/// cannot be found.
pub fn connect(config: &ModelConfig) -> Result<DynModel<Completion>, String> {
    crate::util::choose_tls_crypto();
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
            if config.provider == Provider::OpenaiCompatible {
                let http = rig_reqwest::shared().with_middleware(SystemAsString);
                provider.connect(http).chat(name).into()
            } else {
                provider.client().chat(name).into()
            }
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

/// The key relay sends, if any: what must never appear in what relay shows
/// or writes (see `excerpt`).
pub fn key(config: &ModelConfig) -> Option<String> {
    api_key(config).ok().flatten()
}

/// The key from the environment variable named in the config, else the
/// stored key, else none.
fn api_key(config: &ModelConfig) -> Result<Option<String>, String> {
    resolve_key(config.api_key_env.as_deref(), config.api_key.as_deref(), config.provider.as_str())
}

/// A key named by environment variable `env` (which must then be set), else
/// the `stored` one, else none; `whose` names it in the error ("openai",
/// "transcription").
pub(super) fn resolve_key(env: Option<&str>, stored: Option<&str>, whose: &str) -> Result<Option<String>, String> {
    if let Some(var) = env {
        return match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(format!(
                "the environment variable {var} (which config.json names for the {whose} API key) is not set \
                 in the daemon's environment"
            )),
        };
    }
    Ok(stored.map(str::to_string).filter(|k| !k.trim().is_empty()))
}

fn missing_key(config: &ModelConfig) -> String {
    format!(
        "no API key for {}: run `relay init --provider {} --model {} --api-key-env VAR`",
        config.provider.as_str(),
        config.provider.as_str(),
        config.name
    )
}

/// A layer under rig-core's HTTP transport that sends a Chat Completions
/// system message's content as one string. rig-core 0.44 always writes it as
/// a list of text parts (`[{"type": "text", "text": ...}]`), which
/// llama-cpp-python's server refuses with a 500; a string is what every
/// server accepts. Nothing else in the request is touched.
struct SystemAsString;

impl HttpMiddleware for SystemAsString {
    fn before_request_body<'a>(
        &'a self,
        _method: &'a Method,
        _uri: &'a Uri,
        _headers: &'a HeaderMap,
        body: Bytes,
    ) -> WasmBoxedFuture<'a, rig_core::http_client::Result<Bytes>> {
        Box::pin(async move { Ok(system_as_string(body)) })
    }
}

/// `body` with each system message's text parts joined into one string;
/// `body` itself when it is not such a request, or has nothing to change.
fn system_as_string(body: Bytes) -> Bytes {
    let Ok(mut request) = serde_json::from_slice::<Value>(&body) else { return body };
    let mut changed = false;
    let messages = request.get_mut("messages").and_then(Value::as_array_mut).into_iter().flatten();
    for message in messages.filter(|m| m["role"] == "system") {
        let Some(parts) = message.get("content").and_then(Value::as_array) else { continue };
        let texts: Option<Vec<&str>> =
            parts.iter().map(|p| if p["type"] == "text" { p["text"].as_str() } else { None }).collect();
        if let Some(texts) = texts {
            message["content"] = Value::String(texts.join("\n"));
            changed = true;
        }
    }
    if !changed {
        return body;
    }
    serde_json::to_vec(&request).map(Bytes::from).unwrap_or(body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rewritten(request: Value) -> Value {
        serde_json::from_slice(&system_as_string(Bytes::from(request.to_string()))).unwrap()
    }

    #[test]
    fn the_system_content_becomes_a_string_and_nothing_else_changes() {
        let user = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
        let request = json!({
            "model": "m",
            "messages": [{"role": "system", "content": [{"type": "text", "text": "You are relay's agent."}]}, user],
            "tool_choice": "auto",
        });
        let sent = rewritten(request.clone());
        assert_eq!(sent["messages"][0], json!({"role": "system", "content": "You are relay's agent."}));
        assert_eq!(sent["messages"][1], user, "only the system message");
        assert_eq!((&sent["model"], &sent["tool_choice"]), (&request["model"], &request["tool_choice"]));
        // Already a string, or not JSON at all: sent as it was.
        for body in [json!({"messages": [{"role": "system", "content": "s"}]}).to_string(), "not json".to_string()] {
            assert_eq!(system_as_string(Bytes::from(body.clone())), Bytes::from(body));
        }
    }
}
