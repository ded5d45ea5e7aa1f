//! The live view's sign-in, as a browser meets it, over raw HTTP: `relay
//! ui` prints a one-time address; its code is exchanged once for an
//! HttpOnly, `SameSite=Strict` cookie; the cookie stands in for the token
//! only on the page's own requests (a change carries the daemon's own
//! Origin); any other Origin is refused, token or not.

use crate::support::*;

/// What `relay ui --json` printed: the sign-in address, as a target.
fn sign_in_target(relay: &Relay, args: &[&str]) -> String {
    let mut all = vec!["ui"];
    all.extend_from_slice(args);
    let answer = relay.json(&all);
    let url = answer["url"].as_str().unwrap();
    let prefix = format!("http://127.0.0.1:{}", relay.port);
    assert!(url.starts_with(&format!("{prefix}/ui/login?code=")), "{url}");
    url[prefix.len()..].to_string()
}

fn get(relay: &Relay, target: &str, extra: &[(&str, &str)]) -> (u16, Vec<(String, String)>, String) {
    let host = format!("127.0.0.1:{}", relay.port);
    let mut headers = vec![("Host", host.as_str())];
    headers.extend_from_slice(extra);
    raw_http_with_headers(relay.port, "GET", target, &headers, b"")
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// Signs in at `target`; the `Cookie` header the browser would then send.
fn signed_in(relay: &Relay, target: &str) -> String {
    let (status, headers, body) = get(relay, target, &[]);
    assert_eq!(status, 303, "{body}");
    let cookie = header(&headers, "set-cookie").expect("a session cookie");
    cookie.split(';').next().unwrap().to_string()
}

#[test]
fn a_code_works_once_for_a_cookie_that_stands_in_for_the_token() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    let target = sign_in_target(&relay, &[&id[..8]]);
    let (status, headers, _) = get(&relay, &target, &[]);
    assert_eq!(status, 303);
    assert_eq!(header(&headers, "location"), Some(format!("/ui/#c/{id}").as_str()), "opens on the conversation");
    let set = header(&headers, "set-cookie").unwrap();
    let attributes: Vec<&str> = set.split(';').map(str::trim).collect();
    assert!(attributes[0].starts_with(&format!("relay_session_{}=", relay.port)), "{set}");
    for wanted in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(attributes.contains(&wanted), "{set} lacks {wanted}");
    }
    assert!(!set.contains(&relay.token()), "the token never reaches the browser");
    let cookie = attributes[0].to_string();

    // Used once: the same address again says so, and gives nothing.
    let (status, headers, page) = get(&relay, &target, &[]);
    assert_eq!(status, 401);
    assert!(header(&headers, "set-cookie").is_none());
    assert!(page.contains("was used already") && page.contains("Run <code>relay ui</code>"), "{page}");
    let (status, _, page) = get(&relay, "/ui/login?code=0123456789abcdef0123456789abcdef", &[]);
    assert_eq!(status, 401);
    assert!(page.contains("is not one this daemon gave"), "{page}");
    let (status, _, page) = get(&relay, "/ui/login?code=%3Cscript%3E", &[]);
    assert_eq!(status, 401);
    assert!(!page.contains("<script>"), "{page}");
    assert_eq!(get(&relay, "/ui/login", &[]).0, 400);

    // The cookie reads the API, as the token does.
    let (status, _, body) = get(&relay, &format!("/instances/{id}"), &[("Cookie", &cookie)]);
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = get(&relay, "/instances", &[("Cookie", "relay_session_1=forged")]);
    assert_eq!(status, 401, "{body}");
    let other = format!("relay_session_{}=0123", relay.port);
    let (status, _, body) = get(&relay, "/status", &[("Cookie", &other)]);
    assert_eq!(status, 401);
    assert!(body.contains("run `relay ui` for a new sign-in address"), "{body}");
}

#[test]
fn the_cookie_changes_nothing_without_the_pages_own_origin() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    let cookie = signed_in(&relay, &sign_in_target(&relay, &[]));
    let own = format!("http://127.0.0.1:{}", relay.port);
    let host = format!("127.0.0.1:{}", relay.port);
    let pause = format!("/instances/{id}/pause");
    let post = |extra: &[(&str, &str)]| {
        let mut headers = vec![("Host", host.as_str()), ("Cookie", cookie.as_str())];
        headers.extend_from_slice(extra);
        raw_http(relay.port, "POST", &pause, &headers, b"")
    };
    let (status, body) = post(&[]);
    assert_eq!(status, 403, "a change with the cookie and no Origin: {body}");
    assert!(body.contains("must carry the page's Origin"), "{body}");
    for foreign in ["http://127.0.0.1:1", "http://localhost:1", "null", "http://evil.example"] {
        let (status, body) = post(&[("Origin", foreign)]);
        assert_eq!(status, 403, "{foreign}: {body}");
        assert!(body.contains("requests from other web pages are refused"), "{body}");
    }
    let (status, body) = post(&[("Origin", &own), ("Sec-Fetch-Site", "same-site")]);
    assert_eq!(status, 403, "the browser says another site sent it: {body}");
    assert_eq!(relay.state(&id), "NEEDS_HUMAN_INTERVENTION", "nothing was changed");
    let (status, body) = post(&[("Origin", &own), ("Sec-Fetch-Site", "same-origin")]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(relay.state(&id), "PAUSED");

    // The Origin rule holds with the token too: only the daemon's own.
    let (status, body) = relay.http("GET", "/status", &[("Origin", "http://127.0.0.1:1")], None);
    assert_eq!(status, 403, "{body}");
    let (status, body) = relay.http("GET", "/status", &[("Origin", &own)], None);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn the_page_is_served_with_a_strict_policy_and_media_inert() {
    let relay = Relay::started();
    for (path, kind) in [("/ui/", "text/html"), ("/ui/app.js", "text/javascript"), ("/ui/app.css", "text/css")] {
        let (status, headers, body) = get(&relay, path, &[]);
        assert_eq!(status, 200, "{path}: {body}");
        assert!(header(&headers, "content-type").unwrap().starts_with(kind), "{path}: {headers:?}");
        let policy = header(&headers, "content-security-policy").unwrap();
        for rule in ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"] {
            assert!(policy.contains(rule), "{path}: {policy}");
        }
        assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
        assert!(!body.contains(&relay.token()), "{path} carries no token");
    }
    let (status, headers, _) = get(&relay, "/ui", &[]);
    assert_eq!((status, header(&headers, "location")), (303, Some("/ui/")));

    // A sign-in at another loopback name goes to the daemon's own origin first, the code unused.
    let target = sign_in_target(&relay, &[]);
    let localhost = format!("localhost:{}", relay.port);
    let (status, headers, _) = raw_http_with_headers(relay.port, "GET", &target, &[("Host", &localhost)], b"");
    assert_eq!(status, 303);
    assert_eq!(header(&headers, "location"), Some(format!("http://127.0.0.1:{}{target}", relay.port).as_str()));
    assert!(header(&headers, "set-cookie").is_none());
    signed_in(&relay, &target);

    // A contact's file: its sniffed type, nosniff, an attachment named by relay.
    let id = relay.create(&[]);
    let page = relay.path().join("<b onclick=x>bill.html");
    std::fs::write(&page, "<html><script>alert(1)</script></html>").unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "--document", page.to_str().unwrap()]);
    let message = relay
        .wait_for(&id, "the file kept", |_| relay.transcript(&id).iter().any(|m| m["media"]["status"] == "stored"));
    let _ = message;
    let file = relay.transcript(&id).into_iter().find(|m| m["media"].is_object()).unwrap();
    let path = format!("/instances/{id}/messages/{}/media", file["id"].as_str().unwrap());
    let (status, headers, _) = relay.http_with_headers("GET", &path);
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("text/plain"), "sniffed, not the name's .html");
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&headers, "content-security-policy"), Some("default-src 'none'; sandbox"));
    let disposition = header(&headers, "content-disposition").unwrap();
    assert!(disposition.starts_with("attachment; filename=\"") && !disposition.contains('<'), "{disposition}");
}

/// `relay ui` as a new user tries it: before the daemon runs, for a
/// conversation that is not there, with an id that cannot be one; and
/// what it prints for a person.
#[test]
fn relay_ui_says_what_is_wrong() {
    let relay = Relay::sandbox();
    let stopped = relay.fails(&["ui"], 3);
    assert!(stopped.contains("relay start"), "{stopped}");
    relay.ok(&["start"]);
    let unknown = relay.fails(&["ui", "0000dead"], 4);
    assert!(unknown.contains("0000dead"), "{unknown}");
    let wrong = relay.fails(&["ui", "not an id"], 2);
    assert!(wrong.contains("is not a conversation id"), "{wrong}");
    let shown = relay.ok(&["ui"]);
    assert!(shown.contains(&format!("http://127.0.0.1:{}/ui/login?code=", relay.port)), "{shown}");
    assert!(shown.contains("works once"), "{shown}");
    assert!(!shown.contains("Opened"), "no browser is opened from a pipe: {shown}");
}
