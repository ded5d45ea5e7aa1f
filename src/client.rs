//! The one client of the daemon's API, for every front end: `relay`'s
//! subcommands, `relay mcp`'s tools and `relay start`'s health probe. One
//! method per route, typed requests and answers; paths and query strings
//! (from the API's own query types) are built here and nowhere else. Errors
//! are `ApiErrorResponse`s: the daemon's, or the client's own in the same
//! shape (an `api::ErrorCode` for a daemon not running, an id that cannot be
//! one, a broken connection).
//!
//! HTTP/1.1 over loopback with reqwest, built for it: no proxy, and an
//! empty set of trusted roots (so no system certificates are loaded: the
//! client never speaks TLS, and a command starts as fast as with a bare
//! connection).

use std::io;
use std::time::Duration;

use reqwest::{Method, StatusCode, header};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::limits::DEFAULT_WAIT;
use crate::api::paging::{self, Cursor, Page};
use crate::api::{
    AnswerRequest, ApiErrorResponse, ConversationEvent, ConversationInstance, CreateInstanceRequest,
    CreateInstanceResponse, DaemonStatusResponse, ErrorCode, EventsQuery, HealthResponse, ListQuery, OptOut,
    OptOutAdded, OptOutRequest, OutboxEntry, OutboxQuery, PairRequest, PairingEvent, PhoneRequest, PhoneResponse,
    SandboxLockRequest, SandboxLockState, SandboxSayRequest, SandboxSayResponse, SendMessageRequest, ShutdownResponse,
    TranscriptMessage, TranscriptQuery, UploadResponse, WaitQuery, WaitResponse, Webhook, WebhookCreated,
    WebhookRequest,
};
use crate::config::{Config, ConfigError};
use crate::home::{Home, daemon_files};

mod ids;
pub mod request;
mod ui;

pub use ids::InstanceId;
use ids::{number, webhook_id};

/// What every call of this client fails with.
pub type Error = ApiErrorResponse;

/// Longer than any request the daemon serves should take...
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// ...but a send answers once the message is out, which on WhatsApp can mean
/// pacing, waiting for a lost connection (`connect_wait_secs`) and retries.
const SEND_TIMEOUT: Duration = Duration::from_secs(600);
/// How much longer than a wait itself the client waits for the daemon's answer.
const WAIT_MARGIN: Duration = Duration::from_secs(30);
/// `relay start`'s probe: a daemon that is up answers `/health` at once.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// Who ended a stream of lines.
#[derive(Debug)]
pub enum StreamEnd {
    /// The caller's `each` said stop.
    Reader,
    /// The daemon ended it (it does when it stops).
    Daemon,
    /// The connection broke mid-stream (a daemon killed, for one).
    Cut(reqwest::Error),
}

pub struct Client {
    http: reqwest::Client,
    port: u16,
    token: Option<String>,
    timeout: Duration,
    idempotency_key: Option<String>,
}

impl Client {
    /// A client for the daemon of `home` (on port `asked`, if the user gave
    /// one). Fails early, with the right advice, when relay is not
    /// initialised or its daemon is not running.
    ///
    /// A running daemon is found by its port and token files, without
    /// config.json (which may be mid-edit, or broken: that matters only to
    /// the next start).
    pub fn new(home: &Home, asked: Option<u16>) -> Result<Client, Error> {
        let locked = daemon_files::is_locked(home);
        // While the lock is held the port file is the running daemon's (it
        // removes a killed one's first); without it, it is still starting, or
        // `relay init` is linking.
        if locked && let Some(running) = daemon_files::read_port(home) {
            if let Some(asked) = asked
                && asked != running
            {
                return Err(Error::new(
                    ErrorCode::InvalidArguments,
                    format!(
                        "relay is running on port {running}, not {asked} ({}): leave it out, or give {running}",
                        port_source()
                    ),
                ));
            }
            let token = daemon_files::read_token(home);
            return Ok(Client::at(running, token));
        }
        let config = Config::load(home).map_err(config_error)?;
        let token = daemon_files::read_token(home);
        if token.is_none() && !locked {
            return Err(not_running());
        }
        Ok(Client::at(port(home, asked, &config), token))
    }

    /// A client for whatever answers on `port` (no token: `/health` needs none).
    pub fn on_port(port: u16) -> Client {
        Client::at(port, None)
    }

    fn at(port: u16, token: Option<String>) -> Client {
        crate::util::choose_tls_crypto();
        let http = reqwest::Client::builder()
            .no_proxy()
            // The daemon closes a connection idle for `http.header_timeout`
            // (10 s): one reused just as it closes fails its request, so a
            // long-lived client (`relay mcp`) lets go of them well before.
            .pool_idle_timeout(Duration::from_secs(4))
            .tls_certs_only([])
            .build()
            .expect("a loopback client without TLS roots builds");
        Client { http, port, token, timeout: REQUEST_TIMEOUT, idempotency_key: None }
    }

    /// The same client, waiting up to `timeout` for answers.
    pub fn with_timeout(self, timeout: Duration) -> Client {
        Client { timeout, ..self }
    }

    /// The same client, sending `Idempotency-Key: key` (if any) with
    /// `create` and `send`.
    /// A key that breaks the rule is refused here, in the daemon's words,
    /// before it could be put into a header.
    pub fn with_idempotency_key(self, key: Option<String>) -> Result<Client, Error> {
        if let Some(problem) = key.as_deref().and_then(crate::api::limits::idempotency_key_problem) {
            return Err(Error::new(ErrorCode::InvalidArguments, problem));
        }
        Ok(Client { idempotency_key: key, ..self })
    }

    // ---- the daemon ----

    /// `GET /health`, within a couple of seconds.
    pub async fn health(&self) -> Result<HealthResponse, Error> {
        self.with(HEALTH_TIMEOUT).request(Method::GET, "/health", None::<&()>).await
    }

    /// `GET /status`.
    pub async fn status(&self) -> Result<DaemonStatusResponse, Error> {
        self.request(Method::GET, "/status", None::<&()>).await
    }

    /// `POST /shutdown`.
    pub async fn shutdown(&self) -> Result<ShutdownResponse, Error> {
        self.request(Method::POST, "/shutdown", None::<&()>).await
    }

    // ---- conversations ----

    /// `POST /instances`.
    pub async fn create(&self, request: &CreateInstanceRequest) -> Result<CreateInstanceResponse, Error> {
        self.request(Method::POST, "/instances", Some(request)).await
    }

    /// `GET /instances?...`: one page, and where the next one starts.
    pub async fn list(&self, query: &ListQuery) -> Result<Page<ConversationInstance>, Error> {
        let response =
            self.send_request(Method::GET, &with_query("/instances", query), None, "application/json").await?;
        let (next, remaining) = page_headers(&response);
        let next = next.map(|c| c.parse::<Cursor>()).transpose().map_err(failure)?;
        Ok(Page { items: answer(response).await?, next, remaining })
    }

    /// Every page of `GET /instances?...`, newest first.
    pub async fn list_all(&self, query: &ListQuery) -> Result<Vec<ConversationInstance>, Error> {
        let mut query = ListQuery { limit: Some(paging::MAX_LIMIT), ..query.clone() };
        let mut all = Vec::new();
        loop {
            let page = self.list(&query).await?;
            all.extend(page.items);
            match page.next {
                Some(next) => query.cursor = Some(next.to_string()),
                None => return Ok(all),
            }
        }
    }

    /// `GET /instances/{id}`.
    pub async fn get(&self, id: &InstanceId) -> Result<ConversationInstance, Error> {
        self.request(Method::GET, &id.path(), None::<&()>).await
    }

    /// `GET /instances/{id}/transcript?...`: one page, oldest first.
    pub async fn transcript_page(
        &self,
        id: &InstanceId,
        query: &TranscriptQuery,
    ) -> Result<Page<TranscriptMessage, uuid::Uuid>, Error> {
        let path = with_query(&format!("{}/transcript", id.path()), query);
        let response = self.send_request(Method::GET, &path, None, "application/json").await?;
        let (next, remaining) = page_headers(&response);
        let next = next.map(|c| paging::message_cursor(&c)).transpose().map_err(failure)?;
        Ok(Page { items: answer(response).await?, next, remaining })
    }

    /// The whole transcript, every page of it.
    pub async fn transcript(&self, id: &InstanceId) -> Result<Vec<TranscriptMessage>, Error> {
        let mut query = TranscriptQuery { limit: Some(paging::MAX_LIMIT), cursor: None };
        let mut all = Vec::new();
        loop {
            let page = self.transcript_page(id, &query).await?;
            all.extend(page.items);
            match page.next {
                Some(next) => query.cursor = Some(next.to_string()),
                None => return Ok(all),
            }
        }
    }

    /// `GET /instances/{id}/messages/{message}/media`: the file's bytes;
    /// `message` is its file's reference (`m1`), its id or a start of it.
    pub async fn media(&self, id: &InstanceId, message: &str) -> Result<Vec<u8>, Error> {
        if !crate::engine::message_ref::could_name_one(message) {
            return Err(Error::new(
                ErrorCode::InvalidArguments,
                format!(
                    "'{message}' names no message: give its file's reference (m1) or its id, as `relay transcript` shows"
                ),
            ));
        }
        let path = format!("{}/messages/{}/media", id.path(), message.trim());
        let response = self.send_request(Method::GET, &path, None, "application/octet-stream").await?;
        let status = response.status();
        let body = response.bytes().await.map_err(cut)?;
        match status.is_success() {
            true => Ok(body.to_vec()),
            false => Err(error_of(status, &body)),
        }
    }

    /// `GET /instances/{id}/wait?...`, waiting for the answer as long as the
    /// wait itself may take, and a margin.
    pub async fn wait(&self, id: &InstanceId, query: &WaitQuery) -> Result<WaitResponse, Error> {
        let path = with_query(&format!("{}/wait", id.path()), query);
        let waits = query.timeout_ms.map(Duration::from_millis).unwrap_or(DEFAULT_WAIT);
        self.with(waits + WAIT_MARGIN).request(Method::GET, &path, None::<&()>).await
    }

    /// `POST /instances/{id}/send`, waiting as long as a send may take.
    pub async fn send(&self, id: &InstanceId, request: &SendMessageRequest) -> Result<TranscriptMessage, Error> {
        let path = format!("{}/send", id.path());
        self.with(SEND_TIMEOUT).request(Method::POST, &path, Some(request)).await
    }

    /// `POST /instances/{id}/answer`.
    pub async fn answer(&self, id: &InstanceId, request: &AnswerRequest) -> Result<ConversationInstance, Error> {
        let path = format!("{}/answer", id.path());
        self.request(Method::POST, &path, Some(request)).await
    }

    /// `POST /instances/{id}/pause`.
    pub async fn pause(&self, id: &InstanceId) -> Result<ConversationInstance, Error> {
        self.control(id, "pause").await
    }

    /// `POST /instances/{id}/resume`.
    pub async fn resume(&self, id: &InstanceId) -> Result<ConversationInstance, Error> {
        self.control(id, "resume").await
    }

    /// `POST /instances/{id}/cancel`.
    pub async fn cancel(&self, id: &InstanceId) -> Result<ConversationInstance, Error> {
        self.control(id, "cancel").await
    }

    async fn control(&self, id: &InstanceId, verb: &str) -> Result<ConversationInstance, Error> {
        let path = format!("{}/{verb}", id.path());
        self.request(Method::POST, &path, None::<&()>).await
    }

    /// `GET /events?...` as NDJSON (`query.instance` as an `InstanceId`'s
    /// `as_str`): each event to `each` until the daemon
    /// ends the stream or `each` says stop (returns false); says who ended
    /// it, since a caller following an endless stream must tell a daemon
    /// that went away from its own reader stopping.
    pub async fn events(
        &self,
        query: &EventsQuery,
        each: impl FnMut(ConversationEvent) -> bool,
    ) -> Result<StreamEnd, Error> {
        self.lines(Method::GET, &with_query("/events", query), None::<&()>, each).await
    }

    // ---- webhooks ----

    /// `POST /webhooks`.
    pub async fn add_webhook(&self, request: &WebhookRequest) -> Result<WebhookCreated, Error> {
        self.request(Method::POST, "/webhooks", Some(request)).await
    }

    /// `GET /webhooks`.
    pub async fn webhooks(&self) -> Result<Vec<Webhook>, Error> {
        self.request(Method::GET, "/webhooks", None::<&()>).await
    }

    /// `DELETE /webhooks/{id}`.
    pub async fn remove_webhook(&self, id: &str) -> Result<Webhook, Error> {
        let path = format!("/webhooks/{}", webhook_id(id)?);
        self.request(Method::DELETE, &path, None::<&()>).await
    }

    // ---- the do-not-contact list ----

    /// `GET /opt-outs`.
    pub async fn opt_outs(&self) -> Result<Vec<OptOut>, Error> {
        self.request(Method::GET, "/opt-outs", None::<&()>).await
    }

    /// `POST /opt-outs`.
    pub async fn add_opt_out(&self, request: &OptOutRequest) -> Result<OptOutAdded, Error> {
        self.request(Method::POST, "/opt-outs", Some(request)).await
    }

    /// `DELETE /opt-outs/{contact}`.
    pub async fn remove_opt_out(&self, contact: &str) -> Result<OptOut, Error> {
        let path = format!("/opt-outs/{}", number(contact)?);
        self.request(Method::DELETE, &path, None::<&()>).await
    }

    // ---- channels ----

    /// `POST /media`: gives the daemon a file, for a request to name.
    pub async fn upload(&self, bytes: Vec<u8>) -> Result<UploadResponse, Error> {
        let file = Some((bytes, "application/octet-stream"));
        answer(self.send_request(Method::POST, "/media", file, "application/json").await?).await
    }

    /// `POST /sandbox/messages`.
    pub async fn sandbox_say(&self, request: &SandboxSayRequest) -> Result<SandboxSayResponse, Error> {
        self.request(Method::POST, "/sandbox/messages", Some(request)).await
    }

    /// `POST /sandbox/link`.
    pub async fn sandbox_link(
        &self,
        request: &crate::api::SandboxLinkRequest,
    ) -> Result<crate::api::SandboxLinkResponse, Error> {
        self.request(Method::POST, "/sandbox/link", Some(request)).await
    }

    /// `POST /sandbox/acts`.
    pub async fn sandbox_act(&self, request: &crate::api::SandboxActRequest) -> Result<SandboxSayResponse, Error> {
        self.request(Method::POST, "/sandbox/acts", Some(request)).await
    }

    /// `GET /sandbox/outbox?...`.
    pub async fn sandbox_outbox(&self, query: &OutboxQuery) -> Result<Vec<OutboxEntry>, Error> {
        self.request(Method::GET, &with_query("/sandbox/outbox", query), None::<&()>).await
    }

    /// `POST /sandbox/phone`.
    pub async fn sandbox_phone(&self, request: &PhoneRequest) -> Result<PhoneResponse, Error> {
        self.request(Method::POST, "/sandbox/phone", Some(request)).await
    }

    /// `PUT /sandbox/lock`.
    pub async fn sandbox_lock(&self, request: &SandboxLockRequest) -> Result<SandboxLockState, Error> {
        self.request(Method::PUT, "/sandbox/lock", Some(request)).await
    }

    /// `DELETE /sandbox/lock`.
    pub async fn sandbox_unlock(&self) -> Result<SandboxLockState, Error> {
        self.request(Method::DELETE, "/sandbox/lock", None::<&()>).await
    }

    /// `POST /whatsapp/pair`: each pairing event to `each`, until the daemon
    /// ends the stream or `each` says stop.
    pub async fn pair(&self, request: &PairRequest, each: impl FnMut(PairingEvent) -> bool) -> Result<(), Error> {
        match self.lines(Method::POST, "/whatsapp/pair", Some(request), each).await? {
            StreamEnd::Cut(e) => Err(cut(e)),
            StreamEnd::Reader | StreamEnd::Daemon => Ok(()),
        }
    }

    // ---- HTTP ----

    /// This client with another timeout, for one call.
    fn with(&self, timeout: Duration) -> Client {
        Client {
            http: self.http.clone(),
            port: self.port,
            token: self.token.clone(),
            timeout,
            idempotency_key: self.idempotency_key.clone(),
        }
    }

    async fn lines<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
        mut each: impl FnMut(T) -> bool,
    ) -> Result<StreamEnd, Error> {
        let body = body.map(|body| (serde_json::to_vec(body).expect("requests serialise"), "application/json"));
        let mut response = self.send_request(method, path, body, "application/x-ndjson").await?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response.bytes().await.map_err(cut)?;
            return Err(error_of(status, &bytes));
        }
        let mut pending = Vec::new();
        loop {
            let data = match response.chunk().await {
                Ok(Some(data)) => data,
                Ok(None) => return Ok(StreamEnd::Daemon),
                Err(e) => return Ok(StreamEnd::Cut(e)),
            };
            pending.extend_from_slice(&data);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let item = serde_json::from_slice(&line).map_err(unexpected)?;
                if !each(item) {
                    return Ok(StreamEnd::Reader);
                }
            }
        }
    }

    async fn request<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, Error> {
        let body = body.map(|body| (serde_json::to_vec(body).expect("requests serialise"), "application/json"));
        answer(self.send_request(method, path, body, "application/json").await?).await
    }

    /// Sends one request; returns once the answer's head has arrived (the
    /// timeout bounds that, not a stream that follows).
    async fn send_request(
        &self,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
        accept: &str,
    ) -> Result<reqwest::Response, Error> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let mut request = self.http.request(method, url).header(header::ACCEPT, accept);
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(key) = &self.idempotency_key {
            request = request.header("idempotency-key", key.as_str());
        }
        if let Some((bytes, content_type)) = body {
            request = request.header(header::CONTENT_TYPE, content_type).body(bytes);
        }
        tokio::time::timeout(self.timeout, request.send())
            .await
            .map_err(|_| {
                failure(format!(
                    "the daemon did not answer within {}s; see relay.log in the relay home",
                    self.timeout.as_secs()
                ))
            })?
            .map_err(|e| self.unreachable(e))
    }

    /// Why a request got no answer: no daemon (connection refused), or the
    /// error itself.
    fn unreachable(&self, e: reqwest::Error) -> Error {
        if !e.is_connect() {
            return failure(format!("the daemon did not answer: {}", chain(&e)));
        }
        let mut source: Option<&dyn std::error::Error> = Some(&e);
        while let Some(error) = source {
            if let Some(io) = error.downcast_ref::<io::Error>()
                && io.kind() == io::ErrorKind::ConnectionRefused
            {
                return not_running();
            }
            source = error.source();
        }
        failure(format!("cannot reach the daemon on 127.0.0.1:{}: {}", self.port, chain(&e)))
    }
}

/// A JSON answer, or the API error it carries.
async fn answer<T: DeserializeOwned>(response: reqwest::Response) -> Result<T, Error> {
    let status = response.status();
    let body = response.bytes().await.map_err(cut)?;
    if status.is_success() {
        return serde_json::from_slice(&body).map_err(unexpected);
    }
    Err(error_of(status, &body))
}

/// `--port`/`RELAY_PORT` (`asked`), else the running daemon's, else the config's.
pub fn port(home: &Home, asked: Option<u16>, config: &Config) -> u16 {
    asked.or_else(|| daemon_files::read_port(home)).unwrap_or(config.daemon_port)
}

/// A config.json that cannot be used, as an error with its code and how to
/// repair it: the one way every command (and the daemon) says it.
pub fn config_error(error: ConfigError) -> Error {
    let code = match error {
        ConfigError::Missing(_) => ErrorCode::NotInitialised,
        ConfigError::Io { .. } => ErrorCode::Failure,
        ConfigError::Invalid { .. } | ConfigError::Setting { .. } => ErrorCode::InvalidConfig,
    };
    Error::new(code, error.with_fix())
}

/// No daemon answers.
pub fn not_running() -> Error {
    Error::new(ErrorCode::DaemonNotRunning, "the relay daemon is not running: run `relay start` first")
}

/// A page's next cursor (from its `Link` header) and how many follow it.
fn page_headers(response: &reqwest::Response) -> (Option<String>, usize) {
    let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let next = header(header::LINK.as_str()).and_then(|link| paging::next_cursor(&link));
    (next, header(paging::REMAINING_HEADER).and_then(|n| n.parse().ok()).unwrap_or(0))
}

/// `path?query`, the query percent-encoded from the API's own query type
/// (fields that are `None` left out); just `path` when nothing is set.
fn with_query(path: &str, query: &impl Serialize) -> String {
    let query = serde_urlencoded::to_string(query).expect("query types serialise");
    if query.is_empty() { path.to_string() } else { format!("{path}?{query}") }
}

/// Where the port the user gave came from, in their words.
fn port_source() -> &'static str {
    let flag = std::env::args_os().any(|a| a == "--port" || a.to_string_lossy().starts_with("--port="));
    if flag { "--port" } else { "RELAY_PORT" }
}

fn failure(message: String) -> Error {
    Error::new(ErrorCode::Failure, message)
}

fn cut(e: reqwest::Error) -> Error {
    failure(format!("the daemon's answer was cut: {}", chain(&e)))
}

/// An error and its causes, `: `-separated (reqwest's own says little).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn unexpected(e: serde_json::Error) -> Error {
    failure(format!("the daemon's answer is not what this relay expects: {e}"))
}

fn error_of(status: StatusCode, body: &[u8]) -> Error {
    serde_json::from_slice::<ApiErrorResponse>(body)
        .unwrap_or_else(|_| failure(format!("the daemon answered {status}: {}", String::from_utf8_lossy(body).trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        let query = WaitQuery { until: Some("terminal,PAUSED".into()), timeout_ms: Some(50_000) };
        assert_eq!(with_query("/w", &query), "/w?until=terminal%2CPAUSED&timeout_ms=50000");
        let query = ListQuery {
            state: Some("WAITING_FOR_REPLY".into()),
            contact: Some("+56 912".into()),
            ..ListQuery::default()
        };
        assert_eq!(with_query("/instances", &query), "/instances?state=WAITING_FOR_REPLY&contact=%2B56+912");
        assert_eq!(with_query("/instances", &ListQuery::default()), "/instances");
    }

    #[test]
    fn ids_that_cannot_be_ids_never_reach_a_url() {
        assert_eq!(InstanceId::parse(" 3f2a ").unwrap().path(), "/instances/3f2a");
        assert_eq!(InstanceId::parse("../status").unwrap_err().code, ErrorCode::InvalidArguments);
        assert_eq!(webhook_id("wh/1").unwrap_err().code, ErrorCode::InvalidArguments);
        assert_eq!(number("+56 9 1234-5678").unwrap(), "+56912345678");
        assert_eq!(number("../status").unwrap_err().code, ErrorCode::InvalidArguments);
    }
}
