//! Fuzzing the HTTP API: whatever a caller sends, relay answers below 500,
//! every error is an `ApiErrorResponse` (JSON with `error` and `code`), and
//! nothing panics.
//!
//! - In-process: the real router and engine (sandbox channel, no model)
//!   driven with `tower::ServiceExt::oneshot`; proptest generates hostile
//!   methods, paths, queries, headers and bodies, mixed with valid requests
//!   that carry the token so creation, operator commands and sandbox
//!   messages run deep into the engine.
//! - Over TCP: malformed HTTP framing sent to the real binary, which must
//!   keep serving and log no panic.
//!
//! Deterministic by default: a fixed seed, a fixed number of cases, and no
//! proptest regression files. For a longer or different run:
//!
//! ```text
//! RELAY_FUZZ_CASES=5000 RELAY_FUZZ_SEED=7 cargo test --test it fuzz_api:: -- --nocapture
//! ```
//!
//! `RELAY_FUZZ_CASES` is the number of generated cases (each a sequence of
//! up to 11 requests; default 500); `RELAY_FUZZ_SEED` the proptest seed
//! (and the TCP part's mutation seed). The in-process part prints how many
//! requests it sent and the statuses it got.
//!
//! The bugs it found have a test of their own in `found`.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config as ProptestConfig, RngSeed, TestCaseError, TestRunner};
use relay::agent::NoModel;
use relay::channel::SandboxChannel;
use relay::daemon::routes::{App, router};
use relay::engine::{Engine, Settings};
use relay::home::Home;
use relay::store::Store;
use relay::webhooks::Webhooks;
use serde_json::Value;
use tower::ServiceExt;

use crate::support::*;
use generate::*;
use steps::*;

mod found;
mod framing;
mod generate;
mod router;
mod steps;

const DEFAULT_CASES: u32 = 500;
const DEFAULT_SEED: u64 = 1;
const TOKEN: &str = "relay_fuzz0123456789abcdef0123456789abcdef";
/// Runtime workers are named so the panic hook can tell their panics
/// (a conversation actor dying) from the test threads'.
const WORKER_NAME: &str = "fuzz-api-worker";
/// Far beyond any answer's time (milliseconds), so only a hang reaches it.
const HANG: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
// Panics in spawned tasks
// ---------------------------------------------------------------------------

/// Panics on runtime workers: tokio swallows a panicking task's unwind, so
/// an actor that dies would otherwise show only as a later 503.
static WORKER_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record_worker_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name().is_some_and(|n| n.starts_with(WORKER_NAME)) {
                WORKER_PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(info.to_string());
            }
            default(info);
        }));
    });
}

fn worker_panics() -> Vec<String> {
    WORKER_PANICS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

// ---------------------------------------------------------------------------
// The in-process daemon
// ---------------------------------------------------------------------------

/// The real router over a real engine in a temporary home, as `relay daemon`
/// builds it, minus the listener.
struct Daemon {
    rt: tokio::runtime::Runtime,
    router: Router,
    engine: Engine,
    /// Ids of conversations created so far, for requests that name one.
    ids: Mutex<Vec<String>>,
    sent: AtomicUsize,
    statuses: Mutex<BTreeMap<u16, usize>>,
    _home: tempfile::TempDir,
}

impl Daemon {
    fn new() -> Daemon {
        record_worker_panics();
        // On tmpfs when there is one: the store fsyncs every change, and
        // disk latency is not what this fuzzes.
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(WORKER_NAME)
            .enable_all()
            .build()
            .unwrap();
        let home = Home::at(dir.path());
        let (engine, webhooks) = rt.block_on(async {
            let sandbox = Arc::new(SandboxChannel::open(&home).unwrap());
            let engine =
                Engine::start(Store::open(&home).unwrap(), sandbox, Arc::new(NoModel), Settings::default()).unwrap();
            let stop = tokio_util::sync::CancellationToken::new();
            let webhooks = Webhooks::start(home.webhooks_file(), engine.clone(), Default::default(), stop).unwrap();
            (engine, webhooks)
        });
        let app = App {
            engine: engine.clone(),
            token: TOKEN.into(),
            started: Instant::now(),
            port: 3214,
            home: dir.path().display().to_string().into(),
            // No server runs on it: POST /shutdown may be fuzzed without
            // stopping anything (and no fuzzed route waits or streams).
            stop: tokio_util::sync::CancellationToken::new(),
            webhooks,
            sessions: Default::default(),
        };
        Daemon {
            rt,
            router: router(app),
            engine,
            ids: Mutex::new(Vec::new()),
            sent: AtomicUsize::new(0),
            statuses: Mutex::new(BTreeMap::new()),
            _home: dir,
        }
    }

    /// Sends one request and checks the answer; Err describes the request
    /// and what was wrong.
    fn send(&self, wire: &Wire) -> Result<(u16, Vec<u8>), String> {
        let request = wire.request();
        let panics_before = worker_panics().len();
        self.sent.fetch_add(1, Ordering::Relaxed);
        // A handler panic unwinds through block_on; catch it to name the request.
        let answered = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let answer = async {
                let response = self.router.clone().oneshot(request).await.unwrap_or_else(|never| match never {});
                let status = response.status();
                let headers: Vec<(String, String)> = response
                    .headers()
                    .iter()
                    .map(|(name, value)| (name.to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
                    .collect();
                let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
                (status, headers, body)
            };
            // The timer is made inside the runtime, which it needs.
            self.rt.block_on(async { tokio::time::timeout(HANG, answer).await })
        }));
        let (status, headers, body) = match answered {
            Ok(Ok((status, headers, Ok(body)))) => (status, headers, body.to_vec()),
            Ok(Ok((status, _, Err(e)))) => return Err(format!("{wire}\n=> {status}, body unreadable: {e}")),
            Ok(Err(_)) => return Err(format!("{wire}\n=> no answer within {HANG:?}")),
            Err(panic) => return Err(format!("{wire}\n=> the handler panicked: {}", panic_message(&panic))),
        };
        *self.statuses.lock().unwrap().entry(status.as_u16()).or_default() += 1;
        let panics = worker_panics();
        if panics.len() > panics_before {
            return Err(format!("{wire}\n=> a task panicked: {}", panics[panics_before..].join("; ")));
        }
        let checked = check_response(wire, status, &body).and_then(|()| {
            let target = wire.uri.path_and_query().map_or("/", |p| p.as_str());
            contract::conformance(wire.method.as_str(), target, status.as_u16(), &headers, &body)
        });
        if let Err(why) = checked {
            let shown = String::from_utf8_lossy(&body[..body.len().min(500)]);
            return Err(format!("{wire}\n=> {status} {shown}\n{why}"));
        }
        Ok((status.as_u16(), body))
    }

    fn id(&self, id: &Id) -> String {
        let ids = self.ids.lock().unwrap();
        id.text(&ids)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.rt.block_on(self.engine.shutdown());
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// The contract for every answer: below 500, errors as `ApiErrorResponse`,
/// successes as JSON. (HEAD answers carry no body.)
fn check_response(wire: &Wire, status: StatusCode, body: &[u8]) -> Result<(), String> {
    if status.is_server_error() {
        return Err(format!("server error {status}"));
    }
    if wire.method == Method::HEAD {
        return Ok(());
    }
    let json: Value = serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    if status.as_u16() >= 400 && !(json["error"].is_string() && json["code"].is_string()) {
        return Err("the error body has no string `error` and `code`".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Requests as sent
// ---------------------------------------------------------------------------

/// Bytes that debug-print as an escaped string, not a list of numbers.
#[derive(Clone, PartialEq)]
struct B(Vec<u8>);

impl fmt::Debug for B {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

impl From<&str> for B {
    fn from(s: &str) -> B {
        B(s.as_bytes().to_vec())
    }
}

/// One request exactly as it goes to the router.
struct Wire {
    method: Method,
    uri: Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Vec<u8>,
}

impl Wire {
    fn request(&self) -> Request<Body> {
        let mut request = Request::builder().method(self.method.clone()).uri(self.uri.clone());
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request.body(Body::from(self.body.clone())).unwrap()
    }

    fn authorised(method: Method, path: &str, body: Option<Vec<u8>>) -> Wire {
        let mut headers = vec![
            (HeaderName::from_static("host"), HeaderValue::from_static("127.0.0.1:3214")),
            (HeaderName::from_static("authorization"), HeaderValue::from_str(&format!("Bearer {TOKEN}")).unwrap()),
        ];
        if body.is_some() {
            headers.push((HeaderName::from_static("content-type"), HeaderValue::from_static("application/json")));
        }
        Wire { method, uri: uri(path), headers, body: body.unwrap_or_default() }
    }
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} {}", self.method, self.uri)?;
        for (name, value) in &self.headers {
            writeln!(f, "{name}: {}", value.as_bytes().escape_ascii())?;
        }
        let shown = &self.body[..self.body.len().min(300)];
        write!(f, "\n{}", shown.escape_ascii())?;
        if self.body.len() > shown.len() {
            write!(f, "... ({} bytes)", self.body.len())?;
        }
        Ok(())
    }
}

/// The target as given when it parses, percent-encoded where it does not.
fn uri(target: &str) -> Uri {
    if let Ok(uri) = Uri::try_from(target) {
        return uri;
    }
    let mut encoded = String::new();
    for &b in target.as_bytes() {
        if b.is_ascii_alphanumeric() || b"/?&=%-._~:+".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    if !encoded.starts_with('/') {
        encoded.insert(0, '/');
    }
    Uri::try_from(encoded).unwrap_or_else(|_| Uri::from_static("/"))
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
