//! The local API's guard and contract: token, Host, Origin, content type,
//! body size, malformed input, and the OpenAPI document.

use crate::support::*;
use serde_json::Value;

fn code(body: &str) -> String {
    let error: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not an ApiErrorResponse ({e}): {body}"));
    assert!(error["error"].is_string(), "{body}");
    error["code"].as_str().unwrap().to_string()
}

#[test]
fn the_guard_refuses_what_a_web_page_or_stranger_would_send() {
    let relay = Relay::started();
    let host = format!("127.0.0.1:{}", relay.port);
    let token = format!("Bearer {}", relay.token());

    // No token, or a wrong one: 401.
    let (status, body) = raw_http(relay.port, "GET", "/instances", &[("Host", &host)], b"");
    assert_eq!((status, code(&body).as_str()), (401, "unauthorized"));
    let (status, _) =
        raw_http(relay.port, "GET", "/instances", &[("Host", &host), ("Authorization", "Bearer nope")], b"");
    assert_eq!(status, 401);
    let (status, _) = raw_http(relay.port, "GET", "/instances", &[("Host", &host), ("Authorization", &token)], b"");
    assert_eq!(status, 200);

    // A foreign Host (DNS rebinding): 403, even with the token, even on /health.
    for path in ["/instances", "/health"] {
        let (status, body) =
            raw_http(relay.port, "GET", path, &[("Host", "evil.example:80"), ("Authorization", &token)], b"");
        assert_eq!((status, code(&body).as_str()), (403, "forbidden"), "{path}");
    }
    for ok_host in [format!("localhost:{}", relay.port), format!("[::1]:{}", relay.port)] {
        let (status, _) =
            raw_http(relay.port, "GET", "/instances", &[("Host", &ok_host), ("Authorization", &token)], b"");
        assert_eq!(status, 200, "{ok_host}");
    }

    // The scheme's name is case-insensitive.
    let lower = format!("bearer {}", relay.token());
    let (status, _) = raw_http(relay.port, "GET", "/instances", &[("Host", &host), ("Authorization", &lower)], b"");
    assert_eq!(status, 200);
    // Two Hosts, a port that is none, a target naming another authority: 400.
    let auth = ("Authorization", token.as_str());
    for (path, headers) in [
        ("/instances", vec![("Host", host.as_str()), ("Host", "evil.example"), auth]),
        ("/instances", vec![("Host", "localhost:http"), auth]),
        ("/instances", vec![("Host", "127.0.0.1:99999"), auth]),
        ("http://evil.example/instances", vec![("Host", host.as_str()), auth]),
    ] {
        let (status, body) = raw_http(relay.port, "GET", path, &headers, b"");
        assert_eq!((status, code(&body).as_str()), (400, "invalid_request"), "{path} {headers:?}: {body}");
    }
    let absolute = format!("http://{host}/instances");
    assert_eq!(raw_http(relay.port, "GET", &absolute, &[("Host", &host), auth], b"").0, 200, "ours, absolute");

    // Any Origin but the daemon's own: 403.
    let (status, body) = relay.http("GET", "/instances", &[("Origin", "http://127.0.0.1:3000")], None);
    assert_eq!((status, code(&body).as_str()), (403, "forbidden"));
    let own = format!("http://127.0.0.1:{}", relay.port);
    assert_eq!(relay.http("GET", "/instances", &[("Origin", &own)], None).0, 200, "the daemon's own page");

    // Bodies must be JSON: 415.
    let create = r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}]}"#;
    let (status, body) = relay.http("POST", "/instances", &[("Content-Type", "text/plain")], Some(create));
    assert_eq!((status, code(&body).as_str()), (415, "unsupported_media_type"));
    let (status, body) =
        raw_http(relay.port, "POST", "/instances", &[("Host", &host), ("Authorization", &token)], create.as_bytes());
    assert_eq!((status, code(&body).as_str()), (415, "unsupported_media_type"));

    // Over 64 KiB: 413.
    let big = format!(
        r#"{{"objective":"{}","target_contact":"+56912345678","todos":[{{"text":"t"}}]}}"#,
        "x".repeat(70 * 1024)
    );
    let (status, body) = relay.http("POST", "/instances", &[], Some(&big));
    assert_eq!((status, code(&body).as_str()), (413, "payload_too_large"));

    // Nothing of the above created anything.
    assert_eq!(relay.json(&["list"]), Value::Array(vec![]));
    let (status, _) = relay.http("POST", "/instances", &[], Some(create));
    assert_eq!(status, 201);
}

#[test]
fn malformed_requests_get_400_and_unknown_routes_404_as_json() {
    let relay = Relay::started();
    for bad in [
        "{not json",
        "[]",
        r#"{"objective":"o"}"#,
        r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}],"extra":1}"#,
        r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}],"heartbeat_config":{"interval_ms":-5}}"#,
        r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}],"heartbeat_config":{"interval_ms":1e30}}"#,
        r#"{"objective":"o","target_contact":"+56912345678","todos":[]}"#,
    ] {
        let (status, body) = relay.http("POST", "/instances", &[], Some(bad));
        assert_eq!((status, code(&body).as_str()), (400, "invalid_request"), "{bad}: {body}");
    }
    let (status, body) = relay.http("GET", "/instances?state=NOPE", &[], None);
    assert_eq!((status, code(&body).as_str()), (400, "invalid_request"));
    let (status, body) = relay.http("GET", "/nowhere", &[], None);
    assert_eq!((status, code(&body).as_str()), (404, "not_found"));
    let (status, body) = relay.http("DELETE", "/instances", &[], None);
    assert_eq!((status, code(&body).as_str()), (405, "method_not_allowed"));
    assert_eq!(relay.json(&["list"]), Value::Array(vec![]));
}

/// JSON Schema's `integer` is any whole number, `3.0` included: every
/// integer field of every body takes one written with a fraction of zero,
/// and refuses one with a fraction.
#[test]
fn a_whole_number_written_with_a_fraction_is_an_integer() {
    use proptest::test_runner::{Config, TestRunner};
    let relay = Relay::started();
    let mut runner = TestRunner::new(Config { cases: 12, failure_persistence: None, ..Config::default() });
    runner
        .run(&(1u32..20, 60_000u64..600_000, 0u32..5), |(turns, interval, followups)| {
            let body = format!(
                r#"{{"objective":"o","target_contact":"+56912345678","todos":[{{"text":"t","answer_schema":{{"type":"string","maxLength":{turns}.0}}}}],
                   "budget":{{"max_turns":{turns}.0}},"heartbeat_config":{{"interval_ms":{interval}.0,"max_followups":{followups}.0}}}}"#
            );
            let (status, answer) = relay.http("POST", "/instances", &[], Some(&body));
            assert_eq!(status, 201, "{body}: {answer}");
            let fractional = body.replace(&format!("\"max_turns\":{turns}.0"), &format!("\"max_turns\":{turns}.5"));
            let (status, answer) = relay.http("POST", "/instances", &[], Some(&fractional));
            assert_eq!(status, 400, "{fractional}: {answer}");
            assert!(answer.contains("budget.max_turns"), "the refusal says where: {answer}");
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_api_follows_the_design_contract() {
    let relay = Relay::started();
    let body = r#"{"objective":"Confirm","target_contact":"+56 9 1234 5678","todos":[{"text":"a"},{"text":"b"}],"heartbeat_config":{"interval_ms":60000}}"#;
    let (status, created) = relay.http("POST", "/instances", &[], Some(body));
    assert_eq!(status, 201);
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["state"], "CREATED");
    let id = created["id"].as_str().unwrap();
    let instance = relay.wait_for_state(id, "NEEDS_HUMAN_INTERVENTION");
    for field in [
        "id",
        "objective",
        "target_contact",
        "todos",
        "state",
        "previous_state",
        "heartbeat_config",
        "follow_up_count",
        "failure_reason",
        "created_at",
        "updated_at",
        "history",
    ] {
        assert!(instance.get(field).is_some(), "missing {field}");
    }
    assert_eq!(instance["target_contact"], "+56912345678");
    assert_eq!(instance["heartbeat_config"], serde_json::json!({"interval_ms": 60000, "max_followups": 5}));

    let (status, sent) = relay.http("POST", &format!("/instances/{id}/send"), &[], Some(r#"{"message":"hello"}"#));
    assert_eq!(status, 200);
    let sent: Value = serde_json::from_str(&sent).unwrap();
    assert_eq!((sent["role"].as_str(), sent["content"].as_str()), (Some("manual"), Some("hello")));
    let (status, transcript) = relay.http("GET", &format!("/instances/{id}/transcript"), &[], None);
    assert_eq!(status, 200);
    // The same message; the sandbox's phone may have delivered it since.
    let recorded = serde_json::from_str::<Value>(&transcript).unwrap()[0].clone();
    for field in ["id", "instance_id", "role", "content", "timestamp", "channel_message_id"] {
        assert_eq!(recorded[field], sent[field], "{field}");
    }
    assert!(["sent", "delivered"].contains(&recorded["send_status"].as_str().unwrap()), "{recorded}");
}

#[test]
fn the_openapi_document_describes_every_route() {
    let relay = Relay::started();
    let (status, body) = relay.http("GET", "/openapi.json", &[], None);
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/health", "get"),
        ("/status", "get"),
        ("/shutdown", "post"),
        ("/instances", "post"),
        ("/instances", "get"),
        ("/instances/{id}", "get"),
        ("/instances/{id}/transcript", "get"),
        ("/instances/{id}/cancel", "post"),
        ("/instances/{id}/pause", "post"),
        ("/instances/{id}/resume", "post"),
        ("/instances/{id}/send", "post"),
        ("/opt-outs", "get"),
        ("/opt-outs", "post"),
        ("/opt-outs/{contact}", "delete"),
        ("/sandbox/messages", "post"),
        ("/sandbox/outbox", "get"),
    ] {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} is not documented");
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for schema in [
        "ConversationInstance",
        "TranscriptMessage",
        "ApiErrorResponse",
        "DaemonStatusResponse",
        "State",
        "OptOut",
        "OptOutRequest",
        "OptOutAdded",
    ] {
        assert!(schemas.contains_key(schema), "schema {schema} missing");
    }
    // The document itself needs the token like every route but /health.
    let host = format!("127.0.0.1:{}", relay.port);
    assert_eq!(raw_http(relay.port, "GET", "/openapi.json", &[("Host", &host)], b"").0, 401);
}

/// A contact is + and digits with separators: a letter, an extension, `*` or
/// `#` is refused everywhere a contact is typed, naming the character, and
/// nothing is created or delivered. (The class is tested in src/contact.rs;
/// this checks every front door uses that one rule.)
#[test]
fn a_contact_with_letters_is_refused_at_every_door() {
    let relay = Relay::started();
    for contact in ["+56 9 TAXI 2222", "+5691abc2222", "+56912345678 ext 5", "+56912345678#"] {
        let error = relay.fails(&["create", "--objective", "o", "--contact", contact, "--todo", "t"], 2);
        assert!(error.contains("cannot be part of one"), "create {contact}: {error}");
        let error = relay.fails(&["sandbox", "say", contact, "hello"], 2);
        assert!(error.contains("cannot be part of one"), "sandbox say {contact}: {error}");
        let error = relay.fails(&["sandbox", "outbox", "--contact", contact], 2);
        assert!(error.contains("cannot be part of one"), "sandbox outbox {contact}: {error}");
        let error = relay.fails(&["list", "--contact", contact], 2);
        assert!(error.contains("cannot be part of one"), "list {contact}: {error}");
        let body = serde_json::json!({"objective": "o", "target_contact": contact, "todos": [{"text": "t"}]});
        let (status, answer) = relay.http("POST", "/instances", &[], Some(&body.to_string()));
        assert_eq!(status, 400, "{answer}");
        assert!(answer.contains("cannot be part of one"), "{answer}");
    }
    relay.ok(&["template", "add", "call", "--objective", "Call {{who}}", "--todo", "t"]);
    let error = relay.fails(&["create", "--template", "call", "--var", "who=Ana", "--contact", "+56 9 TAXI 2222"], 2);
    assert!(error.contains("the letter 'T'"), "{error}");
    assert_eq!(relay.json(&["list"]), serde_json::json!([]), "nothing was created");
}
