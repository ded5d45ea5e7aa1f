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
//! The bugs it found have a test of their own at the end of this file.

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
            let sandbox = Arc::new(SandboxChannel::open(home.sandbox_outbox_file()).unwrap());
            let engine =
                Engine::start(Store::open(&home).unwrap(), sandbox, Arc::new(NoModel), Settings::default()).unwrap();
            let webhooks = Webhooks::start(home.webhooks_file(), engine.clone(), Default::default()).unwrap();
            (engine, webhooks)
        });
        let app = App {
            engine: engine.clone(),
            token: TOKEN.into(),
            started: Instant::now(),
            port: 3214,
            home: dir.path().display().to_string().into(),
            // Nobody listens: POST /shutdown may be fuzzed without stopping anything.
            stop: tokio::sync::watch::channel(false).0,
            webhooks,
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
                let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
                (status, body)
            };
            // The timer is made inside the runtime, which it needs.
            self.rt.block_on(async { tokio::time::timeout(HANG, answer).await })
        }));
        let (status, body) = match answered {
            Ok(Ok((status, Ok(body)))) => (status, body.to_vec()),
            Ok(Ok((status, Err(e)))) => return Err(format!("{wire}\n=> {status}, body unreadable: {e}")),
            Ok(Err(_)) => return Err(format!("{wire}\n=> no answer within {HANG:?}")),
            Err(panic) => return Err(format!("{wire}\n=> the handler panicked: {}", panic_message(&panic))),
        };
        *self.statuses.lock().unwrap().entry(status.as_u16()).or_default() += 1;
        let panics = worker_panics();
        if panics.len() > panics_before {
            return Err(format!("{wire}\n=> a task panicked: {}", panics[panics_before..].join("; ")));
        }
        if let Err(why) = check_response(wire, status, &body) {
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

// ---------------------------------------------------------------------------
// What proptest generates
// ---------------------------------------------------------------------------

/// Text that prints short even when long: `unit` repeated `times` times.
#[derive(Clone)]
struct Txt {
    unit: String,
    times: usize,
}

impl Txt {
    fn once(unit: String) -> Txt {
        Txt { unit, times: 1 }
    }
    fn string(&self) -> String {
        self.unit.repeat(self.times)
    }
}

impl fmt::Debug for Txt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.times {
            1 => write!(f, "{:?}", self.unit),
            n => write!(f, "{:?}x{n}", self.unit),
        }
    }
}

/// A conversation id as a request names it.
#[derive(Debug, Clone)]
enum Id {
    /// The first `len` characters of a conversation created earlier.
    Known {
        pick: usize,
        len: usize,
        upper: bool,
        padded: bool,
    },
    Uuid(u128),
    Text(String),
}

impl Id {
    fn text(&self, ids: &[String]) -> String {
        match self {
            Id::Known { pick, len, upper, padded } => {
                let full = ids.get(pick % ids.len().max(1)).map_or("0000", String::as_str);
                let mut id: String = full.chars().take(*len).collect();
                if *upper {
                    id = id.to_uppercase();
                }
                if *padded { format!(" {id} ") } else { id }
            }
            Id::Uuid(n) => uuid::Uuid::from_u128(*n).to_string(),
            Id::Text(s) => s.clone(),
        }
    }
}

const ROUTES: &[&str] = &[
    "/health",
    "/status",
    "/shutdown",
    "/openapi.json",
    "/instances",
    "/instances/{id}",
    "/instances/{id}/transcript",
    "/instances/{id}/cancel",
    "/instances/{id}/pause",
    "/instances/{id}/resume",
    "/instances/{id}/send",
    "/instances/{id}/answer",
    "/webhooks",
    "/webhooks/{id}",
    "/sandbox/messages",
    "/sandbox/outbox",
    "/whatsapp/pair",
];

const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "CONNECT", "get", "post", "M-SEARCH",
    "PROPFIND", "X",
];

const ODD_TEXT: &[&str] = &[
    "",
    " ",
    "\t\n",
    "\0",
    "a\0b",
    "..",
    "../..",
    "%00",
    "%ff",
    "%",
    "%2e%2e",
    "%2F",
    "é",
    "日本語",
    "🦀",
    "\u{202e}",
    "\u{feff}",
    "\u{fffd}",
    "\u{10ffff}",
    "\r\n\r\n",
    "null",
    "{}",
    "'; DROP TABLE x; --",
    "<script>",
    "${HOME}",
    "$(id)",
];

/// Contacts a create accepts; few, so conversations queue behind each other.
const VALID_CONTACTS: &[&str] = &["+56912345678", "+447911123456", "+14155552671", "+56 9 8765 4321", "+4915123456789"];

const CONTACTS: &[&str] = &[
    "+56912345678",
    "+447911123456",
    "+14155552671",
    "+56 9 8765 4321",
    "+56-9-1111-2222",
    "  +4915123456789  ",
    "+81312345678",
    "+390612345678",
    "+1-800-FLOWERS",
    "＋５６９１２３４５６７８",
    "+٥٦٩١٢٣٤٥٦٧٨",
    "+56912345678;ext=12",
    "+56912345678 ext. 99",
    "tel:+56912345678",
    "+",
    "++56912345678",
    "+0",
    "+999999999999",
    "+1",
    "+123456789012345678901234567890",
    "56912345678",
    "",
    "+(56) 9 (1234) 5678",
    "+56912345678\u{0}",
    // Iran: normalised to "+980001", which parse itself refuses (see the last test).
    "+98000001",
];

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "999",
    "1000",
    "60000",
    "2592000000",
    "2592000001",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "-1",
    "-0",
    "0.5",
    "1.0",
    "1e3",
    "1E2",
    "1e400",
    "-1e400",
    "100",
    "101",
    "null",
    "true",
    "\"60000\"",
    "[]",
    "{}",
];

const KEYS: &[&str] = &[
    "objective",
    "target_contact",
    "todos",
    "text",
    "heartbeat_config",
    "interval_ms",
    "max_followups",
    "message",
    "contact",
    "phone",
    "force",
    "state",
    "extra",
    "",
    "__proto__",
];

/// Bodies that are not JSON, or JSON at its edges.
const ODD_BODIES: &[&str] = &[
    "",
    " ",
    "null",
    "[]",
    "{}",
    "{",
    "}",
    "\"",
    "1e400",
    "18446744073709551616",
    "-1",
    "{\"message\":\"\\ud800\"}",
    "{\"message\":\"\\udc00\\ud800\"}",
    "{\"message\":\"a\\u0000b\"}",
    "{\"message\":\"a\0b\"}",
    "{\"message\":\"x\"} trailing",
    "{\"message\":\"a\",\"message\":\"b\"}",
    "{\"message\":\"\\x\"}",
    "{\"message\":\"hi\",}",
    "\u{feff}{\"message\":\"hi\"}",
    "{\"contact\":\"+56912345678\",\"text\":\"\\ud83e\\udd80\"}",
    "{\"contact\":\"+56912345678\",\"text\":\"\\u0000\"}",
    "{\"phone\":null,\"force\":\"yes\"}",
    "{\"phone\":\"+56912345678\",\"force\":true}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[{\"text\":\"t\"}],\"heartbeat_config\":null}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[{\"text\":\"t\"}],\"heartbeat_config\":{\"interval_ms\":1e400}}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[{\"text\":\"t\"}],\"heartbeat_config\":{\"max_followups\":18446744073709551616}}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":[\"t\"]}",
    "{\"objective\":\"o\",\"target_contact\":\"+56912345678\",\"todos\":{\"text\":\"t\"}}",
    "{\"objective\":[],\"target_contact\":1,\"todos\":[{\"text\":2}]}",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "application/json;",
    " application/json ",
    "application/jsonx",
    "application/vnd.api+json",
    "text/plain",
    "multipart/form-data; boundary=x",
    ";",
    "",
];

const HOSTS: &[&str] = &[
    "127.0.0.1",
    "127.0.0.1:3214",
    "localhost",
    "LOCALHOST:1",
    "[::1]",
    "[::1]:99999",
    "[::1",
    "::1",
    "127.0.0.1:",
    "127.0.0.1:abc",
    "localhost.",
    "127.0.0.1.evil.com",
    "evil.com",
    "0.0.0.0",
    "127.1",
    "",
];

const HEADER_NAMES: &[&str] = &[
    "host",
    "authorization",
    "content-type",
    "content-length",
    "transfer-encoding",
    "origin",
    "expect",
    "connection",
    "upgrade",
    "accept",
    "accept-encoding",
    "content-encoding",
    "x-forwarded-for",
    "x-forwarded-host",
    "forwarded",
    "cookie",
    "range",
];

#[derive(Debug, Clone)]
enum Auth {
    Right,
    Missing,
    /// A near miss of the right token (see `Auth::value`).
    Twisted(u8),
    Value(B),
}

impl Auth {
    fn value(&self) -> Option<Vec<u8>> {
        let twisted = |n: u8| match n % 9 {
            0 => format!("bearer {TOKEN}"),
            1 => format!("Bearer  {TOKEN}"),
            2 => format!("Bearer {TOKEN} "),
            3 => format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
            4 => format!("Bearer {TOKEN}x"),
            5 => format!("Basic {TOKEN}"),
            6 => TOKEN.to_string(),
            7 => format!("Bearer {}", TOKEN.to_uppercase()),
            _ => "Bearer ".to_string(),
        };
        match self {
            Auth::Right => Some(format!("Bearer {TOKEN}").into_bytes()),
            Auth::Missing => None,
            Auth::Twisted(n) => Some(twisted(*n).into_bytes()),
            Auth::Value(b) => Some(b.0.clone()),
        }
    }
}

#[derive(Debug, Clone)]
enum Length {
    None,
    Correct,
    Value(&'static str),
}

#[derive(Debug, Clone)]
struct Headers {
    host: Option<B>,
    auth: Auth,
    content_type: Option<B>,
    content_length: Length,
    transfer_encoding: Option<&'static str>,
    origin: Option<&'static str>,
    extra: Vec<(&'static str, B)>,
}

#[derive(Debug, Clone)]
struct Create {
    objective: Txt,
    contact: String,
    /// None: `todos` of a wrong type.
    todos: Option<Vec<Txt>>,
    /// Raw JSON literals for interval_ms and max_followups.
    heartbeat: Option<(Option<&'static str>, Option<&'static str>)>,
    extra_field: bool,
}

impl Create {
    fn json(&self) -> Vec<u8> {
        let s = |t: &str| serde_json::to_string(t).unwrap();
        let todos = match &self.todos {
            Some(todos) => {
                let items: Vec<String> = todos.iter().map(|t| format!("{{\"text\":{}}}", s(&t.string()))).collect();
                format!("[{}]", items.join(","))
            }
            None => "\"one\"".into(),
        };
        let mut body = format!(
            "{{\"objective\":{},\"target_contact\":{},\"todos\":{todos}",
            s(&self.objective.string()),
            s(&self.contact)
        );
        if let Some((interval, max)) = self.heartbeat {
            let mut fields = Vec::new();
            if let Some(interval) = interval {
                fields.push(format!("\"interval_ms\":{interval}"));
            }
            if let Some(max) = max {
                fields.push(format!("\"max_followups\":{max}"));
            }
            body.push_str(&format!(",\"heartbeat_config\":{{{}}}", fields.join(",")));
        }
        if self.extra_field {
            body.push_str(",\"extra\":1");
        }
        body.push('}');
        body.into_bytes()
    }
}

#[derive(Debug, Clone)]
enum Bytes {
    Literal(B),
    Json(Value),
    Create(Create),
    /// `{"<key>": <literal>}`
    Field(&'static str, &'static str),
    Message(Txt),
    Say(String, Txt),
    /// `depth` times `open`: deep nesting.
    Nested(&'static str, usize),
    /// `len` bytes of `fill`, inside a JSON string when `quoted`.
    Huge {
        fill: u8,
        len: usize,
        quoted: bool,
    },
    NonUtf8(B),
}

impl Bytes {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Bytes::Literal(b) | Bytes::NonUtf8(b) => b.0.clone(),
            Bytes::Json(v) => serde_json::to_vec(v).unwrap(),
            Bytes::Create(c) => c.json(),
            Bytes::Field(key, literal) => format!("{{\"{key}\":{literal}}}").into_bytes(),
            Bytes::Message(t) => serde_json::to_vec(&serde_json::json!({ "message": t.string() })).unwrap(),
            Bytes::Say(contact, t) => {
                serde_json::to_vec(&serde_json::json!({ "contact": contact, "text": t.string() })).unwrap()
            }
            Bytes::Nested(open, depth) => open.repeat(*depth).into_bytes(),
            Bytes::Huge { fill, len, quoted } => {
                let mut body = vec![*fill; *len];
                if *quoted {
                    body.splice(0..0, b"{\"message\":\"".iter().copied());
                    body.extend_from_slice(b"\"}");
                }
                body
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Target {
    Route { template: &'static str, id: Id, before: &'static str, after: &'static str, query: Option<String> },
    Raw(String),
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Get,
    Transcript,
    Cancel,
    Pause,
    Resume,
    Send,
}

#[derive(Debug, Clone)]
struct Hostile {
    method: &'static str,
    target: Target,
    headers: Headers,
    body: Bytes,
}

/// One request of a case.
#[derive(Debug, Clone)]
enum Step {
    /// Anything, from anyone.
    Hostile(Box<Hostile>),
    /// Well-formed and authorised, with values from odd to ordinary.
    Create(Create),
    Act {
        action: Action,
        id: Id,
        message: Txt,
    },
    Say {
        contact: String,
        text: Txt,
    },
    List {
        query: Option<String>,
    },
    Outbox {
        contact: Option<String>,
    },
}

fn txt() -> impl Strategy<Value = Txt> {
    prop_oneof![
        4 => "[a-zA-Z0-9 ,.!?]{1,40}".prop_map(Txt::once),
        2 => any::<String>().prop_map(Txt::once),
        2 => vec(any::<char>(), 0..24).prop_map(|c| Txt::once(c.into_iter().collect())),
        1 => select(ODD_TEXT).prop_map(|s| Txt::once(s.into())),
        1 => (select(&["x", "é", "🦀", " ", "\0"][..]), select(&[499, 500, 501, 1000, 4000, 4001, 4096, 4097, 20_000][..]))
            .prop_map(|(unit, times)| Txt { unit: unit.into(), times }),
    ]
}

fn contact() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => select(CONTACTS).prop_map(String::from),
        1 => "\\+[0-9]{0,20}",
        1 => "\\+[0-9 ()./-]{0,30}(;ext=[0-9]{0,5})?",
        1 => any::<String>().prop_map(|s| format!("+{s}")),
        1 => any::<String>(),
    ]
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        6 => (any::<usize>(), prop_oneof![4 => Just(36usize), 1 => 0usize..40], prop::bool::weighted(0.1), prop::bool::weighted(0.1))
            .prop_map(|(pick, len, upper, padded)| Id::Known { pick, len, upper, padded }),
        1 => any::<u128>().prop_map(Id::Uuid),
        1 => "[0-9a-f-]{0,12}".prop_map(Id::Text),
        2 => select(ODD_TEXT).prop_map(|s| Id::Text(s.into())),
        1 => any::<String>().prop_map(Id::Text),
        1 => (1usize..5000).prop_map(|n| Id::Text("a".repeat(n))),
    ]
}

fn query() -> impl Strategy<Value = Option<String>> {
    let key = prop_oneof![4 => select(&["state", "contact"][..]), 1 => select(KEYS), 1 => select(ODD_TEXT)];
    let value = prop_oneof![
        3 => select(&["ACTIVE", "QUEUED", "WAITING_FOR_REPLY", "NEEDS_HUMAN_INTERVENTION", "active", "NOPE"][..])
            .prop_map(String::from),
        3 => contact(),
        1 => select(ODD_TEXT).prop_map(String::from),
        1 => Just("%FF%FE".to_string()),
    ];
    prop_oneof![
        2 => Just(None),
        4 => vec((key, value, any::<bool>()), 0..4).prop_map(|pairs| Some(
            pairs.iter().map(|(k, v, eq)| if *eq { format!("{k}={v}") } else { k.to_string() }).collect::<Vec<_>>().join("&")
        )),
        1 => any::<String>().prop_map(Some),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    let before = select(&["", "", "", "", "/", "//", "/..", "/./", "/%2e%2e", "/instances/.."][..]);
    let after = select(&["", "", "", "", "", "/", "//", "/..", "/.", "#frag", "/extra", "%00", ";x", "%2F"][..]);
    prop_oneof![
        8 => (select(ROUTES), id(), before, after, query())
            .prop_map(|(template, id, before, after, query)| Target::Route { template, id, before, after, query }),
        1 => any::<String>().prop_map(Target::Raw),
        1 => vec(select(&["/", "..", "%2e", "instances", "%ff", "?", "#", "*", "//", "%", "\\", "@", "http://evil"][..]), 0..8)
            .prop_map(|parts| Target::Raw(parts.concat())),
        1 => (1usize..20_000).prop_map(|n| Target::Raw(format!("/instances/{}", "a".repeat(n)))),
    ]
}

fn header_bytes() -> impl Strategy<Value = B> {
    prop_oneof![
        3 => select(ODD_TEXT).prop_map(B::from),
        2 => vec(any::<u8>(), 0..32).prop_map(B),
        1 => (1usize..10_000).prop_map(|n| B(vec![b'x'; n])),
    ]
}

fn headers() -> impl Strategy<Value = Headers> {
    let host = prop_oneof![
        6 => Just(Some(B::from("127.0.0.1:3214"))),
        3 => select(HOSTS).prop_map(|h| Some(B::from(h))),
        1 => Just(None),
        1 => header_bytes().prop_map(Some),
    ];
    let auth = prop_oneof![
        6 => Just(Auth::Right),
        2 => Just(Auth::Missing),
        2 => any::<u8>().prop_map(Auth::Twisted),
        1 => header_bytes().prop_map(Auth::Value),
    ];
    let content_type = prop_oneof![
        4 => Just(Some(B::from("application/json"))),
        2 => select(CONTENT_TYPES).prop_map(|c| Some(B::from(c))),
        1 => Just(None),
        1 => header_bytes().prop_map(Some),
    ];
    let content_length = prop_oneof![
        6 => Just(Length::None),
        2 => Just(Length::Correct),
        2 => select(&["0", "1", "65536", "65537", "abc", "-1", "+5", "18446744073709551616", " 5", "5, 5", ""][..])
            .prop_map(Length::Value),
    ];
    let transfer_encoding = prop_oneof![
        8 => Just(None),
        1 => select(&["chunked", "gzip", "identity", "chunked, chunked", "x"][..]).prop_map(Some),
    ];
    let origin = prop_oneof![8 => Just(None), 1 => select(&["null", "http://evil.com", "http://127.0.0.1:3214", ""][..]).prop_map(Some)];
    let extra = vec((select(HEADER_NAMES), header_bytes()), 0..4);
    (host, auth, content_type, content_length, transfer_encoding, origin, extra).prop_map(
        |(host, auth, content_type, content_length, transfer_encoding, origin, extra)| Headers {
            host,
            auth,
            content_type,
            content_length,
            transfer_encoding,
            origin,
            extra,
        },
    )
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        txt().prop_map(|t| Value::String(t.string())),
        contact().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((select(KEYS), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// A create request whose values range from ordinary to out of bounds.
fn create() -> impl Strategy<Value = Create> {
    let todos = prop_oneof![
        8 => vec(txt(), 1..4).prop_map(Some),
        1 => vec(txt(), 0..60).prop_map(Some),
        1 => Just(None),
    ];
    let number = prop_oneof![
        2 => Just(None),
        2 => select(&["1000", "60000", "5", "0"][..]).prop_map(Some),
        2 => select(NUMBERS).prop_map(Some),
    ];
    let heartbeat = prop_oneof![2 => Just(None), 3 => (number.clone(), number).prop_map(Some)];
    (txt(), contact(), todos, heartbeat, prop::bool::weighted(0.05)).prop_map(
        |(objective, contact, todos, heartbeat, extra_field)| Create {
            objective,
            contact,
            todos,
            heartbeat,
            extra_field,
        },
    )
}

/// A create request that mostly succeeds, so the other steps find
/// conversations (in every state) to act on.
fn valid_create() -> impl Strategy<Value = Create> {
    let objective = prop_oneof![
        3 => "[A-Za-z][A-Za-z0-9 ,.]{0,40}".prop_map(Txt::once),
        1 => any::<String>().prop_map(|s| Txt::once(format!("o{s}"))),
    ];
    let number = |values: &'static [&'static str]| prop::option::of(select(values));
    let heartbeat =
        prop::option::of((number(&["1000", "1500", "60000", "2592000000"]), number(&["0", "1", "5", "100"])));
    (objective, select(VALID_CONTACTS), vec("[a-z][a-z ]{0,20}".prop_map(Txt::once), 1..4), heartbeat).prop_map(
        |(objective, contact, todos, heartbeat)| Create {
            objective,
            contact: contact.into(),
            todos: Some(todos),
            heartbeat,
            extra_field: false,
        },
    )
}

fn body() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        3 => select(ODD_BODIES).prop_map(|b| Bytes::Literal(B::from(b))),
        2 => json_value().prop_map(Bytes::Json),
        3 => create().prop_map(Bytes::Create),
        2 => (select(KEYS), select(NUMBERS)).prop_map(|(k, n)| Bytes::Field(k, n)),
        2 => txt().prop_map(Bytes::Message),
        1 => (contact(), txt()).prop_map(|(c, t)| Bytes::Say(c, t)),
        1 => (select(&["[", "{\"a\":", "{\"message\":[", "[{\"text\":"][..]), select(&[127usize, 128, 129, 10_000][..]))
            .prop_map(|(open, depth)| Bytes::Nested(open, depth)),
        1 => (select(&[b'x', b' ', b'[', 0u8, 0xff][..]), select(&[65_000usize, 65_536, 65_537, 70_000, 200_000][..]), any::<bool>())
            .prop_map(|(fill, len, quoted)| Bytes::Huge { fill, len, quoted }),
        1 => vec(any::<u8>(), 0..64).prop_map(|b| Bytes::NonUtf8(B(b))),
        1 => vec(any::<u8>(), 0..16).prop_map(|b| {
            let mut body = b"{\"message\":\"".to_vec();
            body.extend(b);
            body.extend_from_slice(b"\"}");
            Bytes::NonUtf8(B(body))
        }),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    select(&[Action::Get, Action::Transcript, Action::Cancel, Action::Pause, Action::Resume, Action::Send][..])
}

fn step() -> impl Strategy<Value = Step> {
    let hostile = (select(METHODS), target(), headers(), body())
        .prop_map(|(method, target, headers, body)| Step::Hostile(Box::new(Hostile { method, target, headers, body })));
    prop_oneof![
        12 => hostile,
        3 => valid_create().prop_map(Step::Create),
        1 => create().prop_map(Step::Create),
        6 => (action(), id(), txt()).prop_map(|(action, id, message)| Step::Act { action, id, message }),
        2 => (contact(), txt()).prop_map(|(contact, text)| Step::Say { contact, text }),
        1 => query().prop_map(|query| Step::List { query }),
        1 => prop::option::of(contact()).prop_map(|contact| Step::Outbox { contact }),
    ]
}

// ---------------------------------------------------------------------------
// From generated steps to requests
// ---------------------------------------------------------------------------

impl Daemon {
    fn wire(&self, step: &Step) -> Wire {
        match step {
            Step::Hostile(hostile) => self.hostile(hostile),
            Step::Create(create) => Wire::authorised(Method::POST, "/instances", Some(create.json())),
            Step::Act { action, id, message } => {
                let id = self.id(id);
                let (method, path, body) = match action {
                    Action::Get => (Method::GET, format!("/instances/{id}"), None),
                    Action::Transcript => (Method::GET, format!("/instances/{id}/transcript"), None),
                    Action::Cancel => (Method::POST, format!("/instances/{id}/cancel"), None),
                    Action::Pause => (Method::POST, format!("/instances/{id}/pause"), None),
                    Action::Resume => (Method::POST, format!("/instances/{id}/resume"), None),
                    Action::Send => {
                        (Method::POST, format!("/instances/{id}/send"), Some(Bytes::Message(message.clone())))
                    }
                };
                Wire::authorised(method, &path, body.map(|b| b.bytes()))
            }
            Step::Say { contact, text } => Wire::authorised(
                Method::POST,
                "/sandbox/messages",
                Some(Bytes::Say(contact.clone(), text.clone()).bytes()),
            ),
            Step::List { query } => {
                let path = query.as_ref().map_or("/instances".into(), |q| format!("/instances?{q}"));
                Wire::authorised(Method::GET, &path, None)
            }
            Step::Outbox { contact } => {
                let path = contact.as_ref().map_or("/sandbox/outbox".into(), |c| {
                    let encoded: String = c.bytes().map(|b| format!("%{b:02X}")).collect();
                    format!("/sandbox/outbox?contact={encoded}")
                });
                Wire::authorised(Method::GET, &path, None)
            }
        }
    }

    fn hostile(&self, hostile: &Hostile) -> Wire {
        let Hostile { method, target, headers, body } = hostile;
        let path = match target {
            Target::Route { template, id, before, after, query } => {
                let mut path = format!("{before}{}{after}", template.replace("{id}", &self.id(id)));
                if let Some(query) = query {
                    path.push('?');
                    path.push_str(query);
                }
                path
            }
            Target::Raw(raw) => raw.clone(),
        };
        let body = body.bytes();
        let mut list: Vec<(&str, Vec<u8>)> = Vec::new();
        if let Some(host) = &headers.host {
            list.push(("host", host.0.clone()));
        }
        if let Some(auth) = headers.auth.value() {
            list.push(("authorization", auth));
        }
        if let Some(content_type) = &headers.content_type {
            list.push(("content-type", content_type.0.clone()));
        }
        match headers.content_length {
            Length::None => {}
            Length::Correct => list.push(("content-length", body.len().to_string().into_bytes())),
            Length::Value(v) => list.push(("content-length", v.as_bytes().to_vec())),
        }
        if let Some(te) = headers.transfer_encoding {
            list.push(("transfer-encoding", te.as_bytes().to_vec()));
        }
        if let Some(origin) = headers.origin {
            list.push(("origin", origin.as_bytes().to_vec()));
        }
        for (name, value) in &headers.extra {
            list.push((name, value.0.clone()));
        }
        // Values HTTP cannot carry (NUL, CR, LF) cannot reach a handler: the
        // TCP part sends those.
        let headers = list
            .into_iter()
            .filter_map(|(name, value)| Some((HeaderName::from_static(name), HeaderValue::from_bytes(&value).ok()?)))
            .collect();
        Wire { method: Method::from_bytes(method.as_bytes()).unwrap(), uri: uri(&path), headers, body }
    }

    /// Runs one case's steps in order; the first wrong answer fails it.
    fn run(&self, steps: &[Step]) -> Result<(), TestCaseError> {
        for step in steps {
            let wire = self.wire(step);
            let (status, body) = self.send(&wire).map_err(TestCaseError::fail)?;
            if status == 201 && wire.uri.path() == "/instances" {
                let created: Value = serde_json::from_slice(&body).unwrap();
                self.ids.lock().unwrap().push(created["id"].as_str().unwrap().to_string());
            }
        }
        Ok(())
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Thousands of generated requests, hostile and valid mixed, against the
/// in-process router: none gets a 5xx or a non-JSON answer, none panics.
#[test]
fn hostile_requests_to_the_router_get_json_answers_below_500() {
    let daemon = Daemon::new();
    let config = ProptestConfig {
        cases: env_or("RELAY_FUZZ_CASES", DEFAULT_CASES),
        rng_seed: RngSeed::Fixed(env_or("RELAY_FUZZ_SEED", DEFAULT_SEED)),
        failure_persistence: None,
        // The daemon keeps its state between cases, so shrinking only
        // approximates; the failure names the exact request anyway.
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    };
    let started = Instant::now();
    let mut runner = TestRunner::new(config);
    let result = runner.run(&vec(step(), 1..12), |steps| daemon.run(&steps));
    let statuses = daemon.statuses.lock().unwrap().clone();
    eprintln!(
        "fuzz_api in-process: {} requests in {:.1?} ({} conversations created); statuses {statuses:?}",
        daemon.sent.load(Ordering::Relaxed),
        started.elapsed(),
        daemon.ids.lock().unwrap().len(),
    );
    if let Err(failure) = result {
        panic!("{failure}");
    }
    // The fuzz must have reached the handlers, not only the guard.
    for status in [200, 201, 400, 401, 403, 404, 409] {
        assert!(statuses.contains_key(&status), "no request got {status}: {statuses:?}");
    }
}

// ---------------------------------------------------------------------------
// Malformed framing against the real binary
// ---------------------------------------------------------------------------

/// What the client does after writing its bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Then {
    /// Reads the answer (the request says `Connection: close`, or is so
    /// broken that the server closes).
    Read,
    /// Closes its side, then reads: the server sees a request cut short.
    HalfClose,
    /// Goes away without reading.
    Drop,
}

struct Raw {
    name: String,
    /// Written in this many pieces (one write each), as a slow client would.
    pieces: Vec<Vec<u8>>,
    then: Then,
}

impl Raw {
    fn new(name: impl Into<String>, bytes: impl Into<Vec<u8>>, then: Then) -> Raw {
        Raw { name: name.into(), pieces: vec![bytes.into()], then }
    }
}

/// Hand-written framing attacks on an authorised base request.
fn framing_cases(port: u16, token: &str) -> Vec<Raw> {
    let host = format!("Host: 127.0.0.1:{port}\r\n");
    let auth = format!("Authorization: Bearer {token}\r\n");
    let base = format!("{host}{auth}Connection: close\r\n");
    let json = "Content-Type: application/json\r\n";
    let create = r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}]}"#;
    let mut cases = vec![
        // Request lines.
        Raw::new("empty lines", "\r\n\r\n\r\n", Then::HalfClose),
        Raw::new("garbage line", "GARBAGE\r\n\r\n", Then::Read),
        Raw::new("method only", "GET\r\n\r\n", Then::Read),
        Raw::new("HTTP/0.9", "GET /health\r\n\r\n", Then::Read),
        Raw::new("HTTP/9.9", format!("GET /health HTTP/9.9\r\n{base}\r\n"), Then::Read),
        Raw::new("HTTP/1.0", format!("GET /health HTTP/1.0\r\n{host}\r\n"), Then::Read),
        Raw::new("extra token", format!("GET /health HTTP/1.1 extra\r\n{base}\r\n"), Then::Read),
        Raw::new("double spaces", format!("GET  /health  HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("NUL in method", format!("G\0T /health HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("DEL in path", format!("GET /\x7f HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("lowercase version", format!("get /health http/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("absolute form", format!("GET http://evil.example/instances HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("authority form", format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("asterisk form", format!("OPTIONS * HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Then::HalfClose),
        Raw::new("TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(), Then::HalfClose),
        Raw::new("100 KiB path", format!("GET /{} HTTP/1.1\r\n{base}\r\n", "a".repeat(100 * 1024)), Then::Read),
        Raw::new("long method", format!("{} / HTTP/1.1\r\n{base}\r\n", "A".repeat(10_000)), Then::Read),
        // Header bytes.
        Raw::new("NUL in value", format!("GET /status HTTP/1.1\r\n{base}X: a\0b\r\n\r\n"), Then::Read),
        Raw::new("no colon", format!("GET /status HTTP/1.1\r\n{base}NoColon\r\n\r\n"), Then::Read),
        Raw::new("space in name", format!("GET /status HTTP/1.1\r\n{base}Bad Name: x\r\n\r\n"), Then::Read),
        Raw::new("space before colon", format!("GET /status HTTP/1.1\r\n{base}Host : x\r\n\r\n"), Then::Read),
        Raw::new("obs-fold", format!("GET /status HTTP/1.1\r\n{base}X: a\r\n b\r\n\r\n"), Then::Read),
        Raw::new("bare LF", format!("GET /status HTTP/1.1\n{}\n", base.replace("\r\n", "\n")), Then::Read),
        Raw::new("bare CR", format!("GET /status HTTP/1.1\r{}\r", base.replace("\r\n", "\r")), Then::HalfClose),
        Raw::new("empty name", format!("GET /status HTTP/1.1\r\n{base}: x\r\n\r\n"), Then::Read),
        Raw::new("two hosts", format!("GET /status HTTP/1.1\r\nHost: evil.com\r\n{base}\r\n"), Then::Read),
        Raw::new("no host", format!("GET /status HTTP/1.1\r\n{auth}Connection: close\r\n\r\n"), Then::Read),
        Raw::new(
            "host with userinfo",
            format!("GET /status HTTP/1.1\r\nHost: a@127.0.0.1\r\n{auth}Connection: close\r\n\r\n"),
            Then::Read,
        ),
        Raw::new(
            "high bytes",
            {
                let mut r = format!("GET /status HTTP/1.1\r\n{base}X: ").into_bytes();
                r.extend_from_slice(b"\xff\xfe\x80\r\nAuthorization: Bearer \xff\r\n\r\n");
                r
            },
            Then::Read,
        ),
        Raw::new(
            "1000 headers",
            format!("GET /status HTTP/1.1\r\n{base}{}\r\n", "X-A: b\r\n".repeat(1000)),
            Then::Read,
        ),
        Raw::new("101 headers", format!("GET /status HTTP/1.1\r\n{base}{}\r\n", "X-A: b\r\n".repeat(101)), Then::Read),
        Raw::new(
            "20000 headers",
            format!("GET /status HTTP/1.1\r\n{base}{}\r\n", "X: b\r\n".repeat(20_000)),
            Then::Read,
        ),
        Raw::new(
            "1 MiB header",
            format!("GET /status HTTP/1.1\r\n{base}X: {}\r\n\r\n", "v".repeat(1 << 20)),
            Then::Read,
        ),
        // Body framing.
        Raw::new(
            "CL and TE",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{create}\r\n0\r\n\r\n",
                create.len()
            ),
            Then::Read,
        ),
        Raw::new(
            "TE and CL",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\nContent-Length: 500\r\n\r\n{:x}\r\n{create}\r\n0\r\n\r\n",
                create.len()
            ),
            Then::Read,
        ),
        Raw::new(
            "two CLs",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL list",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 2, 2\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL words",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: abc\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL negative",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: -1\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL plus",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: +2\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL overflow",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 18446744073709551616\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL huge",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 18446744073709551615\r\n\r\n{{}}"),
            Then::HalfClose,
        ),
        Raw::new(
            "TE gzip",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: gzip\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "TE chunked, gzip",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked, gzip\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "TE twice",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "TE xchunked",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: xchunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "TE on GET",
            format!("GET /status HTTP/1.1\r\n{base}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            Then::Read,
        ),
        Raw::new(
            "bad chunk size",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "chunk size overflow",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::HalfClose,
        ),
        Raw::new(
            "chunk larger than sent",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n100\r\n{{}}"),
            Then::HalfClose,
        ),
        Raw::new(
            "chunk extension",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n2;{}\r\n{{}}\r\n0\r\n\r\n",
                "x=y;".repeat(5000)
            ),
            Then::Read,
        ),
        Raw::new(
            "no last chunk",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n"),
            Then::HalfClose,
        ),
        Raw::new(
            "trailers",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\nX-Trailer: \0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "chunked 70 KiB",
            {
                let mut r =
                    format!("POST /instances/abcd/send HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n");
                for _ in 0..70 {
                    r.push_str(&format!("400\r\n{}\r\n", "x".repeat(1024)));
                }
                r.push_str("0\r\n\r\n");
                r
            },
            Then::Read,
        ),
        Raw::new(
            "truncated body",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 100\r\n\r\n{{\"objective\""),
            Then::HalfClose,
        ),
        Raw::new(
            "truncated body, gone",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 100\r\n\r\n{{\"objective\""),
            Then::Drop,
        ),
        Raw::new(
            "body longer than CL",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 2\r\n\r\n{{}}GARBAGE / HTTP/1.1\r\n\r\n"),
            Then::Read,
        ),
        Raw::new(
            "expect continue, gone",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Expect: 100-continue\r\nContent-Length: 60000\r\n\r\n"),
            Then::Drop,
        ),
        Raw::new(
            "expect continue, cut",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Expect: 100-continue\r\nContent-Length: 60000\r\n\r\n"),
            Then::HalfClose,
        ),
        Raw::new(
            "expect junk",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Expect: 999-nope\r\nContent-Length: 2\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "h2c upgrade",
            format!(
                "GET /status HTTP/1.1\r\n{host}{auth}Connection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "websocket upgrade",
            format!(
                "GET /status HTTP/1.1\r\n{host}{auth}Connection: Upgrade, close\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ),
            Then::Read,
        ),
        // Slow or vanishing clients.
        Raw::new("partial line, gone", "GET /hea", Then::Drop),
        Raw::new("partial headers, gone", format!("GET /health HTTP/1.1\r\n{host}X-Slow: "), Then::Drop),
        Raw::new("partial headers, cut", format!("GET /health HTTP/1.1\r\n{host}X-Slow: "), Then::HalfClose),
        Raw::new("nothing, cut", "", Then::HalfClose),
        Raw::new("nothing, gone", "", Then::Drop),
        // Pipelining: a good request, then garbage on the same connection.
        Raw::new(
            "pipelined",
            format!("GET /health HTTP/1.1\r\n{host}\r\nGET /status HTTP/1.1\r\n{base}\r\n"),
            Then::Read,
        ),
        Raw::new("pipelined garbage", format!("GET /health HTTP/1.1\r\n{host}\r\n\0\0\0GARBAGE\r\n\r\n"), Then::Read),
    ];
    // Byte by byte, one write each: a slow but complete client is served.
    let slow = format!("GET /health HTTP/1.1\r\n{host}Connection: close\r\n\r\n");
    cases.push(Raw { name: "byte by byte".into(), pieces: slow.bytes().map(|b| vec![b]).collect(), then: Then::Read });
    // Deep and odd JSON through real framing.
    for (name, body) in [
        ("deep nesting", "[".repeat(10_000)),
        ("lone surrogate", r#"{"message":"\ud800"}"#.to_string()),
        ("huge number", r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}],"heartbeat_config":{"interval_ms":18446744073709551616}}"#.to_string()),
        ("valid create", create.to_string()),
    ] {
        let request = format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: {}\r\n\r\n{body}", body.len());
        cases.push(Raw::new(name, request, Then::Read));
    }
    cases
}

/// A tiny deterministic generator (xorshift64*), so the TCP part needs no
/// proptest machinery and runs the same every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Valid requests with random bytes flipped, inserted, removed or cut off.
fn mutated_cases(port: u16, token: &str, count: usize, seed: u64) -> Vec<Raw> {
    let host = format!("Host: 127.0.0.1:{port}\r\n");
    let auth = format!("Authorization: Bearer {token}\r\n");
    let body = r#"{"message":"hello"}"#;
    let templates = [
        format!("GET /health HTTP/1.1\r\n{host}Connection: close\r\n\r\n"),
        format!("GET /instances?state=ACTIVE HTTP/1.1\r\n{host}{auth}Connection: close\r\n\r\n"),
        format!(
            "POST /instances/abcd/send HTTP/1.1\r\n{host}{auth}Connection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
        format!(
            "POST /sandbox/messages HTTP/1.1\r\n{host}{auth}Connection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        ),
    ];
    const NASTY: &[u8] = b"\0\r\n \t:;,\"\\%/?#\x7f\x80\xff0123456789abcdefABCDEF-+";
    let mut rng = Rng(seed | 1);
    (0..count)
        .map(|n| {
            let mut bytes = templates[rng.below(templates.len())].clone().into_bytes();
            for _ in 0..1 + rng.below(4) {
                if bytes.is_empty() {
                    break;
                }
                let at = rng.below(bytes.len());
                let byte = NASTY[rng.below(NASTY.len())];
                match rng.below(5) {
                    0 | 1 => bytes[at] = byte,
                    2 => bytes.insert(at, byte),
                    3 => {
                        bytes.remove(at);
                    }
                    _ => bytes.truncate(at.max(1)),
                }
            }
            // Mutations can break `Connection: close`; closing our side
            // makes the server finish either way.
            Raw::new(format!("mutation {n}"), bytes, Then::HalfClose)
        })
        .collect()
}

/// What a raw exchange got back.
enum Outcome {
    /// One or more answers, all within the contract.
    Answered,
    /// The server closed without answering (fine for garbage).
    Closed,
    /// No answer and no close within the read timeout.
    TimedOut,
}

/// Sends one raw exchange and checks what came back, waiting no longer than
/// the read timeout for an answer.
fn exchange(port: u16, raw: &Raw) -> Result<Outcome, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("cannot connect: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    for piece in &raw.pieces {
        // The server may answer and close before reading everything.
        if stream.write_all(piece).is_err() {
            break;
        }
    }
    match raw.then {
        Then::Drop => return Ok(Outcome::Closed),
        Then::HalfClose => {
            let _ = stream.shutdown(Shutdown::Write);
        }
        Then::Read => {}
    }
    let mut response = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if response.is_empty() {
                    return Ok(Outcome::TimedOut);
                }
                break;
            }
            // Reset by the server, after its answer or with none.
            Err(_) => break,
        }
    }
    if response.is_empty() {
        return Ok(Outcome::Closed);
    }
    // Hyper also speaks HTTP/2 with prior knowledge (reqwest turns on
    // hyper-util's http2): it answers the preface with a SETTINGS frame.
    if raw.pieces[0].starts_with(b"PRI * HTTP/2.0") {
        return match response.get(3) {
            Some(4) => Ok(Outcome::Answered),
            _ => Err(format!("not an HTTP/2 SETTINGS frame: {}", response.escape_ascii())),
        };
    }
    check_raw(&response)?;
    Ok(Outcome::Answered)
}

/// Every answer in `response` (several when pipelined) is below 500, and an
/// error with a body has an `ApiErrorResponse` body. (Hyper's own answers to
/// unparsable requests have none.)
fn check_raw(response: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(response);
    let mut rest = text.as_ref();
    if !rest.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP answer: {}", response.escape_ascii()));
    }
    while let Some(at) = rest.find("HTTP/1.") {
        let answer = &rest[at..];
        let status: u16 =
            answer.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| format!("bad status line: {answer}"))?;
        if status >= 500 {
            return Err(format!("answered {status}: {answer}"));
        }
        let (head, after) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
        let length = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0usize);
        let body = &after[..length.min(after.len())];
        if status >= 400 && length > 0 {
            let error: Value = serde_json::from_str(body)
                .map_err(|e| format!("{status} with a body that is not JSON ({e}): {body}"))?;
            if !(error["error"].is_string() && error["code"].is_string()) {
                return Err(format!("{status} without `error` and `code`: {body}"));
            }
        }
        rest = &after[length.min(after.len())..];
    }
    Ok(())
}

/// Malformed HTTP framing over real TCP: whatever arrives, the daemon
/// answers below 500 or closes, keeps serving, and logs no panic.
#[test]
fn malformed_http_framing_leaves_the_daemon_serving() {
    let relay = Relay::started();
    let token = relay.token();
    let mut cases = framing_cases(relay.port, &token);
    cases.extend(mutated_cases(relay.port, &token, 300, env_or("RELAY_FUZZ_SEED", DEFAULT_SEED)));
    let total = cases.len();
    let started = Instant::now();
    let (answered, timed_out, failures) = (AtomicUsize::new(0), Mutex::new(Vec::new()), Mutex::new(Vec::new()));
    let slow = Mutex::new(Vec::new());
    // A few clients at once, so one slow exchange does not hold up the rest.
    std::thread::scope(|scope| {
        for chunk in cases.chunks(total.div_ceil(6)) {
            let (answered, timed_out, failures, slow, port) = (&answered, &timed_out, &failures, &slow, relay.port);
            scope.spawn(move || {
                for raw in chunk {
                    let began = Instant::now();
                    let outcome = exchange(port, raw);
                    if began.elapsed() > Duration::from_secs(1) {
                        slow.lock().unwrap().push(format!("{} ({:.1?})", raw.name, began.elapsed()));
                    }
                    match outcome {
                        Ok(Outcome::Answered) => {
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(Outcome::Closed) => {}
                        Ok(Outcome::TimedOut) => timed_out.lock().unwrap().push(raw.name.clone()),
                        Err(why) => failures.lock().unwrap().push(format!("{}: {why}", raw.name)),
                    }
                }
            });
        }
    });
    let (timed_out, failures) = (timed_out.into_inner().unwrap(), failures.into_inner().unwrap());
    eprintln!(
        "fuzz_api TCP: {total} raw exchanges in {:.1?}, {} answered, {} timed out {timed_out:?}, slow {:?}",
        started.elapsed(),
        answered.load(Ordering::Relaxed),
        timed_out.len(),
        slow.lock().unwrap(),
    );
    assert!(failures.is_empty(), "{} exchanges broke the contract:\n{}", failures.len(), failures.join("\n"));

    let (status, body) = relay.http("GET", "/health", &[], None);
    assert_eq!(status, 200, "{body}");
    relay.ok(&["status"]);
    for file in ["relay.log", "daemon.stderr"] {
        let text = std::fs::read_to_string(relay.path().join(file)).unwrap_or_default();
        assert!(!text.contains("panicked"), "{file} shows a panic:\n{text}");
    }
    assert!(timed_out.is_empty(), "no answer and no close within 5 s: {timed_out:?}");
}

// ---------------------------------------------------------------------------
// Bugs the fuzz found, one minimal request each (see `known_bug`)
// ---------------------------------------------------------------------------

/// One request to a fresh in-process daemon; a handler panic fails the test.
fn answer(wire: &Wire) -> (StatusCode, String) {
    let daemon = Daemon::new();
    daemon.rt.block_on(async {
        let response = daemon.router.clone().oneshot(wire.request()).await.unwrap_or_else(|never| match never {});
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    })
}

fn error_code(status: StatusCode, body: &str) -> (u16, String) {
    let error: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {body}"));
    assert!(error["error"].is_string(), "{body}");
    (status.as_u16(), error["code"].as_str().unwrap_or_default().to_string())
}

/// A percent-encoded id that is not UTF-8 gets axum's text/plain rejection
/// ("Invalid URL: Invalid UTF-8 in `id`"), not an ApiErrorResponse.
#[test]
fn an_id_that_is_not_utf8_gets_a_json_400() {
    let (status, body) = answer(&Wire::authorised(Method::GET, "/instances/%ff", None));
    assert_eq!(error_code(status, &body), (400, "invalid_request".into()));
}

/// "+98000001" is accepted and normalised to "+980001", which `Contact::parse`
/// itself refuses, so the handler panics on `contact_of` ("stored contacts
/// are E.164"); over TCP the client gets no answer at all.
#[test]
fn a_contact_whose_normal_form_is_invalid_is_refused_not_a_panic() {
    let create = r#"{"objective":"o","target_contact":"+98000001","todos":[{"text":"t"}]}"#;
    let (status, body) = answer(&Wire::authorised(Method::POST, "/instances", Some(create.into())));
    assert_eq!(error_code(status, &body), (400, "invalid_request".into()));
}
