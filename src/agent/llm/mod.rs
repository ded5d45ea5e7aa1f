//! The conversation agent proper: relay's own bounded tool loop over
//! rig-core's completion call. Owning the loop lets every tool call go
//! through the conversation's actor (which records it durably before its
//! effect), lets the turn stop right after `end_conversation` or
//! `request_human_intervention`, and keeps token usage on every path.

use std::sync::Mutex;
use std::time::Duration;

use rig_core::DynModel;
use rig_core::completion::message::{ToolChoice, ToolName as RigToolName, UserContent};
use rig_core::completion::{CompletionRequest, CompletionResponse, FinishReason, Message, ToolDefinition};
use rig_core::operation::Completion;

mod turn;

use super::excerpt;
use super::{Agent, AgentError, ConversationTools, Turn, Verdict, Verification, json_calls, tools, verify};
use crate::api::TokenUsage;
use crate::config::{AgentSettings, ModelConfig, Provider, ToolCalls};
use crate::util::{Backoff, BoxFuture};

pub struct LlmAgent {
    model: DynModel<Completion>,
    label: String,
    provider: Provider,
    /// The API key sent, kept only to remove it from errors a server echoes.
    key: Option<String>,
    settings: AgentSettings,
    definitions: Vec<ToolDefinition>,
    /// The last failure, shown by `relay status` until a call succeeds.
    last_error: Mutex<Option<String>>,
    /// One permit per model call in flight (`agent.max_concurrent_model_calls`).
    in_flight: tokio::sync::Semaphore,
    /// How the model makes its calls (`model.tool_calls`).
    mode: ToolCalls,
    /// In `json_schema` mode, the tools its schema offers (all but the stub).
    schema_tools: Option<Vec<tools::Definition>>,
    /// In `json_schema` mode, the request's parameters offering all of
    /// them, before the turn acted and after: built once, not per call.
    schema_params: Option<[serde_json::Value; 2]>,
    /// Sent with every call (`model.temperature`, `model.max_output_tokens`),
    /// and how long one may take (`model.request_timeout_secs`).
    temperature: Option<f64>,
    max_output_tokens: u64,
    timeout: Duration,
    /// Whether the contact's photos go to the model as images (`model.vision`).
    vision: bool,
}

impl LlmAgent {
    pub fn new(config: &ModelConfig, settings: AgentSettings) -> Result<LlmAgent, String> {
        let mode = config.tool_calls();
        let schema_tools = match mode {
            ToolCalls::JsonSchema => {
                json_calls::request_params(config.provider, json_calls::schema(1))
                    .ok_or("model.tool_calls \"json_schema\" needs a provider that takes a schema")?;
                Some(json_calls::offered())
            }
            ToolCalls::Native | ToolCalls::Text => None,
        };
        let params = |offered: &[tools::Definition], min_calls| {
            json_calls::request_params(config.provider, json_calls::schema_of(offered, min_calls))
                .expect("checked above")
        };
        let schema_params = schema_tools.as_deref().map(|offered| [params(offered, 1), params(offered, 0)]);
        Ok(LlmAgent {
            model: super::provider::connect(config)?,
            label: config.label(),
            provider: config.provider,
            key: super::provider::key(config),
            definitions: match mode {
                ToolCalls::JsonSchema => json_calls::offered(),
                ToolCalls::Native | ToolCalls::Text => tools::definitions(),
            }
            .into_iter()
            .map(rig_definition)
            .collect(),
            last_error: Mutex::new(None),
            in_flight: tokio::sync::Semaphore::new(settings.max_concurrent_model_calls),
            mode,
            schema_tools,
            schema_params,
            temperature: config.temperature(),
            max_output_tokens: config.max_output_tokens(),
            timeout: Duration::from_secs(config.request_timeout_secs()),
            vision: config.vision(),
            settings,
        })
    }

    /// One model call's request: the history, the tools, and how the model
    /// is to call them (`model.tool_calls`), which depends on whether the
    /// turn has `acted` yet. In `json_schema` mode the schema leaves out the
    /// `stuck` tools, those relay refused in each of the last rounds: a
    /// model that repeats a refused call is left the other tools instead.
    /// At least one tool stays.
    pub(super) fn request(
        &self,
        messages: Vec<Message>,
        system: &str,
        acted: bool,
        stuck: &[&str],
    ) -> CompletionRequest {
        let mut request = CompletionRequest::from(messages)
            .preamble(system.to_string())
            .tools(self.definitions.clone())
            .temperature(self.temperature)
            .max_tokens(self.max_output_tokens);
        let choice = match self.mode {
            // Servers such as llama-cpp-python offer no tools without it.
            ToolCalls::Text => ToolChoice::Auto,
            // Anthropic's `{"type": "any"}` (rig-core maps it), OpenAI's "required".
            ToolCalls::Native if !acted => ToolChoice::Required,
            ToolCalls::Native => ToolChoice::Auto,
            // The schema says what to write, not the server's tool-call grammar.
            ToolCalls::JsonSchema => ToolChoice::None,
        };
        // Ollama's native API has no such field.
        if self.provider != Provider::Ollama {
            request = request.tool_choice(choice);
        }
        if let (Some(offered), Some(all)) = (&self.schema_tools, &self.schema_params) {
            let open: Vec<tools::Definition> = match offered.iter().any(|t| stuck.contains(&t.name)) {
                true => offered.iter().filter(|t| !stuck.contains(&t.name)).cloned().collect(),
                false => Vec::new(),
            };
            let params = match open.is_empty() {
                true => all[usize::from(acted)].clone(),
                false => {
                    let schema = json_calls::schema_of(&open, if acted { 0 } else { 1 });
                    json_calls::request_params(self.provider, schema).expect("checked when the agent was made")
                }
            };
            request = request.additional_params(params);
        }
        request
    }

    /// The model, for one call as is (`relay doctor`'s probe).
    pub(super) fn completion_model(&self) -> &DynModel<Completion> {
        &self.model
    }

    /// The turn error for a reply that is not the calls document the
    /// schema asks for: why, in a few words, and none of the reply (it may
    /// hold the contact's words). `relay status` shows it too.
    fn not_the_schema(&self, why: String, response: &CompletionResponse) -> AgentError {
        let cut = match response.finish_reason() {
            Some(FinishReason::Length) => {
                format!("; it was cut at model.max_output_tokens ({})", self.max_output_tokens)
            }
            _ => String::new(),
        };
        let error = format!(
            "{}: the reply is not the JSON of tool calls that model.tool_calls \"json_schema\" asks for ({why}{cut}); \
             `relay doctor` tells whether the server honours the schema",
            self.label
        );
        tracing::warn!(model = %self.label, %error, "the model's reply is not the JSON of tool calls asked for");
        *self.last_error.lock().expect("error lock") = Some(error.clone());
        AgentError::Model(error)
    }

    /// One model call, retried with backoff on timeouts, 429 and 5xx. Each
    /// attempt waits for a permit first; the timeout starts once it has one.
    /// A failure is cut to a short excerpt with none of `private` in it
    /// before anyone sees it (`relay status`, the conversation, relay.log).
    /// `held` is a permit the caller already waited for: the first attempt
    /// uses it.
    async fn call(
        &self,
        request: CompletionRequest,
        private: &[String],
        mut held: Option<tokio::sync::SemaphorePermit<'_>>,
    ) -> Result<CompletionResponse, AgentError> {
        let timeout = self.timeout;
        let mut attempt = 0;
        // Doubling without a cap of its own: `agent.max_retries` bounds it.
        let mut backoff = Backoff::new(Duration::from_millis(self.settings.retry_backoff_ms), Duration::MAX);
        loop {
            let permit = match held.take() {
                Some(permit) => permit,
                None => self.in_flight.acquire().await.expect("the semaphore is never closed"),
            };
            let outcome = tokio::time::timeout(timeout, self.model.call(request.clone())).await;
            drop(permit);
            let (error, retryable) = match outcome {
                Ok(Ok(response)) => {
                    *self.last_error.lock().expect("error lock") = None;
                    return Ok(response);
                }
                Ok(Err(e)) => (e.to_string(), e.is_retryable()),
                Err(_) => (format!("no answer within {}s", timeout.as_secs()), true),
            };
            let private: Vec<&str> = private.iter().map(String::as_str).collect();
            let secrets: Vec<&str> = self.key.iter().map(String::as_str).collect();
            let error = format!("{}: {}", self.label, excerpt::excerpt(&error, &private, &secrets));
            *self.last_error.lock().expect("error lock") = Some(error.clone());
            if !retryable || attempt >= self.settings.max_retries {
                return Err(AgentError::Model(error));
            }
            let wait = backoff.next_wait();
            tracing::warn!(model = %self.label, attempt = attempt + 1, %error, "model call failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

/// A tool as rig-core sends it.
pub(super) fn rig_definition(tool: tools::Definition) -> ToolDefinition {
    let name = RigToolName::new(tool.name).expect("tool names are not empty");
    ToolDefinition::new(name, tool.description, tool.parameters)
}

/// A photo as an image part of the contact's message: base64 with its type
/// (what every provider's wire takes: OpenAI's data URI, Anthropic's base64
/// source, Ollama's `images`).
fn image_content(image: &super::TurnImage) -> UserContent {
    use base64::Engine;
    use rig_core::completion::message::{ImageMediaType, MimeType};
    let data = base64::engine::general_purpose::STANDARD.encode(&image.bytes);
    let media_type = ImageMediaType::from_mime_type(image.mime.split(';').next().unwrap_or_default().trim());
    UserContent::image_base64(data, media_type, None)
}

impl Agent for LlmAgent {
    fn model(&self) -> Option<String> {
        Some(self.label.clone())
    }

    fn sees_images(&self) -> bool {
        self.vision
    }

    fn last_error(&self) -> Option<String> {
        self.last_error.lock().expect("error lock").clone()
    }

    fn run_turn(&self, turn: Turn, tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>> {
        // The turn's own state is allocated once it has its slot: a turn that
        // waits holds the turn it was given and no more.
        Box::pin(async move {
            let slot = self.in_flight.acquire().await.expect("the semaphore is never closed");
            Box::pin(self.turn(turn, tools, slot)).await
        })
    }

    fn verify(&self, verification: Verification) -> BoxFuture<'_, Result<(Verdict, TokenUsage), AgentError>> {
        Box::pin(self.second_look(verification))
    }
}

impl LlmAgent {
    /// One call, no tools, the question and the evidence only ([`verify`]).
    ///
    /// [`verify`]: super::verify
    async fn second_look(&self, verification: Verification) -> Result<(Verdict, TokenUsage), AgentError> {
        let question = verify::question(&verification);
        let request = self.second_look_request(&question, verification.image.as_ref());
        let response = self.call(request, &[question], None).await?;
        let usage = TokenUsage {
            input_tokens: response.usage.input_tokens.unwrap_or(0),
            cached_input_tokens: response.usage.cached_input_tokens.unwrap_or(0),
            output_tokens: response.usage.output_tokens.unwrap_or(0),
            model_calls: 1,
            text_tool_calls: 0,
        };
        Ok((verify::verdict(&response.text()), usage))
    }
}

/// A verdict is a line of JSON.
const VERDICT_TOKENS: u64 = 200;

impl LlmAgent {
    /// The second look's request: the question and the photo, no tools and
    /// so no `tool_choice` (Anthropic refuses one without tools with a 400;
    /// rig-core drops it from Chat Completions itself), no schema.
    fn second_look_request(&self, question: &str, image: Option<&super::TurnImage>) -> CompletionRequest {
        let mut content = vec![UserContent::text(question.to_string())];
        content.extend(image.map(image_content));
        let messages = vec![Message::User { content: content.into_iter().collect() }];
        CompletionRequest::from(messages)
            .preamble(verify::INSTRUCTIONS.to_string())
            .temperature(Some(0.0))
            .max_tokens(self.max_output_tokens.min(VERDICT_TOKENS))
    }
}

#[cfg(test)]
mod tests {
    use super::turn::tally;
    use super::*;
    use serde_json::Value;

    fn agent(provider: Provider, mode: Option<ToolCalls>) -> LlmAgent {
        let config = ModelConfig {
            base_url: Some("http://127.0.0.1:9".into()),
            api_key: Some("k".into()),
            tool_calls: mode,
            ..ModelConfig::new(provider, "m")
        };
        LlmAgent::new(&config, AgentSettings::default()).unwrap()
    }

    fn min_calls(params: &Value) -> Option<u64> {
        let schema = params.get("format").or_else(|| params.pointer("/response_format/json_schema/schema"))?;
        schema.pointer("/properties/calls/minItems").and_then(Value::as_u64)
    }

    /// How each request asks for calls, by provider and mode, before the
    /// turn has acted and after: Anthropic and OpenAI require one natively
    /// (rig-core sends Anthropic's `{"type": "any"}` for `Required`), the
    /// local servers get the schema with "none" (Ollama without any
    /// `tool_choice`, which its API lacks, and with the schema as `format`).
    #[test]
    fn each_provider_and_mode_asks_for_calls_its_own_way() {
        let asked = |agent: &LlmAgent, acted: bool| {
            let request = agent.request(vec![Message::user("hi")], "system", acted, &[]);
            (request.tool_choice.clone(), request.additional_params.as_ref().and_then(min_calls))
        };
        for provider in [Provider::Anthropic, Provider::Openai] {
            let native = agent(provider, None);
            assert_eq!(asked(&native, false), (Some(ToolChoice::Required), None), "{provider:?}");
            assert_eq!(asked(&native, true), (Some(ToolChoice::Auto), None), "{provider:?}");
        }
        let local = agent(Provider::OpenaiCompatible, None);
        assert_eq!(asked(&local, false), (Some(ToolChoice::None), Some(1)));
        assert_eq!(asked(&local, true), (Some(ToolChoice::None), Some(0)));
        let request = local.request(vec![Message::user("hi")], "system", false, &[]);
        assert!(request.additional_params.unwrap().get("response_format").is_some());
        assert_eq!(request.tools.len(), tools::NAMES.len() - 1, "the tools stay in the request, but for the stub");
        assert!(request.tools.iter().all(|t| t.name.as_str() != tools::ToolName::PlaceCall.as_str()));
        assert_eq!(agent(Provider::Anthropic, None).request(vec![], "s", false, &[]).tools.len(), tools::NAMES.len());
        let ollama = agent(Provider::Ollama, None);
        assert_eq!(asked(&ollama, false), (None, Some(1)));
        assert_eq!(asked(&ollama, true), (None, Some(0)));
        assert!(ollama.request(vec![], "s", false, &[]).additional_params.unwrap().get("format").is_some());
        assert_eq!(asked(&agent(Provider::Ollama, Some(ToolCalls::Native)), false), (None, None));
        let text = agent(Provider::OpenaiCompatible, Some(ToolCalls::Text));
        assert_eq!(
            (asked(&text, false), asked(&text, true)),
            ((Some(ToolChoice::Auto), None), (Some(ToolChoice::Auto), None))
        );
    }

    /// The second look offers no tools, so it says no `tool_choice`, on
    /// any provider in any mode: Anthropic refuses a `tool_choice` without
    /// tools (and rig-core sends it as it is).
    #[test]
    fn the_second_look_has_no_tools_and_no_tool_choice() {
        for provider in [Provider::Anthropic, Provider::Openai, Provider::OpenaiCompatible, Provider::Ollama] {
            for mode in [ToolCalls::Native, ToolCalls::JsonSchema, ToolCalls::Text] {
                if provider == Provider::Anthropic && mode == ToolCalls::JsonSchema {
                    continue;
                }
                let request = agent(provider, Some(mode)).second_look_request("Is it 3?", None);
                assert!(request.tools.is_empty(), "{provider:?} {mode:?}");
                assert_eq!(request.tool_choice, None, "{provider:?} {mode:?}");
                assert_eq!(request.additional_params, None, "{provider:?} {mode:?}: no schema");
            }
        }
    }

    #[test]
    fn a_tally_says_what_was_called_in_words() {
        let names = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(tally(&names(&[])), "no tool");
        assert_eq!(tally(&names(&["place_call"])), "place_call once");
        assert_eq!(
            tally(&names(&[
                "mark_todo_item",
                "place_call",
                "mark_todo_item",
                "mark_todo_item",
                "send_message",
                "place_call"
            ])),
            "mark_todo_item 3 times, place_call twice and send_message once"
        );
    }
}
