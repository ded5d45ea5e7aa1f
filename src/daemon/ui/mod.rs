//! The browser live view's page, served by the daemon on its own port:
//! plain HTML, CSS and JavaScript embedded in the binary (no CDN, no build
//! step; it works offline), and the sign-in exchange that gives a browser
//! its session cookie. The page is one more client of the API: all it
//! shows and does goes through the documented routes, with the cookie in
//! place of the token (`guard`).
//!
//! These routes are outside the OpenAPI document on purpose: they answer
//! a browser with a page, a file or a redirect, not the API's JSON
//! (docs/ui.md).

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::guard::own_origin;
use super::routes::App;
use super::sessions::{Refusal, cookie_name};

/// What the page may load and do: its own files and the API, nothing
/// inline, nothing from elsewhere, never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' blob:; media-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

const INDEX: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("app.js");
const STYLE: &str = include_str!("app.css");
const ICON: &str = include_str!("icon.svg");

pub fn router() -> Router<App> {
    Router::new()
        .route("/ui", get(|| async { redirect("/ui/") }))
        .route("/ui/", get(|| async { page(StatusCode::OK, "text/html; charset=utf-8", INDEX) }))
        .route("/ui/app.js", get(|| async { page(StatusCode::OK, "text/javascript; charset=utf-8", SCRIPT) }))
        .route("/ui/app.css", get(|| async { page(StatusCode::OK, "text/css; charset=utf-8", STYLE) }))
        .route("/ui/icon.svg", get(|| async { page(StatusCode::OK, "image/svg+xml", ICON) }))
        .route("/ui/login", get(login))
}

/// A file of the page, with the headers that keep it to itself.
fn page(status: StatusCode, content_type: &'static str, body: &'static str) -> Response {
    let mut response = (status, body).into_response();
    secure(response.headers_mut(), content_type);
    response
}

fn secure(headers: &mut HeaderMap, content_type: &'static str) {
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    secure(response.headers_mut(), "text/plain; charset=utf-8");
    response.headers_mut().insert(header::LOCATION, HeaderValue::from_str(to).expect("a path is a header value"));
    response
}

/// `GET /ui/login?code=...`: the one-time code `relay ui` printed, for a
/// session cookie; then the page, without the code in its address. At
/// another loopback name than the daemon's own origin, the browser is
/// sent there first (the code still unused), so the cookie and the
/// page's Origin are the daemon's own.
async fn login(State(app): State<App>, headers: HeaderMap, Query(query): Query<HashMap<String, String>>) -> Response {
    let Some(code) = query.get("code").map(|c| c.trim()).filter(|c| !c.is_empty()) else {
        return sign_in_page(StatusCode::BAD_REQUEST, "This address has no sign-in code.");
    };
    if !code.bytes().all(|b| b.is_ascii_hexdigit()) || code.len() > 64 {
        return sign_in_page(StatusCode::UNAUTHORIZED, &Refusal::Unknown.words());
    }
    let own = own_origin(app.port);
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if format!("http://{host}") != own {
        return redirect(&format!("{own}/ui/login?code={code}"));
    }
    match app.sessions.exchange(code) {
        Err(refusal) => sign_in_page(StatusCode::UNAUTHORIZED, &refusal.words()),
        Ok((session, conversation)) => {
            let to = match conversation {
                Some(id) => format!("/ui/#c/{id}"),
                None => "/ui/".to_string(),
            };
            let mut response = redirect(&to);
            let cookie = format!("{}={session}; Path=/; HttpOnly; SameSite=Strict", cookie_name(app.port));
            response.headers_mut().insert(header::SET_COOKIE, HeaderValue::from_str(&cookie).expect("hex"));
            response
        }
    }
}

/// A page that says why signing in did not work, and what to do.
fn sign_in_page(status: StatusCode, why: &str) -> Response {
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>relay: sign in</title>\
         <link rel=\"stylesheet\" href=\"/ui/app.css\"></head><body><main class=\"signin\">\
         <h1>relay</h1><p id=\"why\">{}</p><p>Run <code>relay ui</code> in a terminal on this machine for a new \
         address, and open it here.</p></main></body></html>\n",
        escape(why)
    );
    let mut response = (status, body).into_response();
    secure(response.headers_mut(), "text/html; charset=utf-8");
    response
}

/// Text as HTML text: nothing in it is markup.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn text_is_escaped() {
        assert_eq!(super::escape("<img src=x onerror='a'>&"), "&lt;img src=x onerror=&#39;a&#39;&gt;&amp;");
    }

    /// The page's script builds the page with DOM calls and `textContent`:
    /// nothing it shows is parsed as markup.
    #[test]
    fn the_script_never_parses_markup() {
        for banned in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            assert!(!super::SCRIPT.contains(banned), "app.js uses {banned}");
        }
    }
}
