//! Ollama's native chat wire (`/api/chat`), not streamed: what `ollama` sends.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{COMPLETION_TOKENS, PROMPT_TOKENS, Said};

/// The system message's text.
pub(super) fn system(request: &Value) -> Option<&str> {
    let system = request["messages"].as_array()?.first().filter(|m| m["role"] == "system")?;
    system["content"].as_str()
}

/// Whether the request asks for its answer as JSON held to a schema (`format`).
pub(super) fn asks_for_json(request: &Value) -> bool {
    request["format"].is_object()
}

/// One record, `done`: the text, and the calls with their arguments as objects.
pub(super) fn reply(model: &str, said: Said) -> Response {
    let mut message = json!({"role": "assistant", "content": said.text});
    if !said.calls.is_empty() {
        let calls: Vec<Value> = said
            .calls
            .iter()
            .map(|(name, arguments)| json!({"function": {"name": name, "arguments": arguments}}))
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    let mut body = json!({
        "model": model,
        "created_at": "2026-01-01T00:00:00Z",
        "message": message,
        "done": true,
        "done_reason": "stop",
        "prompt_eval_count": PROMPT_TOKENS,
        "eval_count": COMPLETION_TOKENS
    });
    if said.cached > 0 {
        body["prompt_eval_cached_count"] = json!(said.cached);
    }
    Json(body).into_response()
}

/// Ollama's error: `{"error": message}`.
pub(super) fn error(status: StatusCode, message: String) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}
