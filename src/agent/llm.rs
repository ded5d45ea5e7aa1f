//! The conversation agent proper: relay's own bounded tool loop over
//! rig-core's completion call. Owning the loop lets every tool call go
//! through the conversation's actor (which records it durably before its
//! effect), lets the turn stop right after `end_conversation` or
//! `request_human_intervention`, and keeps token usage on every path.

use std::sync::Mutex;
use std::time::Duration;

use chrono::Utc;
use rig_core::DynModel;
use rig_core::completion::message::{ToolName, ToolResultContent};
use rig_core::completion::{CompletionRequest, CompletionResponse, Message, ToolDefinition};
use rig_core::operation::Completion;

use super::prompt::{self, Speaker};
use super::{Agent, AgentError, ConversationTools, Turn, tools};
use crate::api::TokenUsage;
use crate::config::{AgentSettings, ModelConfig};
use crate::util::BoxFuture;

pub struct LlmAgent {
    model: DynModel<Completion>,
    label: String,
    settings: AgentSettings,
    definitions: Vec<ToolDefinition>,
    /// The last failure, shown by `relay status` until a call succeeds.
    last_error: Mutex<Option<String>>,
    /// One permit per model call in flight (`agent.max_concurrent_model_calls`).
    in_flight: tokio::sync::Semaphore,
}

impl LlmAgent {
    pub fn new(config: &ModelConfig, settings: AgentSettings) -> Result<LlmAgent, String> {
        let definitions = tools::definitions()
            .into_iter()
            .map(|(name, description, schema)| {
                ToolDefinition::new(ToolName::new(name).expect("tool names are not empty"), description, schema)
            })
            .collect();
        Ok(LlmAgent {
            model: super::provider::connect(config)?,
            label: config.label(),
            definitions,
            last_error: Mutex::new(None),
            in_flight: tokio::sync::Semaphore::new(settings.max_concurrent_model_calls),
            settings,
        })
    }

    async fn turn(&self, turn: Turn, tools: ConversationTools) -> Result<(), AgentError> {
        let (history, omitted) = prompt::history(&turn, self.settings.history_budget_chars);
        let system = prompt::system_prompt(&turn, Utc::now(), omitted);
        let mut messages: Vec<Message> = history
            .into_iter()
            .map(|t| match t.speaker {
                Speaker::Contact => Message::user(t.text),
                Speaker::Relay => Message::assistant(t.text),
            })
            .collect();
        for _ in 0..self.settings.max_rounds {
            let request = CompletionRequest::from(messages.clone())
                .preamble(system.clone())
                .tools(self.definitions.clone())
                .max_tokens(self.settings.max_output_tokens);
            let response = self.call(request).await?;
            tools.record_usage(TokenUsage {
                input_tokens: response.usage.input_tokens.unwrap_or(0),
                output_tokens: response.usage.output_tokens.unwrap_or(0),
                model_calls: 1,
            });
            let calls: Vec<_> = response.tool_calls().cloned().collect();
            if let Some(message) = response.message() {
                messages.push(message);
            }
            if calls.is_empty() {
                // Text alone reaches no one: the turn is over.
                if !response.text().trim().is_empty() {
                    tracing::info!(model = %self.label, "the model answered in text without a tool call; nothing was sent");
                }
                return Ok(());
            }
            let mut results = Vec::with_capacity(calls.len());
            for call in &calls {
                let name = call.function.name.as_str().to_string();
                let outcome = match tools::parse(&name, call.function.arguments_value()) {
                    Ok(parsed) => {
                        let ends_turn = parsed.ends_turn();
                        let outcome = tools.call(parsed).await;
                        if ends_turn && outcome.is_ok() {
                            return Ok(());
                        }
                        outcome
                    }
                    Err(refused) => Err(refused),
                };
                results.push(match outcome {
                    Ok(text) => call.result(vec![ToolResultContent::text(text)]),
                    // Chat Completions has no error flag: the text says it failed.
                    Err(error) => call.error_result(vec![ToolResultContent::text(format!("error: {error}"))]),
                });
            }
            messages.push(Message::tool_results(results));
        }
        Err(AgentError::Model(format!(
            "the model was still calling tools after {} model calls in one turn (agent.max_rounds); stopped",
            self.settings.max_rounds
        )))
    }

    /// One model call, retried with backoff on timeouts, 429 and 5xx. Each
    /// attempt waits for a permit first; the timeout starts once it has one.
    async fn call(&self, request: CompletionRequest) -> Result<CompletionResponse, AgentError> {
        let timeout = Duration::from_secs(self.settings.request_timeout_secs);
        let mut attempt = 0;
        loop {
            let permit = self.in_flight.acquire().await.expect("the semaphore is never closed");
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
            let error = format!("{}: {error}", self.label);
            *self.last_error.lock().expect("error lock") = Some(error.clone());
            if !retryable || attempt >= self.settings.max_retries {
                return Err(AgentError::Model(error));
            }
            let wait = Duration::from_millis(self.settings.retry_backoff_ms.saturating_mul(1 << attempt.min(16)));
            tracing::warn!(model = %self.label, attempt = attempt + 1, %error, "model call failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

impl Agent for LlmAgent {
    fn model(&self) -> Option<String> {
        Some(self.label.clone())
    }

    fn last_error(&self) -> Option<String> {
        self.last_error.lock().expect("error lock").clone()
    }

    fn run_turn(&self, turn: Turn, tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(self.turn(turn, tools))
    }
}
