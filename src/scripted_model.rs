//! A scripted model server, for tests and for trying relay without a model
//! key. It speaks the OpenAI Chat Completions protocol (non-streaming, with
//! tool calls) at `/v1/chat/completions`, answers from a script, and records
//! every request so a test can check what relay sent: system prompt,
//! history, tool schemas. It is not a model and never pretends to be one.

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
    /// Plain text, no tool call (ends the agent's turn).
    Text(String),
    /// Tool calls: (name, arguments).
    Tools(Vec<(String, Value)>),
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
    in_flight: Arc<InFlight>,
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
    in_flight: Arc<InFlight>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl ScriptedModel {
    /// Starts the server on the current tokio runtime.
    pub async fn start(responder: Responder) -> std::io::Result<ScriptedModel> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(InFlight::default());
        let script = Script { responder, requests: requests.clone(), in_flight: in_flight.clone() };
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/chat/completions", post(complete))
            .with_state(script);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(ScriptedModel { base_url, requests, in_flight, _stop: stop })
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
                    in_flight: server.in_flight.clone(),
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

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("requests lock").clone()
    }

    /// The most requests it was answering at once so far.
    pub fn most_in_flight(&self) -> usize {
        self.in_flight.most.load(Ordering::SeqCst)
    }
}

async fn complete(State(script): State<Script>, Json(request): Json<Value>) -> Response {
    let now = script.in_flight.now.fetch_add(1, Ordering::SeqCst) + 1;
    script.in_flight.most.fetch_max(now, Ordering::SeqCst);
    let response = answer(&script, request).await;
    script.in_flight.now.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn answer(script: &Script, request: Value) -> Response {
    let n = {
        let mut requests = script.requests.lock().expect("requests lock");
        requests.push(request.clone());
        requests.len() - 1
    };
    let model = request["model"].as_str().unwrap_or("scripted").to_string();
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
    let message = match reply {
        Reply::After(..) | Reply::Cached(..) => unreachable!("unwrapped above"),
        Reply::Error(status, message) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let body = json!({"error": {"message": message, "type": "scripted_error"}});
            return (status, Json(body)).into_response();
        }
        Reply::Text(text) => json!({"role": "assistant", "content": text}),
        Reply::Tools(calls) => {
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
        }
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
