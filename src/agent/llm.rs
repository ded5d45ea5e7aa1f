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
use super::{Agent, AgentError, ConversationTools, ToolCall, Turn, tools};
use crate::api::TokenUsage;
use crate::config::{AgentSettings, ModelConfig};
use crate::util::{Backoff, BoxFuture};

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
            .map(|tool| {
                let name = ToolName::new(tool.name).expect("tool names are not empty");
                ToolDefinition::new(name, tool.description, tool.parameters)
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
        // What the turn did so far, for the rule on how it may end.
        let (mut sent, mut tried_to_send, mut scheduled, mut reminded) = (false, false, false, false);
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
                // Text alone reaches no one.
                if turn.already_spoke || sent || super::may_end_without_sending(turn.kind, scheduled) {
                    return Ok(());
                }
                tracing::info!(model = %self.label, kind = ?turn.kind, "the model answered without a tool call; nothing was sent");
                if reminded {
                    return Err(if tried_to_send { AgentError::NotSent } else { AgentError::Silent });
                }
                // Small models often write their message as plain text: tell
                // them once, in the same turn, and let them act.
                reminded = true;
                messages.push(Message::user(prompt::ACT_THROUGH_TOOLS));
                continue;
            }
            let mut results = Vec::with_capacity(calls.len());
            for call in &calls {
                let name = call.function.name.as_str().to_string();
                tried_to_send |= name == "send_message";
                let outcome = match tools::parse(&name, call.function.arguments_value()) {
                    Ok(parsed) => {
                        let ends_turn = parsed.ends_turn();
                        let sends = matches!(parsed, ToolCall::SendMessage { .. });
                        let schedules = matches!(parsed, ToolCall::ScheduleNextHeartbeat { .. });
                        let outcome = tools.call(parsed).await;
                        if ends_turn && outcome.is_ok() {
                            return Ok(());
                        }
                        sent |= sends && outcome.is_ok();
                        scheduled |= schedules && outcome.is_ok();
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
        // Doubling without a cap of its own: `agent.max_retries` bounds it.
        let mut backoff = Backoff::new(Duration::from_millis(self.settings.retry_backoff_ms), Duration::MAX);
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
            let wait = backoff.next_wait();
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
