//! Anthropic's Messages wire (`POST /v1/messages`), not streamed: what
//! `anthropic` sends. A request the Messages API would refuse (no key, no
//! `max_tokens`, a `tool_use` left unanswered, a `tool_choice` without
//! tools, ...) is refused here too, in Anthropic's error envelope, before
//! the script sees it: so a test fails where Anthropic would.

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};

use super::{COMPLETION_TOKENS, PROMPT_TOKENS, Said};

/// The system prompt: a string, or text blocks of which the first is the text.
pub(super) fn system(request: &Value) -> Option<&str> {
    let system = &request["system"];
    system.as_str().or_else(|| system[0]["text"].as_str())
}

/// Whether the request asks for its answer as JSON held to a schema
/// (`output_config.format`, Anthropic's structured output).
pub(super) fn asks_for_json(request: &Value) -> bool {
    request["output_config"]["format"]["type"] == "json_schema"
}

/// A `message`: a text block if there is text, then a `tool_use` block per
/// call; `stop_reason` `tool_use` when there are calls, else `end_turn`.
pub(super) fn reply(n: usize, model: &str, said: Said) -> Response {
    let mut content: Vec<Value> = Vec::new();
    if !said.text.is_empty() {
        content.push(json!({"type": "text", "text": said.text}));
    }
    for (i, (name, input)) in said.calls.iter().enumerate() {
        content
            .push(json!({"type": "tool_use", "id": format!("toolu_scripted_{n}_{i}"), "name": name, "input": input}));
    }
    let stop_reason = if said.calls.is_empty() { "end_turn" } else { "tool_use" };
    // Anthropic counts the tokens read from its cache beside `input_tokens`, not in them.
    let usage = json!({
        "input_tokens": PROMPT_TOKENS.saturating_sub(said.cached),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": said.cached,
        "output_tokens": COMPLETION_TOKENS
    });
    let body = json!({
        "id": format!("msg_scripted_{n}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": usage
    });
    ([("request-id", format!("req_scripted_{n}"))], Json(body)).into_response()
}

/// Anthropic's error envelope, its `type` the one Anthropic gives `status`.
pub(super) fn error(status: StatusCode, message: String) -> Response {
    let kind = match status.as_u16() {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    (status, Json(json!({"type": "error", "error": {"type": kind, "message": message}}))).into_response()
}

/// The error Anthropic answers this request with, if it would refuse it.
pub(super) fn refused(headers: &HeaderMap, request: &Value) -> Option<Response> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.trim().is_empty());
    if header("x-api-key").is_none() {
        return Some(error(StatusCode::UNAUTHORIZED, "x-api-key header is required".into()));
    }
    if header("anthropic-version").is_none() {
        return Some(error(StatusCode::BAD_REQUEST, "anthropic-version: header is required".into()));
    }
    problem(request).err().map(|why| error(StatusCode::BAD_REQUEST, why))
}

/// Why the Messages API refuses this body, in its words where known.
fn problem(request: &Value) -> Result<(), String> {
    if request["stream"] == true {
        return Err("stream: the scripted server does not stream".into());
    }
    if request["model"].as_str().is_none_or(str::is_empty) {
        return Err("model: Field required".into());
    }
    if request["max_tokens"].as_u64().is_none_or(|n| n < 1) {
        return Err("max_tokens: Field required, an integer of at least 1".into());
    }
    if let Some(t) = request.get("temperature")
        && !t.as_f64().is_some_and(|t| (0.0..=1.0).contains(&t))
    {
        return Err("temperature: range: 0..1".into());
    }
    match &request["system"] {
        Value::Null | Value::String(_) => {}
        Value::Array(blocks) => {
            for (j, block) in blocks.iter().enumerate() {
                if block["type"] != "text" {
                    return Err(format!("system.{j}: system blocks must be text"));
                }
                text_block(block, &format!("system.{j}"))?;
            }
        }
        _ => return Err("system: Input should be a string or a list of text blocks".into()),
    }
    let Some(messages) = request["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err("messages: at least one message is required".into());
    };
    for (i, message) in messages.iter().enumerate() {
        message_problem(messages, i, message)?;
    }
    let tools = request.get("tools").map(|t| t.as_array().ok_or("tools: Input should be a list")).transpose()?;
    let names: Vec<&str> = tools.into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    for (k, tool) in tools.into_iter().flatten().enumerate() {
        tool_problem(tool).map_err(|why| format!("tools.{k}.{why}"))?;
    }
    if let Some(choice) = request.get("tool_choice") {
        if names.is_empty() {
            return Err("tool_choice: tool_choice may only be specified while providing tools".into());
        }
        match choice["type"].as_str() {
            Some("auto" | "any" | "none") => {}
            Some("tool") if choice["name"].as_str().is_some_and(|n| names.contains(&n)) => {}
            Some("tool") => return Err("tool_choice.name: names no tool of the request".into()),
            _ => return Err("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'".into()),
        }
    }
    Ok(())
}

/// Message `i`: its role, its blocks, and that its `tool_use` blocks are
/// answered by `tool_result` blocks in the next message, and its
/// `tool_result` blocks answer `tool_use` blocks of the one before, first.
fn message_problem(messages: &[Value], i: usize, message: &Value) -> Result<(), String> {
    let role = message["role"].as_str().unwrap_or_default();
    if role != "user" && role != "assistant" {
        return Err(format!("messages.{i}.role: Input should be 'user' or 'assistant'"));
    }
    let last_assistant = role == "assistant" && i + 1 == messages.len();
    let empty = match &message["content"] {
        Value::String(text) => text.trim().is_empty(),
        Value::Array(blocks) => blocks.is_empty(),
        _ => return Err(format!("messages.{i}.content: Input should be a string or a list of blocks")),
    };
    if empty && !last_assistant {
        return Err(format!(
            "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        ));
    }
    let blocks = message["content"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (j, block) in blocks.iter().enumerate() {
        block_problem(role, block, &format!("messages.{i}.content.{j}"))?;
    }
    let unanswered: Vec<&str> = tool_ids(blocks, "tool_use", "id")
        .into_iter()
        .filter(|id| !answers(messages.get(i + 1)).contains(id))
        .collect();
    if !unanswered.is_empty() {
        return Err(format!(
            "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each \
             `tool_use` block must have a corresponding `tool_result` block in the next message.",
            unanswered.join(", ")
        ));
    }
    let asked = i.checked_sub(1).map(|p| &messages[p]).filter(|p| p["role"] == "assistant");
    let asked = asked.and_then(|p| p["content"].as_array()).map(|b| tool_ids(b, "tool_use", "id")).unwrap_or_default();
    for (j, block) in blocks.iter().enumerate().filter(|(_, b)| b["type"] == "tool_result") {
        let id = block["tool_use_id"].as_str().unwrap_or_default();
        if !asked.contains(&id) {
            return Err(format!(
                "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each \
                 `tool_result` block must have a corresponding `tool_use` block in the previous message."
            ));
        }
        if blocks[..j].iter().any(|b| b["type"] != "tool_result") {
            return Err(format!("messages.{i}.content.{j}: `tool_result` blocks must come first in the content"));
        }
    }
    Ok(())
}

/// The `key` of each block of type `kind`.
fn tool_ids<'a>(blocks: &'a [Value], kind: &str, key: &str) -> Vec<&'a str> {
    blocks.iter().filter(|b| b["type"] == kind).filter_map(|b| b[key].as_str()).collect()
}

/// The `tool_use` ids a user `message` answers with `tool_result` blocks.
fn answers(message: Option<&Value>) -> Vec<&str> {
    let blocks = message.filter(|m| m["role"] == "user").and_then(|m| m["content"].as_array());
    blocks.map(|b| tool_ids(b, "tool_result", "tool_use_id")).unwrap_or_default()
}

/// One content block of a `role` message, at `at`.
fn block_problem(role: &str, block: &Value, at: &str) -> Result<(), String> {
    match (block["type"].as_str().unwrap_or_default(), role) {
        ("text", _) => text_block(block, at),
        ("image", "user") => image_block(block, at),
        ("tool_use", "assistant") => {
            let named = block["id"].as_str().is_some_and(|id| !id.is_empty()) && block["name"].is_string();
            match (named, block["input"].is_object()) {
                (true, true) => Ok(()),
                (false, _) => Err(format!("{at}: a `tool_use` block needs an `id` and a `name`")),
                (true, false) => Err(format!("{at}.input: Input should be an object")),
            }
        }
        ("tool_result", "user") => {
            if !block["tool_use_id"].is_string() {
                return Err(format!("{at}.tool_use_id: Field required"));
            }
            match &block["content"] {
                Value::Null | Value::String(_) => Ok(()),
                Value::Array(parts) => parts.iter().enumerate().try_for_each(|(k, part)| {
                    let at = format!("{at}.content.{k}");
                    match part["type"].as_str() {
                        Some("text") => text_block(part, &at),
                        Some("image") => image_block(part, &at),
                        _ => Err(format!("{at}: a tool result holds text and image blocks")),
                    }
                }),
                _ => Err(format!("{at}.content: Input should be a string or a list of blocks")),
            }
        }
        ("document" | "thinking" | "redacted_thinking", _) => Ok(()),
        (kind @ ("image" | "tool_use" | "tool_result"), role) => {
            Err(format!("{at}: `{kind}` blocks are not allowed in `{role}` messages"))
        }
        (kind, _) => {
            Err(format!("{at}: Input tag '{kind}' found using 'type' does not match any of the expected tags"))
        }
    }
}

/// A text block's text must hold more than whitespace.
fn text_block(block: &Value, at: &str) -> Result<(), String> {
    match block["text"].as_str() {
        Some(text) if !text.trim().is_empty() => Ok(()),
        Some(_) => Err(format!("{at}: text content blocks must contain non-whitespace text")),
        None => Err(format!("{at}.text: Field required")),
    }
}

/// An image is base64 data of a type Anthropic reads, or a URL.
fn image_block(block: &Value, at: &str) -> Result<(), String> {
    let source = &block["source"];
    match source["type"].as_str() {
        Some("base64") => {
            let media_type = source["media_type"].as_str().unwrap_or_default();
            if !["image/jpeg", "image/png", "image/gif", "image/webp"].contains(&media_type) {
                return Err(format!(
                    "{at}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
                ));
            }
            let data = source["data"].as_str().unwrap_or_default();
            match base64::engine::general_purpose::STANDARD.decode(data) {
                Ok(bytes) if !bytes.is_empty() => Ok(()),
                _ => Err(format!("{at}.source.data: the image data is not base64")),
            }
        }
        Some("url") if source["url"].is_string() => Ok(()),
        _ => Err(format!("{at}.source: Input should be a base64 or url source")),
    }
}

/// A tool: a name Anthropic takes and an object schema with no union at its top.
fn tool_problem(tool: &Value) -> Result<(), String> {
    let name = tool["name"].as_str().unwrap_or_default();
    let legal = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > 64 || !name.chars().all(legal) {
        return Err("name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'".into());
    }
    let schema = &tool["input_schema"];
    if schema["type"] != "object" {
        return Err("input_schema.type: Input should be 'object'".into());
    }
    if ["oneOf", "allOf", "anyOf"].iter().any(|k| schema.get(k).is_some()) {
        return Err("input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What relay sends in a reply turn: the system as text blocks, the
    /// contact's words and photo, a call answered by its result, the tools.
    fn request() -> Value {
        json!({
            "model": "claude-haiku-4-5",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are relay"}],
            "messages": [
                {"role": "assistant", "content": [{"type": "text", "text": "Hi!"}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "the meter"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}}
                ]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "send_message", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "sent"}]},
                    {"type": "text", "text": "(relay: note)"}
                ]}
            ],
            "tools": [{"name": "send_message", "description": "d", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"}
        })
    }

    #[test]
    fn what_relay_sends_is_taken_and_what_anthropic_refuses_is_refused_by_name() {
        assert_eq!(problem(&request()), Ok(()));
        // What the refusal says, and how the request is broken.
        type Case = (&'static str, fn(&mut Value));
        let cases: [Case; 12] = [
            ("max_tokens", |r| r["max_tokens"] = json!(0)),
            ("temperature: range: 0..1", |r| r["temperature"] = json!(1.5)),
            ("non-whitespace text", |r| r["messages"][0]["content"][0]["text"] = json!(" ")),
            ("media_type", |r| r["messages"][1]["content"][1]["source"]["media_type"] = json!("image/heic")),
            ("not base64", |r| r["messages"][1]["content"][1]["source"]["data"] = json!("not base64!")),
            ("without `tool_result` blocks immediately after: t1", |r| {
                r["messages"][3]["content"].as_array_mut().unwrap().remove(0);
            }),
            ("unexpected `tool_use_id` found in `tool_result` blocks: t9", |r| {
                let extra = json!({"type": "tool_result", "tool_use_id": "t9", "content": "sent"});
                r["messages"][3]["content"].as_array_mut().unwrap().insert(1, extra);
            }),
            ("must come first", |r| r["messages"][3]["content"].as_array_mut().unwrap().reverse()),
            ("`tool_use` blocks are not allowed in `user` messages", |r| {
                r["messages"][1]["content"][0] = json!({"type": "tool_use", "id": "x", "name": "n", "input": {}});
            }),
            ("tool_choice may only be specified while providing tools", |r| {
                r.as_object_mut().unwrap().remove("tools");
            }),
            ("tools.0.input_schema: input_schema does not support oneOf", |r| {
                r["tools"][0]["input_schema"]["anyOf"] = json!([]);
            }),
            ("non-empty content", |r| r["messages"][1]["content"] = json!([])),
        ];
        for (why, break_it) in cases {
            let mut broken = request();
            break_it(&mut broken);
            let refused = problem(&broken).expect_err(why);
            assert!(refused.contains(why), "{why}: {refused}");
        }
    }
}
