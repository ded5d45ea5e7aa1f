//! OpenAI's `/v1/audio/transcriptions` (multipart), as the scripted server
//! speaks it: it "hears" the words a scripted voice note carries
//! ([`crate::media::ogg::scripted_voice_note`]) and nothing in any other file.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Script;

/// `/audio/transcriptions`: the words of a scripted voice note, as
/// `{"text": ...}` (with `duration` for `verbose_json`); an empty text for
/// any other file; a scripted failure first, if one is queued.
pub(super) async fn transcribe(
    State(script): State<Script>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let boundary = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("boundary=").nth(1))
        .map(|b| b.trim_matches('"').to_string());
    let Some(parts) = boundary.and_then(|b| multipart(&body, &b)) else {
        let error = json!({"error": {"message": "expected multipart/form-data", "type": "invalid_request_error"}});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    };
    let mut received = serde_json::Map::new();
    let mut audio = Vec::new();
    for (name, file_name, bytes) in parts {
        if name == "file" {
            received.insert("file".into(), json!({"file_name": file_name, "bytes": bytes.len()}));
            audio = bytes;
        } else {
            received.insert(name, Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    let format = received.get("response_format").and_then(Value::as_str).unwrap_or("json").to_string();
    script.transcriptions.received.lock().expect("transcriptions lock").push(Value::Object(received));
    if let Some((status, message)) = script.transcriptions.failures.lock().expect("transcriptions lock").pop_front() {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (status, Json(json!({"error": {"message": message, "type": "scripted_error"}}))).into_response();
    }
    let text = crate::media::ogg::spoken_words(&audio).unwrap_or_default();
    let mut answer = json!({ "text": text });
    if format == "verbose_json" {
        answer["duration"] = json!(crate::media::ogg::seconds(&audio).unwrap_or(0));
    }
    Json(answer).into_response()
}

/// One part of a multipart body: its field name, file name and bytes.
type Part = (String, Option<String>, Vec<u8>);

/// The parts of a multipart body.
fn multipart(body: &[u8], boundary: &str) -> Option<Vec<Part>> {
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut rest = body;
    loop {
        let at = find(rest, delimiter.as_bytes())?;
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let head_end = find(rest, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        rest = &rest[head_end + 4..];
        let end = find(rest, format!("\r\n{delimiter}").as_bytes())?;
        let field = |key: &str| {
            head.split(';').map(str::trim).find_map(|p| p.strip_prefix(key)).map(|v| v.trim_matches('"').to_string())
        };
        parts.push((field("name=")?, field("filename="), rest[..end].to_vec()));
        rest = &rest[end + 2..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
