//! OpenAI's Chat Completions wire (`/v1/chat/completions`), not streamed:
//! what `openai` and `openai-compatible` send.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{COMPLETION_TOKENS, PROMPT_TOKENS, Said};

/// The system message's text: a string, or parts of which the first is the text.
pub(super) fn system(request: &Value) -> Option<&str> {
    let system = request["messages"].as_array()?.first().filter(|m| m["role"] == "system")?;
    let content = &system["content"];
    content.as_str().or_else(|| content[0]["text"].as_str())
}

/// Whether the request asks for its answer as JSON held to a schema.
pub(super) fn asks_for_json(request: &Value) -> bool {
    request["response_format"]["type"] == "json_schema"
}

/// A `chat.completion`: the text, or the calls (`finish_reason: tool_calls`).
pub(super) fn reply(n: usize, model: &str, said: Said) -> Response {
    let message = if said.calls.is_empty() {
        json!({"role": "assistant", "content": said.text})
    } else {
        let calls: Vec<Value> = said
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                json!({
                    "id": format!("call_{n}_{i}"),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()}
                })
            })
            .collect();
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    };
    let finish_reason = if message.get("tool_calls").is_some() { "tool_calls" } else { "stop" };
    let mut usage = json!({
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS
    });
    if said.cached > 0 {
        usage["prompt_tokens_details"] = json!({"cached_tokens": said.cached});
    }
    Json(json!({
        "id": format!("chatcmpl-scripted-{n}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage
    }))
    .into_response()
}

/// OpenAI's error envelope.
pub(super) fn error(status: StatusCode, message: String) -> Response {
    (status, Json(json!({"error": {"message": message, "type": "scripted_error"}}))).into_response()
}
