//! A scripted model server, for tests and for trying relay without a model
//! key. It speaks the OpenAI Chat Completions protocol (non-streaming, with
//! tool calls) at `/v1/chat/completions`, and Ollama's native chat API
//! (non-streaming) at `/api/chat`, answers from a script, and records every
//! request so a test can check what relay sent: system prompt, history,
//! tool schemas. It is not a model and never pretends to be one.
//!
//! A second look at a todo's value (`agent::verify`, known by its
//! instructions) is answered apart from the script: with the verdicts a
//! test queued ([`ScriptedModel::verdicts`]), else `{"confirmed": true}`; it
//! is not one of [`ScriptedModel::requests`].
//!
//! It also speaks OpenAI's `/v1/audio/transcriptions` (multipart): it
//! "hears" the words a scripted voice note carries
//! ([`crate::media::ogg::scripted_voice_note`]) and nothing in any other
//! file, so the sandbox and `relay eval` can hold a conversation by voice.
//!
//! A request that asks for the calls as one JSON document (Chat
//! Completions' `response_format` of type `json_schema`, Ollama's `format`:
//! relay's `model.tool_calls: json_schema`) is answered as a server that
//! holds the model to the schema would answer: the scripted calls as
//! `{"calls": [...]}` in the reply's text. It does not check the schema.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Plain text, no tool call (ends the agent's turn). To a request for
    /// the calls as JSON: an empty list of calls, `{"calls": []}`.
    Text(String),
    /// Tool calls: (name, arguments). To a request for the calls as JSON:
    /// the JSON document `{"calls": [{"name": ..., "arguments": ...}]}`.
    Tools(Vec<(String, Value)>),
    /// This text as the reply, even to a request for the calls as JSON (a
    /// server that does not hold the model to the schema).
    Raw(String),
    /// An HTTP error with this status and message.
    Error(u16, String),
    /// The reply, after holding the request this long (a slow model).
    After(std::time::Duration, Box<Reply>),
    /// The reply, its usage saying this many of the prompt's tokens were
    /// read from the server's cache (`prompt_tokens_details.cached_tokens`,
    /// as llama-server and OpenAI report it).
    Cached(u64, Box<Reply>),
}

impl Reply {
    pub fn tool(name: &str, arguments: Value) -> Reply {
        Reply::Tools(vec![(name.to_string(), arguments)])
    }
}

/// Decides the answer to request number `n` (from 0), given its JSON body.
pub type Responder = Arc<dyn Fn(usize, &Value) -> Reply + Send + Sync>;

/// Answers with `replies` in order; past the end, with empty text.
pub fn queue(replies: Vec<Reply>) -> Responder {
    Arc::new(move |n, _| replies.get(n).cloned().unwrap_or(Reply::Text(String::new())))
}

#[derive(Clone)]
struct Script {
    responder: Responder,
    requests: Arc<Mutex<Vec<Value>>>,
    verifications: Arc<Verifications>,
    in_flight: Arc<InFlight>,
    transcriptions: Arc<Transcriptions>,
}

/// The transcription requests received, and the failures to answer the
/// next ones with.
#[derive(Default)]
struct Transcriptions {
    received: Mutex<Vec<Value>>,
    failures: Mutex<std::collections::VecDeque<(u16, String)>>,
}

/// The second looks asked for, and the verdicts to answer the next ones with.
#[derive(Default)]
struct Verifications {
    received: Mutex<Vec<Value>>,
    verdicts: Mutex<std::collections::VecDeque<Value>>,
}

/// Requests being answered now, and the most there ever were at once.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// A running scripted model server on 127.0.0.1. Stops when dropped.
pub struct ScriptedModel {
    base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    verifications: Arc<Verifications>,
    in_flight: Arc<InFlight>,
    transcriptions: Arc<Transcriptions>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl ScriptedModel {
    /// Starts the server on the current tokio runtime.
    pub async fn start(responder: Responder) -> std::io::Result<ScriptedModel> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(InFlight::default());
        let transcriptions = Arc::new(Transcriptions::default());
        let verifications = Arc::new(Verifications::default());
        let script = Script {
            responder,
            requests: requests.clone(),
            verifications: verifications.clone(),
            in_flight: in_flight.clone(),
            transcriptions: transcriptions.clone(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/chat/completions", post(complete))
            .route("/api/chat", post(ollama_chat))
            .route("/v1/audio/transcriptions", post(transcribe))
            .route("/audio/transcriptions", post(transcribe))
            .with_state(script);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(ScriptedModel { base_url, requests, verifications, in_flight, transcriptions, _stop: stop })
    }

    /// Starts the server on a thread of its own (for synchronous tests).
    pub fn start_on_thread(responder: Responder) -> ScriptedModel {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let server = ScriptedModel::start(responder).await.expect("scripted model server");
                let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
                let handle = ScriptedModel {
                    base_url: server.base_url.clone(),
                    requests: server.requests.clone(),
                    verifications: server.verifications.clone(),
                    in_flight: server.in_flight.clone(),
                    transcriptions: server.transcriptions.clone(),
                    _stop: done_tx,
                };
                tx.send(handle).expect("hand over the server");
                // Keep serving until the caller's handle is dropped.
                let _ = done_rx.await;
                drop(server);
            });
        });
        rx.recv().expect("scripted model server started")
    }

    /// The base URL to configure, e.g. `http://127.0.0.1:41234/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The base URL of its Ollama API (`/api/chat` follows it), e.g.
    /// `http://127.0.0.1:41234`.
    pub fn ollama_url(&self) -> &str {
        self.base_url.trim_end_matches("/v1")
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("requests lock").clone()
    }

    /// Every second look asked for so far (request bodies), in order.
    pub fn verifications(&self) -> Vec<Value> {
        self.verifications.received.lock().expect("verifications lock").clone()
    }

    /// The next second looks are answered with these verdicts, one each
    /// (`{"confirmed": false, "reading": "..."}`), before it confirms again.
    pub fn verdicts(&self, verdicts: Vec<Value>) {
        self.verifications.verdicts.lock().expect("verifications lock").extend(verdicts);
    }

    /// Every transcription request so far: its form's text fields, and
    /// `file` as `{"file_name", "bytes"}`.
    pub fn transcriptions(&self) -> Vec<Value> {
        self.transcriptions.received.lock().expect("transcriptions lock").clone()
    }

    /// The next transcription requests are answered with these errors
    /// (status, message), one each, before it hears anything again.
    pub fn fail_transcriptions(&self, failures: Vec<(u16, String)>) {
        self.transcriptions.failures.lock().expect("transcriptions lock").extend(failures);
    }

    /// The most requests it was answering at once so far.
    pub fn most_in_flight(&self) -> usize {
        self.in_flight.most.load(Ordering::SeqCst)
    }
}

async fn complete(State(script): State<Script>, Json(request): Json<Value>) -> Response {
    answered(&script, request, Protocol::ChatCompletions).await
}

async fn ollama_chat(State(script): State<Script>, Json(request): Json<Value>) -> Response {
    answered(&script, request, Protocol::Ollama).await
}

/// `/audio/transcriptions`: the words of a scripted voice note, as
/// `{"text": ...}` (with `duration` for `verbose_json`); an empty text for
/// any other file; a scripted failure first, if one is queued.
async fn transcribe(State(script): State<Script>, headers: axum::http::HeaderMap, body: axum::body::Bytes) -> Response {
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

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    ChatCompletions,
    Ollama,
}

async fn answered(script: &Script, request: Value, protocol: Protocol) -> Response {
    let now = script.in_flight.now.fetch_add(1, Ordering::SeqCst) + 1;
    script.in_flight.most.fetch_max(now, Ordering::SeqCst);
    let response = answer(script, request, protocol).await;
    script.in_flight.now.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn answer(script: &Script, request: Value, protocol: Protocol) -> Response {
    if is_verification(&request) {
        let model = request["model"].as_str().unwrap_or("scripted").to_string();
        script.verifications.received.lock().expect("verifications lock").push(request);
        let verdict = script.verifications.verdicts.lock().expect("verifications lock").pop_front();
        let text = verdict.unwrap_or_else(|| json!({"confirmed": true})).to_string();
        return match protocol {
            Protocol::ChatCompletions => chat_completion(0, &model, text, &[], 0),
            Protocol::Ollama => ollama_reply(&model, text, &[], 0),
        };
    }
    let n = {
        let mut requests = script.requests.lock().expect("requests lock");
        requests.push(request.clone());
        requests.len() - 1
    };
    let model = request["model"].as_str().unwrap_or("scripted").to_string();
    let as_json = match protocol {
        Protocol::ChatCompletions => request["response_format"]["type"] == "json_schema",
        Protocol::Ollama => request["format"].is_object(),
    };
    let mut reply = (script.responder)(n, &request);
    let mut cached = 0;
    loop {
        match reply {
            Reply::After(delay, then) => {
                tokio::time::sleep(delay).await;
                reply = *then;
            }
            Reply::Cached(tokens, then) => {
                cached = tokens;
                reply = *then;
            }
            _ => break,
        }
    }
    // What the reply says: its text, and its native calls.
    let (text, calls) = match reply {
        Reply::After(..) | Reply::Cached(..) => unreachable!("unwrapped above"),
        Reply::Error(status, message) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let body = match protocol {
                Protocol::ChatCompletions => json!({"error": {"message": message, "type": "scripted_error"}}),
                Protocol::Ollama => json!({"error": message}),
            };
            return (status, Json(body)).into_response();
        }
        Reply::Raw(text) => (text, vec![]),
        Reply::Text(_) if as_json => (json!({"calls": []}).to_string(), vec![]),
        Reply::Tools(calls) if as_json => {
            let calls: Vec<Value> =
                calls.iter().map(|(name, arguments)| json!({"name": name, "arguments": arguments})).collect();
            (json!({ "calls": calls }).to_string(), vec![])
        }
        Reply::Text(text) => (text, vec![]),
        Reply::Tools(calls) => (String::new(), calls),
    };
    match protocol {
        Protocol::ChatCompletions => chat_completion(n, &model, text, &calls, cached),
        Protocol::Ollama => ollama_reply(&model, text, &calls, cached),
    }
}

/// Whether a request is a second look at a value: its system message is
/// relay's instructions for one.
fn is_verification(request: &Value) -> bool {
    let system = request["messages"].as_array().and_then(|m| m.first()).filter(|m| m["role"] == "system");
    let content = system.map(|m| &m["content"]);
    // A string, or parts of which the first is the text.
    let text = content.and_then(|c| c.as_str().or_else(|| c[0]["text"].as_str()));
    text.is_some_and(|t| t.starts_with(crate::agent::verify::INSTRUCTIONS))
}

fn chat_completion(n: usize, model: &str, text: String, calls: &[(String, Value)], cached: u64) -> Response {
    let message = if calls.is_empty() {
        json!({"role": "assistant", "content": text})
    } else {
        let calls: Vec<Value> = calls
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
    let mut usage = json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
    if cached > 0 {
        usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
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

/// Ollama's `/api/chat` answer, not streamed: one record, `done`.
fn ollama_reply(model: &str, text: String, calls: &[(String, Value)], cached: u64) -> Response {
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        let calls: Vec<Value> =
            calls.iter().map(|(name, arguments)| json!({"function": {"name": name, "arguments": arguments}})).collect();
        message["tool_calls"] = Value::Array(calls);
    }
    let mut body = json!({
        "model": model,
        "created_at": "2026-01-01T00:00:00Z",
        "message": message,
        "done": true,
        "done_reason": "stop",
        "prompt_eval_count": 100,
        "eval_count": 10
    });
    if cached > 0 {
        body["prompt_eval_cached_count"] = json!(cached);
    }
    Json(body).into_response()
}
