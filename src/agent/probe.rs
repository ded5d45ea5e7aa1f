//! Whether a server holds a reply to the JSON schema of tool calls
//! (`model.tool_calls: json_schema`), asked with one small request built as
//! a turn builds its own: the tools with `tool_choice: "none"` and the
//! schema, asking for a call. `relay doctor` runs it. A server that ignores
//! the schema (some take `response_format` and do nothing with it) fails
//! every turn in this mode, so the answer says what to set instead.

use std::time::Duration;

use rig_core::completion::{FinishReason, Message};

use super::{json_calls, llm, tools};
use crate::config::{AgentSettings, ModelConfig};

/// The longest reply the probe asks for: a call is about 20 tokens, and a
/// model the schema does not hold may ramble on until this.
pub const MAX_TOKENS: u64 = 200;
/// The probe's whole prompt: no conversation text ever goes out here.
const SYSTEM: &str = "You are a test of relay's tool calls. Act only through your tools.";
const ASK: &str = "Call send_message with the text \"OK\".";

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The reply was the JSON document of calls, with a valid call: what to say.
    Honoured(String),
    /// The server refused the request, or its reply was not that document:
    /// what happened, and what to set.
    NotHonoured { detail: String, fix: String },
    /// No answer in time: the probe cannot tell.
    Unclear { detail: String, fix: String },
}

/// What to set when the server does not hold replies to the schema.
const FIX: &str = "set model.tool_calls to \"text\" (calls read from the model's text), or \"native\" if the \
                   server makes tool calls itself: `relay init --tool-calls text`, then `relay stop` and `relay start`";

/// Sends the probe to `config`'s model, waiting at most `timeout`.
pub async fn json_schema(config: &ModelConfig, timeout: Duration) -> Probe {
    let not_honoured = |why: String| Probe::NotHonoured {
        detail: format!("the server did not hold the reply to the JSON schema of tool calls ({why})"),
        fix: FIX.into(),
    };
    let agent = match llm::LlmAgent::new(config, AgentSettings::default()) {
        Ok(agent) => agent,
        Err(error) => return Probe::Unclear { detail: error, fix: FIX.into() },
    };
    let request = agent.request(vec![Message::user(ASK)], SYSTEM, false, &[]).max_tokens(MAX_TOKENS);
    let response = match tokio::time::timeout(timeout, agent.completion_model().call(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => {
            let secrets = super::provider::key(config);
            let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
            let error = super::excerpt::excerpt(&error.to_string(), &[SYSTEM, ASK], &secrets);
            return not_honoured(format!("it refused the request with the schema: {error}"));
        }
        Err(_) => {
            return Probe::Unclear {
                detail: format!(
                    "no answer within {}s to a request with the JSON schema of tool calls",
                    timeout.as_secs()
                ),
                fix: format!(
                    "run `relay doctor` again; if turns then fail with \"the reply is not the JSON of tool calls\", {FIX}"
                ),
            };
        }
    };
    if response.tool_calls().next().is_some() {
        return not_honoured("it made a native tool call instead".into());
    }
    let cut = match response.finish_reason() {
        Some(FinishReason::Length) => format!("; it was cut at {MAX_TOKENS} tokens"),
        _ => String::new(),
    };
    let calls = match json_calls::read(&response.text()) {
        Ok(calls) => calls,
        Err(why) => return not_honoured(format!("{why}{cut}")),
    };
    if calls.is_empty() {
        return not_honoured("it holds no call, and the schema asks for one".into());
    }
    for (name, arguments) in calls {
        if let Err(refused) = tools::parse(&name, arguments) {
            return not_honoured(format!("a call in it is not valid: {refused}"));
        }
    }
    Probe::Honoured("the server held a reply to the JSON schema of tool calls (model.tool_calls json_schema)".into())
}
