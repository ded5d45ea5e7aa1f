//! One agent turn: relay's bounded loop of model calls, each followed by
//! the tool calls it made, run through the conversation's actor one by one.
//! The loop ends when a call ends the turn, when the model stops calling
//! after it has acted, or at `agent.max_rounds`.

use rig_core::completion::message::{AssistantContent, ToolCall as RigToolCall, ToolFunction, ToolResultContent};
use rig_core::completion::message::{ToolName as RigToolName, UserContent};
use rig_core::completion::{CompletionResponse, Message};
use serde_json::Value;

use super::LlmAgent;
use crate::agent::prompt::{self, Speaker};
use crate::agent::text_calls::{self, Found};
use crate::agent::tools::{self, ToolName};
use crate::agent::{AgentError, ConversationTools, ToolCall, ToolError, Turn, json_calls, may_end_without_sending};
use crate::api::TokenUsage;
use crate::config::ToolCalls;

/// Rounds in a row in which relay refused every call to a tool before the
/// schema stops offering it for the rest of the turn.
const REFUSED_ROUNDS_TO_DROP: u32 = 2;

impl LlmAgent {
    /// One turn, started once `slot` (a model slot, for its first call) is
    /// held: when thousands of turns come due at once, each waits holding
    /// its conversation, not a prompt and the requests built from it.
    pub(super) async fn turn(
        &self,
        turn: Turn,
        tools: ConversationTools,
        slot: tokio::sync::SemaphorePermit<'_>,
    ) -> Result<(), AgentError> {
        let mut slot = Some(slot);
        let prompt::Context { system, turns } =
            prompt::context(&turn, crate::clock::now(), self.settings.history_budget_chars);
        // What a provider's error must not repeat (see `excerpt`).
        let private: Vec<String> =
            std::iter::once(system.clone()).chain(turns.iter().map(|t| t.text.clone())).collect();
        let mut messages: Vec<Message> = turns.into_iter().map(|t| history_message(&turn, t)).collect();
        let mut progress = Progress::default();
        for round in 0..self.settings.max_rounds {
            let acted = progress.acted(&turn);
            // The slot first, then the request: a turn waiting for its next
            // call holds its history, not a request built from it.
            let permit = match slot.take() {
                Some(permit) => permit,
                None => self.in_flight.acquire().await.expect("the semaphore is never closed"),
            };
            let request = self.request(messages.clone(), &system, acted, &progress.stuck());
            let response = self.call(request, &private, Some(permit)).await?;
            let reply = self.read_calls(&response, round);
            tools.record_usage(usage(&response, reply.from_text));
            if let Some(why) = reply.not_the_schema {
                return Err(self.not_the_schema(why, &response));
            }
            if reply.from_text > 0 {
                tracing::info!(model = %self.label, calls = reply.from_text, "tool calls read from the model's text");
            }
            if !reply.native && !reply.calls.is_empty() {
                // The calls as the history's tool calls, so the results that
                // follow answer them (ids relay made up, one per call).
                let calls = reply.calls.iter().cloned().map(AssistantContent::ToolCall).collect::<Vec<_>>();
                messages.push(Message::from(calls));
            } else if let Some(message) = response.message() {
                messages.push(message);
            }
            if reply.calls.is_empty() {
                // Text alone reaches no one.
                if acted {
                    return Ok(());
                }
                messages.push(self.remind(&turn, &mut progress, &reply.unreadable)?);
                continue;
            }
            let Some(mut content) = self.run_calls(&reply.calls, &tools, &mut progress, acted).await else {
                return Ok(());
            };
            // What else the text tried to call, and could not: the model is told.
            content.extend(reply.unreadable.iter().map(|why| UserContent::text(nothing_done(why))));
            messages.push(Message::User { content: content.into_iter().collect() });
        }
        Err(progress.out_of_rounds(&turn, self.settings.max_rounds))
    }

    /// The calls in a reply: native ones, or in text or JSON modes those
    /// written in its text.
    fn read_calls(&self, response: &CompletionResponse, round: u32) -> Reply {
        let mut reply = Reply { calls: response.tool_calls().cloned().collect(), ..Reply::default() };
        reply.native = !reply.calls.is_empty();
        if reply.native {
            return reply;
        }
        match self.mode {
            ToolCalls::Text => {
                for found in text_calls::find(&response.text()) {
                    match found {
                        Found::Call { name, arguments } => {
                            let at = reply.calls.len();
                            reply.calls.extend(made_up_call("relay_text_call", round, at, name, arguments))
                        }
                        Found::Unreadable(why) => reply.unreadable.push(why),
                    }
                }
                reply.from_text = reply.calls.len() as u64;
            }
            ToolCalls::JsonSchema => match json_calls::read(&response.text()) {
                Ok(found) => {
                    for (name, arguments) in found {
                        let at = reply.calls.len();
                        reply.calls.extend(made_up_call("relay_call", round, at, name, arguments));
                    }
                }
                Err(why) => reply.not_the_schema = Some(why),
            },
            ToolCalls::Native => {}
        }
        reply
    }

    /// The model answered with text alone before acting: small models often
    /// write their message as plain text, so they are told once, in the
    /// same turn; a second time the turn fails.
    fn remind(&self, turn: &Turn, progress: &mut Progress, unreadable: &[String]) -> Result<Message, AgentError> {
        tracing::info!(model = %self.label, kind = ?turn.kind, "the model answered without a tool call; nothing was sent");
        if progress.reminded {
            return Err(if progress.tried_to_send { AgentError::NotSent } else { AgentError::Silent });
        }
        progress.reminded = true;
        let mut reminder = prompt::act_through_tools(turn);
        for why in unreadable {
            reminder.push_str(&format!(" {}", nothing_done(why)));
        }
        Ok(Message::user(reminder))
    }

    /// Runs one round's calls in order, and gives their results for the
    /// model; `None` when the turn ends here.
    async fn run_calls(
        &self,
        calls: &[RigToolCall],
        tools: &ConversationTools,
        progress: &mut Progress,
        acted: bool,
    ) -> Option<Vec<UserContent>> {
        let mut results = Vec::with_capacity(calls.len());
        // Per tool called this round: whether any call to it took effect.
        let mut this_round: Vec<(String, bool)> = Vec::new();
        for call in calls {
            let name = call.function.name.as_str().to_string();
            let outcome = match run_call(&name, call.function.arguments_value(), tools, progress).await {
                Called::EndsTurn => return None,
                Called::Answered(outcome) => outcome,
            };
            match this_round.iter_mut().find(|(tool, _)| *tool == name) {
                Some((_, worked)) => *worked |= outcome.is_ok(),
                None => this_round.push((name, outcome.is_ok())),
            }
            results.push(UserContent::ToolResult(match outcome {
                Ok(text) => call.result(vec![ToolResultContent::text(text)]),
                // Chat Completions has no error flag: the text says it failed.
                Err(error) => call.error_result(vec![ToolResultContent::text(format!("error: {error}"))]),
            }));
        }
        let any_took_effect = this_round.iter().any(|(_, worked)| *worked);
        progress.count_round(this_round);
        // A turn that has acted and now only makes calls relay refuses ends
        // here, with what it did: going on, a small model repeats them until
        // the round limit hands the conversation to a person.
        if acted && !any_took_effect {
            tracing::info!(model = %self.label, "the turn had acted and relay refused all its next calls; it ends here");
            return None;
        }
        Some(results)
    }
}

/// What one call came to.
enum Called {
    /// It took effect and ends the turn.
    EndsTurn,
    /// What the model is told: the tool's answer or its refusal.
    Answered(Result<String, ToolError>),
}

/// Parses and runs one call, and notes what it did in `progress`.
async fn run_call(name: &str, arguments: Value, tools: &ConversationTools, progress: &mut Progress) -> Called {
    progress.tried_to_send |= ToolName::from_name(name).is_some_and(ToolName::sends);
    progress.called.push(name.to_string());
    let parsed = match tools::parse(name, arguments) {
        Ok(parsed) => parsed,
        Err(refused) => return Called::Answered(Err(refused)),
    };
    // The same call again does nothing more: a model that repeats itself is
    // told so, not obeyed twice.
    if progress.done.contains(&parsed) {
        return Called::Answered(Err(ToolError(format!(
            "{name}: this turn already made this same call, with the same arguments; nothing was done"
        ))));
    }
    let tool = parsed.tool();
    let outcome = tools.call(parsed.clone()).await;
    if outcome.is_ok() {
        if tool.ends_turn() {
            return Called::EndsTurn;
        }
        progress.sent |= tool.sends();
        progress.scheduled |= tool == ToolName::ScheduleNextHeartbeat;
        progress.done.push(parsed);
    }
    Called::Answered(outcome)
}

/// The calls one reply holds, and how they were read.
#[derive(Default)]
struct Reply {
    calls: Vec<RigToolCall>,
    /// The provider's own tool calls (else read from the text).
    native: bool,
    /// Calls read from the text (`model.tool_calls = "text"`).
    from_text: u64,
    /// What the text tried to call and could not be read.
    unreadable: Vec<String>,
    /// Why the reply is not the calls document `json_schema` asks for.
    not_the_schema: Option<String>,
}

/// What a turn has done so far: how it may end, and what to say when it
/// cannot.
#[derive(Default)]
struct Progress {
    /// A call that writes to the contact took effect.
    sent: bool,
    /// The model tried to write to the contact, whether or not it went out.
    tried_to_send: bool,
    /// `schedule_next_heartbeat` took effect.
    scheduled: bool,
    /// The model was told once to act through its tools.
    reminded: bool,
    /// Every call the model made, by the name it used.
    called: Vec<String>,
    /// The calls that took effect: the same call again is refused.
    done: Vec<ToolCall>,
    /// Per tool, the rounds in a row in which relay refused every call to it.
    refused_rounds: Vec<(String, u32)>,
}

impl Progress {
    /// Whether the turn may end here ([`may_end_without_sending`]). Until
    /// then the request requires a call (the schema's `minItems`, or
    /// `tool_choice: "required"`).
    fn acted(&self, turn: &Turn) -> bool {
        turn.already_spoke || self.sent || may_end_without_sending(turn.kind, self.scheduled)
    }

    /// The tools relay refused in each of the last rounds: the schema stops
    /// offering them (see `LlmAgent::request`).
    fn stuck(&self) -> Vec<&str> {
        let stuck = self.refused_rounds.iter().filter(|(_, n)| *n >= REFUSED_ROUNDS_TO_DROP);
        stuck.map(|(tool, _)| tool.as_str()).collect()
    }

    /// Counts a round: a tool whose every call was refused one more round
    /// in a row, one that worked none.
    fn count_round(&mut self, this_round: Vec<(String, bool)>) {
        for (tool, worked) in this_round {
            match self.refused_rounds.iter_mut().find(|(t, _)| *t == tool) {
                Some((_, n)) => *n = if worked { 0 } else { *n + 1 },
                None => self.refused_rounds.push((tool, u32::from(!worked))),
            }
        }
    }

    /// The turn's error when it reaches `agent.max_rounds`.
    fn out_of_rounds(&self, turn: &Turn, rounds: u32) -> AgentError {
        let called = tally(&self.called);
        AgentError::Model(if self.acted(turn) {
            format!(
                "the model was still calling tools after {rounds} model calls in one turn (agent.max_rounds): it \
                 called {called}; stopped"
            )
        } else {
            format!(
                "the model made {rounds} model calls in one turn (agent.max_rounds) without acting: it called \
                 {called}, but sent no message, did not end the conversation and did not ask for a person; stopped"
            )
        })
    }
}

/// One entry of the prompt's history as a message: the contact's photos
/// after the words that label them.
fn history_message(turn: &Turn, entry: prompt::ChatTurn) -> Message {
    match entry.speaker {
        Speaker::Contact if entry.images.is_empty() => Message::user(entry.text),
        Speaker::Contact => {
            let images = entry.images.iter().map(|&i| super::image_content(&turn.images[i]));
            Message::User { content: std::iter::once(UserContent::text(entry.text)).chain(images).collect() }
        }
        Speaker::Relay => Message::assistant(entry.text),
    }
}

fn usage(response: &CompletionResponse, from_text: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: response.usage.input_tokens.unwrap_or(0),
        cached_input_tokens: response.usage.cached_input_tokens.unwrap_or(0),
        output_tokens: response.usage.output_tokens.unwrap_or(0),
        model_calls: 1,
        text_tool_calls: from_text,
    }
}

fn nothing_done(why: &str) -> String {
    format!("(relay: {why}; nothing was done.)")
}

/// A call read from the reply's text, as a tool call with an id relay made
/// up (`prefix`, then the round and the call's place in it: unique in the
/// turn). A nameless call is no call.
fn made_up_call(prefix: &str, round: u32, index: usize, name: String, arguments: Value) -> Option<RigToolCall> {
    let name = RigToolName::new(name).ok()?;
    Some(RigToolCall::from_wire(format!("{prefix}_{round}_{index}"), ToolFunction::new(name, arguments)))
}

/// What a turn called, tool by tool in the order first called:
/// "mark_todo_item 7 times and place_call once".
pub(super) fn tally(called: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for name in called {
        match counts.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    let said: Vec<String> = counts
        .iter()
        .map(|(name, count)| match count {
            1 => format!("{name} once"),
            2 => format!("{name} twice"),
            n => format!("{name} {n} times"),
        })
        .collect();
    match said.split_last() {
        None => "no tool".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}
