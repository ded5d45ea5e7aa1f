//! The conversation agent proper: relay's own bounded tool loop over
//! rig-core's completion call. Owning the loop lets every tool call go
//! through the conversation's actor (which records it durably before its
//! effect), lets the turn stop right after `end_conversation` or
//! `request_human_intervention`, and keeps token usage on every path.

use std::sync::Mutex;
use std::time::Duration;

use rig_core::DynModel;
use rig_core::completion::message::{
    AssistantContent, ToolCall as RigToolCall, ToolChoice, ToolFunction, ToolName, ToolResultContent, UserContent,
};
use rig_core::completion::{CompletionRequest, CompletionResponse, Message, ToolDefinition};
use rig_core::operation::Completion;

use super::excerpt;
use super::prompt::{self, Speaker};
use super::text_calls::{self, Found};
use super::{Agent, AgentError, ConversationTools, ToolCall, Turn, tools};
use crate::api::TokenUsage;
use crate::config::{AgentSettings, ModelConfig, Provider};
use crate::util::{Backoff, BoxFuture};

pub struct LlmAgent {
    model: DynModel<Completion>,
    label: String,
    /// The API key sent, kept only to remove it from errors a server echoes.
    key: Option<String>,
    settings: AgentSettings,
    definitions: Vec<ToolDefinition>,
    /// The last failure, shown by `relay status` until a call succeeds.
    last_error: Mutex<Option<String>>,
    /// One permit per model call in flight (`agent.max_concurrent_model_calls`).
    in_flight: tokio::sync::Semaphore,
    /// Read tool calls written as text (`model.text_tool_calls`).
    text_tool_calls: bool,
    /// Send `tool_choice: "auto"`: servers such as llama-cpp-python offer
    /// no tools without it. Ollama's native API has no such field.
    tool_choice: bool,
    /// Sent with every call (`model.temperature`, `model.max_output_tokens`),
    /// and how long one may take (`model.request_timeout_secs`).
    temperature: Option<f64>,
    max_output_tokens: u64,
    timeout: Duration,
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
            key: super::provider::key(config),
            definitions,
            last_error: Mutex::new(None),
            in_flight: tokio::sync::Semaphore::new(settings.max_concurrent_model_calls),
            text_tool_calls: config.reads_text_tool_calls(),
            tool_choice: config.provider != Provider::Ollama,
            temperature: config.temperature(),
            max_output_tokens: config.max_output_tokens(),
            timeout: Duration::from_secs(config.request_timeout_secs()),
            settings,
        })
    }

    async fn turn(&self, turn: Turn, tools: ConversationTools) -> Result<(), AgentError> {
        let prompt::Context { system, turns } =
            prompt::context(&turn, crate::clock::now(), self.settings.history_budget_chars);
        // What a provider's error must not repeat (see `excerpt`).
        let private: Vec<String> =
            std::iter::once(system.clone()).chain(turns.iter().map(|t| t.text.clone())).collect();
        let mut messages: Vec<Message> = turns
            .into_iter()
            .map(|t| match t.speaker {
                Speaker::Contact => Message::user(t.text),
                Speaker::Relay => Message::assistant(t.text),
            })
            .collect();
        // What the turn did so far, for the rule on how it may end.
        let (mut sent, mut tried_to_send, mut scheduled, mut reminded) = (false, false, false, false);
        for round in 0..self.settings.max_rounds {
            let mut request = CompletionRequest::from(messages.clone())
                .preamble(system.clone())
                .tools(self.definitions.clone())
                .temperature(self.temperature)
                .max_tokens(self.max_output_tokens);
            if self.tool_choice {
                request = request.tool_choice(ToolChoice::Auto);
            }
            let response = self.call(request, &private).await?;
            let mut calls: Vec<RigToolCall> = response.tool_calls().cloned().collect();
            // No native call: the model may have written its calls as text.
            let mut unreadable = Vec::new();
            if calls.is_empty() && self.text_tool_calls {
                let text = response.text();
                for found in text_calls::find(&text) {
                    match found {
                        Found::Call { name, arguments } => calls.extend(text_call(round, calls.len(), name, arguments)),
                        Found::Unreadable(why) => unreadable.push(why),
                    }
                }
            }
            let from_text = if response.tool_calls().next().is_none() { calls.len() as u64 } else { 0 };
            tools.record_usage(TokenUsage {
                input_tokens: response.usage.input_tokens.unwrap_or(0),
                cached_input_tokens: response.usage.cached_input_tokens.unwrap_or(0),
                output_tokens: response.usage.output_tokens.unwrap_or(0),
                model_calls: 1,
                text_tool_calls: from_text,
            });
            if from_text > 0 {
                // The calls as the history's tool calls, so the results that
                // follow answer them (ids relay made up, one per call).
                tracing::info!(model = %self.label, calls = from_text, "tool calls read from the model's text");
                messages.push(Message::from(calls.iter().cloned().map(AssistantContent::ToolCall).collect::<Vec<_>>()));
            } else if let Some(message) = response.message() {
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
                let mut reminder = prompt::act_through_tools(&turn);
                for why in &unreadable {
                    reminder.push_str(&format!(" (relay: {why}; nothing was done.)"));
                }
                messages.push(Message::user(reminder));
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
            let mut content: Vec<UserContent> = results.into_iter().map(UserContent::ToolResult).collect();
            // What else the text tried to call, and could not: the model is told.
            content
                .extend(unreadable.iter().map(|why| UserContent::text(format!("(relay: {why}; nothing was done.)"))));
            messages.push(Message::User { content });
        }
        Err(AgentError::Model(format!(
            "the model was still calling tools after {} model calls in one turn (agent.max_rounds); stopped",
            self.settings.max_rounds
        )))
    }

    /// One model call, retried with backoff on timeouts, 429 and 5xx. Each
    /// attempt waits for a permit first; the timeout starts once it has one.
    /// A failure is cut to a short excerpt with none of `private` in it
    /// before anyone sees it (`relay status`, the conversation, relay.log).
    async fn call(&self, request: CompletionRequest, private: &[String]) -> Result<CompletionResponse, AgentError> {
        let timeout = self.timeout;
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

/// A call read from the text, as a tool call with an id relay made up
/// (unique in the turn: the round and the call's place in it). A nameless
/// call is no call.
fn text_call(round: u32, index: usize, name: String, arguments: serde_json::Value) -> Option<RigToolCall> {
    let name = ToolName::new(name).ok()?;
    Some(RigToolCall::from_wire(format!("relay_text_call_{round}_{index}"), ToolFunction::new(name, arguments)))
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
