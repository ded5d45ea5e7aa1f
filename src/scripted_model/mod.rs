//! A scripted model server, for tests and for trying relay without a model
//! key. It speaks three model protocols, none streamed, each with its tool
//! calls: OpenAI Chat Completions at `/v1/chat/completions`
//! ([`chat_completions`]), Ollama's native chat API at `/api/chat`
//! ([`ollama`]) and Anthropic's Messages API at `/v1/messages`
//! ([`anthropic`], which refuses what Anthropic would). It answers from a
//! script, and records every request body as it came, in its wire's own
//! shape, so a test can check what relay sent: system prompt, history,
//! tool schemas, images. It is not a model and never pretends to be one.
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
use axum::response::Response;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::net::TcpListener;

mod anthropic;
mod chat_completions;
mod ollama;
mod transcription;

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
    /// as llama-server and OpenAI report it; Anthropic's
    /// `cache_read_input_tokens`; Ollama's `prompt_eval_cached_count`).
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
            .route("/v1/messages", post(anthropic_messages))
            .route("/v1/audio/transcriptions", post(transcription::transcribe))
            .route("/audio/transcriptions", post(transcription::transcribe))
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

    /// The base URL to configure for Chat Completions (`/chat/completions`
    /// follows it), e.g. `http://127.0.0.1:41234/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The base URL of its Anthropic API (`/v1/messages` follows it), e.g.
    /// `http://127.0.0.1:41234`, as `https://api.anthropic.com` is written.
    pub fn anthropic_url(&self) -> &str {
        self.base_url.trim_end_matches("/v1")
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
    answered(&script, request, Wire::ChatCompletions).await
}

async fn ollama_chat(State(script): State<Script>, Json(request): Json<Value>) -> Response {
    answered(&script, request, Wire::Ollama).await
}

/// A request Anthropic would refuse is refused as Anthropic would, unrecorded.
async fn anthropic_messages(
    State(script): State<Script>,
    headers: axum::http::HeaderMap,
    Json(request): Json<Value>,
) -> Response {
    match anthropic::refused(&headers, &request) {
        Some(refusal) => refusal,
        None => answered(&script, request, Wire::Anthropic).await,
    }
}

/// Every answer that is not an error reports these tokens.
const PROMPT_TOKENS: u64 = 100;
const COMPLETION_TOKENS: u64 = 10;

/// What one answer says, on any wire: its text, its native calls, and how
/// many of the prompt's tokens were read from the server's cache.
struct Said {
    text: String,
    calls: Vec<(String, Value)>,
    cached: u64,
}

/// The model protocols the server speaks.
#[derive(Clone, Copy, PartialEq)]
enum Wire {
    ChatCompletions,
    Ollama,
    Anthropic,
}

impl Wire {
    /// The request's system prompt, as this wire carries it.
    fn system(self, request: &Value) -> Option<&str> {
        match self {
            Wire::ChatCompletions => chat_completions::system(request),
            Wire::Ollama => ollama::system(request),
            Wire::Anthropic => anthropic::system(request),
        }
    }

    /// Whether the request asks for its answer as JSON held to a schema.
    fn asks_for_json(self, request: &Value) -> bool {
        match self {
            Wire::ChatCompletions => chat_completions::asks_for_json(request),
            Wire::Ollama => ollama::asks_for_json(request),
            Wire::Anthropic => anthropic::asks_for_json(request),
        }
    }

    /// The answer to request number `n`, as this wire writes one.
    fn reply(self, n: usize, model: &str, said: Said) -> Response {
        match self {
            Wire::ChatCompletions => chat_completions::reply(n, model, said),
            Wire::Ollama => ollama::reply(model, said),
            Wire::Anthropic => anthropic::reply(n, model, said),
        }
    }

    /// An HTTP error in this wire's error envelope.
    fn error(self, status: StatusCode, message: String) -> Response {
        match self {
            Wire::ChatCompletions => chat_completions::error(status, message),
            Wire::Ollama => ollama::error(status, message),
            Wire::Anthropic => anthropic::error(status, message),
        }
    }
}

async fn answered(script: &Script, request: Value, wire: Wire) -> Response {
    let now = script.in_flight.now.fetch_add(1, Ordering::SeqCst) + 1;
    script.in_flight.most.fetch_max(now, Ordering::SeqCst);
    let response = answer(script, request, wire).await;
    script.in_flight.now.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn answer(script: &Script, request: Value, wire: Wire) -> Response {
    let model = request["model"].as_str().unwrap_or("scripted").to_string();
    // A second look at a value: its system prompt is relay's instructions for one.
    if wire.system(&request).is_some_and(|t| t.starts_with(crate::agent::verify::INSTRUCTIONS)) {
        script.verifications.received.lock().expect("verifications lock").push(request);
        let verdict = script.verifications.verdicts.lock().expect("verifications lock").pop_front();
        let text = verdict.unwrap_or_else(|| json!({"confirmed": true})).to_string();
        return wire.reply(0, &model, Said { text, calls: vec![], cached: 0 });
    }
    let n = {
        let mut requests = script.requests.lock().expect("requests lock");
        requests.push(request.clone());
        requests.len() - 1
    };
    let as_json = wire.asks_for_json(&request);
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
            return wire.error(status, message);
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
    wire.reply(n, &model, Said { text, calls, cached })
}
