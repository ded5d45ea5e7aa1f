//! The CLI's side of the local API: one HTTP/1.1 request per command over a
//! plain loopback TCP connection (hyper's client connection, no TLS and no
//! connection pool: nothing to set up, so commands start fast).

use std::io;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, header};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::TcpStream;

use super::{CliError, Context};
use crate::api::ApiErrorResponse;
use crate::home::daemon_files;

/// Longer than any request the daemon serves should take...
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// ...but a send answers once the message is out, which on WhatsApp can mean
/// pacing, waiting for a lost connection (`connect_wait_secs`) and retries.
pub const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Who ended a stream of lines.
#[derive(Debug)]
pub enum StreamEnd {
    /// The caller's `each` said stop.
    Reader,
    /// The daemon ended it (it does when it stops).
    Daemon,
    /// The connection broke mid-stream (a daemon killed, for one).
    Cut(hyper::Error),
}

pub struct Client {
    port: u16,
    token: Option<String>,
    timeout: std::time::Duration,
    idempotency_key: Option<String>,
}

impl Client {
    /// A client for the daemon of `ctx`'s home. Fails early, with the right
    /// advice, when relay is not initialised or its daemon is not running.
    ///
    /// A running daemon is found by its port and token files, without
    /// config.json (which may be mid-edit, or broken: that matters only to
    /// the next start).
    pub fn new(ctx: &Context) -> Result<Client, CliError> {
        let home = &ctx.home;
        let locked = daemon_files::is_locked(home);
        // While the lock is held the port file is the running daemon's (it
        // removes a killed one's first); without it, it is still starting, or
        // `relay init` is linking.
        if locked && let Some(running) = daemon_files::read_port(home) {
            if let Some(asked) = ctx.port
                && asked != running
            {
                return Err(CliError::usage(format!(
                    "relay is running on port {running}, not {asked} ({}): leave it out, or give {running}",
                    port_source()
                )));
            }
            let token = daemon_files::read_token(home);
            return Ok(Client { port: running, token, timeout: REQUEST_TIMEOUT, idempotency_key: None });
        }
        let config = ctx.config()?;
        let token = daemon_files::read_token(home);
        if token.is_none() && !locked {
            return Err(CliError::not_running());
        }
        Ok(Client { port: ctx.port(&config), token, timeout: REQUEST_TIMEOUT, idempotency_key: None })
    }

    /// The same client, waiting up to `timeout` for answers.
    pub fn with_timeout(self, timeout: std::time::Duration) -> Client {
        Client { timeout, ..self }
    }

    /// The same client, sending `Idempotency-Key: key` (if any).
    pub fn with_idempotency_key(self, key: Option<String>) -> Client {
        Client { idempotency_key: key, ..self }
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, CliError> {
        self.request(Method::GET, path, None::<&()>).await
    }

    pub async fn delete<T: DeserializeOwned>(&self, path: &str) -> Result<T, CliError> {
        self.request(Method::DELETE, path, None::<&()>).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: Option<&impl Serialize>) -> Result<T, CliError> {
        self.request(Method::POST, path, body).await
    }

    /// POSTs `body` and hands each line of the streamed answer (one JSON
    /// document a line) to `each`, until the daemon ends the stream or
    /// `each` says stop (returns false).
    pub async fn post_lines<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        each: impl FnMut(T) -> bool,
    ) -> Result<(), CliError> {
        match self.lines(Method::POST, path, Some(body), each).await? {
            StreamEnd::Cut(e) => Err(cut(e)),
            StreamEnd::Reader | StreamEnd::Daemon => Ok(()),
        }
    }

    /// `post_lines` for a GET (the answer asked for as NDJSON), saying who
    /// ended the stream: a caller following an endless stream must tell a
    /// daemon that went away from its own reader stopping.
    pub async fn get_lines<T: DeserializeOwned>(
        &self,
        path: &str,
        each: impl FnMut(T) -> bool,
    ) -> Result<StreamEnd, CliError> {
        self.lines(Method::GET, path, None::<&()>, each).await
    }

    async fn lines<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
        mut each: impl FnMut(T) -> bool,
    ) -> Result<StreamEnd, CliError> {
        let response = self.send(method, path, body, "application/x-ndjson").await?;
        let status = response.status();
        let mut body = response.into_body();
        if !status.is_success() {
            let bytes = body.collect().await.map_err(cut)?.to_bytes();
            return Err(error_of(status, &bytes));
        }
        let mut pending = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = match frame {
                Ok(frame) => frame,
                Err(e) => return Ok(StreamEnd::Cut(e)),
            };
            let Ok(data) = frame.into_data() else { continue };
            pending.extend_from_slice(&data);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let item = serde_json::from_slice(&line).map_err(unexpected)?;
                if !each(item) {
                    return Ok(StreamEnd::Reader);
                }
            }
        }
        Ok(StreamEnd::Daemon)
    }

    async fn request<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, CliError> {
        let response = self.send(method, path, body, "application/json").await?;
        let status = response.status();
        let body = response.into_body().collect().await.map_err(cut)?.to_bytes();
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(unexpected);
        }
        Err(error_of(status, &body))
    }

    /// Sends one request; returns once the answer's head has arrived.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
        accept: &str,
    ) -> Result<hyper::Response<hyper::body::Incoming>, CliError> {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).await.map_err(|e| match e.kind() {
            io::ErrorKind::ConnectionRefused => CliError::not_running(),
            _ => CliError::failure(format!("cannot reach the daemon on 127.0.0.1:{}: {e}", self.port)),
        })?;
        let _ = stream.set_nodelay(true);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| CliError::failure(format!("cannot talk to the daemon: {e}")))?;
        tokio::spawn(connection);

        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, format!("127.0.0.1:{}", self.port))
            .header(header::ACCEPT, accept);
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(key) = &self.idempotency_key {
            request = request.header("idempotency-key", key.as_str());
        }
        let bytes = match body {
            Some(body) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(body).expect("requests serialise"))
            }
            None => Bytes::new(),
        };
        let request = request.body(Full::new(bytes)).expect("valid request");
        let response = tokio::time::timeout(self.timeout, sender.send_request(request))
            .await
            .map_err(|_| {
                CliError::failure(format!(
                    "the daemon did not answer within {}s; see relay.log in the relay home",
                    self.timeout.as_secs()
                ))
            })?
            .map_err(|e| CliError::failure(format!("the daemon did not answer: {e}")))?;
        Ok(response)
    }
}

/// Where the port the user gave came from, in their words.
fn port_source() -> &'static str {
    let flag = std::env::args_os().any(|a| a == "--port" || a.to_string_lossy().starts_with("--port="));
    if flag { "--port" } else { "RELAY_PORT" }
}

fn cut(e: hyper::Error) -> CliError {
    CliError::failure(format!("the daemon's answer was cut: {e}"))
}

fn unexpected(e: serde_json::Error) -> CliError {
    CliError::failure(format!("the daemon's answer is not what this relay expects: {e}"))
}

fn error_of(status: hyper::StatusCode, body: &[u8]) -> CliError {
    match serde_json::from_slice::<ApiErrorResponse>(body) {
        Ok(error) => CliError::api(error),
        Err(_) => CliError::failure(format!("the daemon answered {status}: {}", String::from_utf8_lossy(body).trim())),
    }
}
