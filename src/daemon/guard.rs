//! Local-API safety, applied to every request before any route runs:
//!
//! - the Host must be a loopback name (defeats DNS rebinding): one Host
//!   header, with a port that is one if any, and no absolute-form target
//!   naming another authority (a proxy-style request) — else 400; over
//!   HTTP/2 the target's `:authority` is the Host;
//! - an `Origin` header only when it is exactly the daemon's own origin,
//!   `http://127.0.0.1:<port>` (the live view's page): no other web page
//!   may drive relay;
//! - `Authorization: Bearer <token>` on everything but `/health` and the
//!   live view's page (`/ui/...`: static files and the sign-in, no data);
//!   or, instead of the token, the live view's session cookie
//!   (`sessions`), on a request the browser says is the page's own
//!   (`Sec-Fetch-Site`, when sent), and, for a change (any method but GET
//!   and HEAD), carrying the daemon's own `Origin`;
//! - bodies must be `application/json` and at most 64 KiB.
//!
//! Every answer says `X-Content-Type-Options: nosniff`.

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::ErrorCode;

use super::error::ApiError;
use super::routes::App;

pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    let mut response = match check(&app, &request) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    };
    response.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, header::HeaderValue::from_static("nosniff"));
    response
}

/// The daemon's own origin: where `relay ui` sends the browser.
pub fn own_origin(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// Paths served without the token: liveness, and the live view's page
/// (static files and the sign-in exchange; all data comes from the API).
fn is_public(path: &str) -> bool {
    path == "/health" || path == "/ui" || path.starts_with("/ui/")
}

fn forbidden(message: String) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
}

/// An `Origin` header is let in only when it is the daemon's own.
fn check_origin(app: &App, headers: &header::HeaderMap) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let own = own_origin(app.port);
    if origin.as_bytes() == own.as_bytes() {
        return Ok(());
    }
    let shown = String::from_utf8_lossy(origin.as_bytes()).chars().take(100).collect::<String>();
    Err(forbidden(format!(
        "requests from other web pages are refused: only the daemon's own page ({own}) may send an Origin \
         header, and this one is '{shown}'"
    )))
}

/// The token, or the live view's session cookie on a request of its own page.
fn authenticate(app: &App, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    let presented = headers.get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).and_then(bearer_token);
    if constant_time_eq(presented.unwrap_or("").as_bytes(), app.token.as_bytes()) {
        return Ok(());
    }
    let name = super::sessions::cookie_name(app.port);
    let session = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .find_map(|h| super::sessions::cookie(h, &name));
    if presented.is_none() && session.is_some_and(|s| app.sessions.is_valid(s)) {
        let site = headers.get("sec-fetch-site").map(|v| v.as_bytes());
        if matches!(site, Some(b"cross-site" | b"same-site")) {
            return Err(forbidden(
                "requests from other web pages are refused (the browser says this one comes from another site)".into(),
            ));
        }
        let reads = matches!(*request.method(), Method::GET | Method::HEAD);
        if !reads && !headers.contains_key(header::ORIGIN) {
            return Err(forbidden(format!(
                "a change made with the live view's session must carry the page's Origin ({})",
                own_origin(app.port)
            )));
        }
        return Ok(());
    }
    let why = if session.is_some() {
        "the live view's session has ended (the daemon restarted, or it is over 12 hours old): run `relay ui` for a \
         new sign-in address; or send"
    } else {
        "missing or wrong API token: send"
    };
    Err(ApiError::new(
        StatusCode::UNAUTHORIZED,
        ErrorCode::Unauthorized,
        format!("{why} 'Authorization: Bearer <token>' with the token from <RELAY_HOME>/api-token"),
    ))
}

fn check(app: &App, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    let bad_request = |message: String| ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message);
    if headers.get_all(header::HOST).iter().count() > 1 {
        return Err(bad_request("a request has one Host header, not several".into()));
    }
    // HTTP/2 carries the Host as the target's `:authority`: checked alike.
    let authority = request.uri().authority().map(|a| a.as_str());
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).or(authority).unwrap_or("");
    if !has_valid_port(host) {
        return Err(bad_request(format!("the Host header's port is not a port number (Host was '{host}')")));
    }
    // `GET http://elsewhere/status`: the target names where it is for,
    // and a loopback Host beside it does not make it ours.
    if request.version() < Version::HTTP_2
        && let Some(authority) = request.uri().authority()
        && !is_loopback_host(authority.as_str())
    {
        return Err(bad_request(format!(
            "requests must be addressed to 127.0.0.1, [::1] or localhost (the target named '{authority}')"
        )));
    }
    if !is_loopback_host(host) {
        return Err(forbidden(format!(
            "requests must be addressed to 127.0.0.1, [::1] or localhost (Host was '{host}')"
        )));
    }
    check_origin(app, headers)?;
    if !is_public(request.uri().path()) {
        authenticate(app, request)?;
    }
    let length = headers.get(header::CONTENT_LENGTH).and_then(|h| h.to_str().ok()).and_then(|h| h.parse::<u64>().ok());
    // A file (`POST /media`) is the one body that is not JSON, and may be as
    // large as relay keeps files (`media.max_bytes`); its handler reads no more.
    if request.uri().path() == UPLOAD_PATH {
        let max = app.engine.media_max_bytes();
        if length.is_some_and(|n| n > max) {
            return Err(file_too_large(max));
        }
        if request.method() == Method::POST && !is_octet_stream(headers.get(header::CONTENT_TYPE)) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType,
                "a file is sent as its bytes (Content-Type: application/octet-stream)".to_string(),
            ));
        }
        return Ok(());
    }
    if length.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let has_body = length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING);
    if request.method() == Method::POST && has_body && !is_json(headers.get(header::CONTENT_TYPE)) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnsupportedMediaType,
            "request bodies must be JSON (Content-Type: application/json)".to_string(),
        ));
    }
    Ok(())
}

pub fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::PayloadTooLarge,
        format!("request bodies are limited to {} KiB", MAX_BODY_BYTES / 1024),
    )
}

fn is_json(content_type: Option<&header::HeaderValue>) -> bool {
    is_type(content_type, "application/json")
}

fn is_octet_stream(content_type: Option<&header::HeaderValue>) -> bool {
    is_type(content_type, "application/octet-stream")
}

fn is_type(content_type: Option<&header::HeaderValue>, wanted: &str) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(wanted))
}

/// The route that takes a file's bytes.
pub const UPLOAD_PATH: &str = "/media";

/// A file over `media.max_bytes`.
pub fn file_too_large(max: u64) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::PayloadTooLarge,
        format!("files are limited to {} (media.max_bytes)", crate::media::label::size(max)),
    )
}

/// The token of `Authorization: Bearer <token>`; the scheme's name is
/// case-insensitive (RFC 9110), so `bearer` is taken too.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim_start())
}

/// A Host without a port, or with one that is a port: 1 to 65535, digits only.
fn has_valid_port(host: &str) -> bool {
    let port = match host.strip_prefix('[') {
        // `[::1]` or `[::1]:3214`
        Some(rest) => match rest.split_once(']') {
            Some((_, "")) => return true,
            Some((_, after)) => match after.strip_prefix(':') {
                Some(port) => port,
                None => return false,
            },
            None => return false,
        },
        None => match host.rsplit_once(':') {
            Some((_, port)) => port,
            None => return true,
        },
    };
    (1..=5).contains(&port.len())
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p > 0)
}

/// `127.0.0.1`, `localhost` or `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    matches!(name.to_ascii_lowercase().as_str(), "127.0.0.1" | "localhost" | "::1")
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_only() {
        for ok in ["127.0.0.1", "127.0.0.1:3214", "localhost:3214", "LOCALHOST", "[::1]:3214", "[::1]"] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in ["", "evil.com", "evil.com:3214", "127.0.0.1.evil.com", "10.0.0.1:3214", "localhost.evil:80"] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn ports_are_ports() {
        for ok in ["127.0.0.1", "127.0.0.1:3214", "localhost:1", "[::1]", "[::1]:65535", "evil.com:80"] {
            assert!(has_valid_port(ok), "{ok}");
        }
        for bad in ["127.0.0.1:", "localhost:abc", "localhost:99999", "localhost:0", "[::1]:", "[::1]x", "a:+80"] {
            assert!(!has_valid_port(bad), "{bad}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for (value, token) in [("Bearer abc", Some("abc")), ("bearer abc", Some("abc")), ("BEARER  abc", Some("abc"))] {
            assert_eq!(bearer_token(value), token, "{value}");
        }
        for value in ["Basic abc", "Bearerabc", "abc"] {
            assert_eq!(bearer_token(value), None, "{value}");
        }
    }

    #[test]
    fn json_content_types() {
        let v = |s: &'static str| Some(header::HeaderValue::from_static(s));
        assert!(is_json(v("application/json").as_ref()));
        assert!(is_json(v("application/json; charset=utf-8").as_ref()));
        assert!(!is_json(v("text/plain").as_ref()));
        assert!(!is_json(None));
    }
}
