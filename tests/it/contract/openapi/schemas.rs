//! The document's schemas against the daemon: every closed request object
//! refuses an unknown field at any depth, and the limits, the contacts'
//! pattern and the media of a message are the daemon's.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed, TestCaseError, TestRunner};
use serde_json::{Value, json};

use crate::support::*;

use super::document::*;

/// Each route that takes a body, with one it accepts, and the status that
/// body gets: the control that shows a 400 below is the unknown field's.
fn valid_bodies() -> Vec<(&'static str, &'static str, Value, &'static [u16])> {
    vec![
        (
            "POST",
            "/instances",
            json!({"objective": "o", "target_contact": "+56912345678", "todos": [{"text": "a"}, {"text": "b"}],
                   "heartbeat_config": {"interval_ms": 60000}, "budget": {"max_turns": 3}}),
            &[201],
        ),
        ("POST", "/instances/{id}/send", json!({"message": "hi"}), &[404]),
        ("POST", "/instances/{id}/answer", json!({"answer": "yes"}), &[404]),
        ("POST", "/webhooks", json!({"url": "http://127.0.0.1:9/hook", "events": ["transition"]}), &[200, 201]),
        ("POST", "/opt-outs", json!({"contact": "+56900000002", "reason": "asked"}), &[200, 201]),
        ("POST", "/sandbox/messages", json!({"contact": "+56900000003", "text": "hello"}), &[200]),
        ("POST", "/sandbox/phone", json!({"contact": "+56900000003", "action": "online"}), &[200]),
        ("POST", "/sandbox/acts", json!({"contact": "+56900000003", "act": "call"}), &[200]),
        ("POST", "/sandbox/link", json!({"online": true, "cut_short": false}), &[200]),
        ("PUT", "/sandbox/lock", json!({"lasts": "1m", "unreported": false}), &[200]),
        ("POST", "/whatsapp/pair", json!({"force": false}), &[409]),
        ("POST", "/login-codes", json!({"conversation": "0000dead"}), &[404]),
    ]
}

/// Pointers to every object in `value` (the root is "").
fn objects(value: &Value, at: String, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            found.push(at.clone());
            for (key, v) in map {
                objects(v, format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (n, v) in items.iter().enumerate() {
                objects(v, format!("{at}/{n}"), found);
            }
        }
        _ => {}
    }
}

/// Every object schema a request body can contain, by where it was reached:
/// those that say `type: object` (a condition's branch, which constrains
/// properties of the object it is in, is none of its own).
fn request_object_schemas<'a>(doc: &'a Value, schema: &'a Value, at: String, found: &mut Vec<(String, &'a Value)>) {
    if let Some(reference) = schema["$ref"].as_str() {
        if found.iter().any(|(seen, _)| seen == reference) {
            return;
        }
        let target = resolve(doc, reference);
        found.push((reference.to_string(), target));
        return request_object_schemas(doc, target, format!("{at} -> {reference}"), found);
    }
    let is_object =
        schema["type"] == "object" || schema["type"].as_array().is_some_and(|t| t.contains(&json!("object")));
    if is_object {
        found.push((at.clone(), schema));
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        for (n, branch) in schema[key].as_array().into_iter().flatten().enumerate() {
            request_object_schemas(doc, branch, format!("{at}/{key}/{n}"), found);
        }
    }
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        request_object_schemas(doc, property, format!("{at}.{name}"), found);
    }
    if schema["items"].is_object() {
        request_object_schemas(doc, &schema["items"], format!("{at}[]"), found);
    }
}

/// Every request object is closed in the document, and the daemon agrees:
/// a body with one unknown field, at any depth of any route's request
/// (the root, `todos[]`, `heartbeat_config`, `budget`, ...), is refused with
/// 400 naming the field, and creates nothing. Each object of each sample is
/// tried once with a fixed name, then proptest tries generated names and
/// values at generated places.
#[test]
fn an_unknown_field_at_any_depth_is_refused() {
    let relay = Relay::started();
    let doc = document(&relay);

    // The document: additionalProperties false on every object a body holds.
    let mut with_body = BTreeSet::new();
    for (method, path, operation) in operations(&doc) {
        let Some(schema) = operation["requestBody"]["content"]["application/json"].get("schema") else { continue };
        with_body.insert((method.clone(), path.clone()));
        let mut found = Vec::new();
        request_object_schemas(&doc, schema, format!("{method} {path}"), &mut found);
        for (at, object) in found.into_iter().filter(|(_, s)| s.get("properties").is_some()) {
            assert_eq!(object["additionalProperties"], false, "{at} is open: add #[serde(deny_unknown_fields)]");
        }
    }
    // Every route with a body has a sample here.
    let samples = valid_bodies();
    let sampled: BTreeSet<(String, String)> =
        samples.iter().map(|(m, p, _, _)| (m.to_string(), p.to_string())).collect();
    assert_eq!(sampled, with_body, "a route that takes a body needs a sample in valid_bodies()");

    let send =
        |method: &str, path: &str, body: &Value| relay.http(method, &concrete(path), &[], Some(&body.to_string()));
    let refused = |method: &str, path: &str, body: &Value, name: &str| -> Result<(), String> {
        let (status, answer) = send(method, path, body);
        if status == 400 && answer.contains("invalid_request") && answer.contains(name) {
            Ok(())
        } else {
            Err(format!("{method} {path} {body} answered {status} {answer}"))
        }
    };
    // The controls: each sample as it is is not refused.
    for (method, path, body, statuses) in &samples {
        let (status, answer) = send(method, path, body);
        assert!(statuses.contains(&status), "{method} {path} {body}: {status} {answer}");
    }
    let before = relay.json(&["list"]);

    // Every object of every sample, once.
    let mut places = Vec::new();
    for (n, (_, _, body, _)) in samples.iter().enumerate() {
        let mut found = Vec::new();
        objects(body, String::new(), &mut found);
        places.extend(found.into_iter().map(|at| (n, at)));
    }
    assert!(places.iter().any(|(_, at)| at == "/todos/1"), "{places:?}");
    let with_unknown = |n: usize, at: &str, name: &str, value: Value| {
        let mut body = samples[n].2.clone();
        let object = body.pointer_mut(at).and_then(Value::as_object_mut).expect("an object");
        object.insert(name.to_string(), value);
        body
    };
    for (n, at) in &places {
        let (method, path, _, _) = samples[*n];
        refused(method, path, &with_unknown(*n, at, "bogus", json!(1)), "bogus").unwrap();
    }

    // Generated: any place, any name no request has, any JSON value.
    let known: BTreeSet<String> = {
        let mut keys = BTreeSet::new();
        fn collect(value: &Value, keys: &mut BTreeSet<String>) {
            if let Value::Object(map) = value {
                for (key, v) in map {
                    keys.insert(key.clone());
                    collect(v, keys);
                }
            }
            if let Value::Array(items) = value {
                items.iter().for_each(|v| collect(v, keys));
            }
        }
        collect(&doc["components"]["schemas"], &mut keys);
        keys
    };
    let value = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~]{0,8}".prop_map(Value::from),
        Just(json!({})),
        Just(json!([1, "x"])),
    ];
    let name = "[a-z][a-z_0-9]{0,14}".prop_filter("not a field of any request", move |n| !known.contains(n));
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(26),
        ..ProptestConfig::default()
    });
    runner
        .run(&(any::<prop::sample::Index>(), name, value), |(place, name, value)| {
            let (n, at) = place.get(&places);
            let (method, path, _, _) = samples[*n];
            refused(method, path, &with_unknown(*n, at, &name, value), &name).map_err(TestCaseError::fail)
        })
        .unwrap();

    // The query strings are closed too.
    for path in ["/instances?bogus=1", "/events?bogus=1", "/instances/0000dead/wait?bogus=1", "/sandbox/outbox?bogus=1"]
    {
        let (status, answer) = relay.http("GET", path, &[], None);
        assert_eq!(status, 400, "GET {path}: {answer}");
        assert!(answer.contains("bogus"), "GET {path}: {answer}");
    }
    assert_eq!(relay.json(&["list"]), before, "no refused request created anything");
}

/// The limits in the schemas are the ones the engine enforces
/// (`relay::api::limits`): utoipa takes only literals, so this ties them.
#[test]
fn the_schemas_carry_the_daemons_limits() {
    use relay::api::limits;
    let relay = Relay::started();
    let doc = document(&relay);
    let schemas = &doc["components"]["schemas"];
    let property = |schema: &str, name: &str| schemas[schema]["properties"][name].clone();
    for (schema, name, max) in [
        ("CreateInstanceRequest", "objective", limits::MAX_OBJECTIVE_CHARS),
        ("CreateInstanceRequest", "override_opt_out", limits::MAX_REASON_CHARS),
        ("NewTodo", "text", limits::MAX_TODO_CHARS),
        ("SendMessageRequest", "message", limits::MAX_MESSAGE_CHARS),
        ("AnswerRequest", "answer", limits::MAX_REASON_CHARS),
        ("OptOutRequest", "reason", limits::MAX_REASON_CHARS),
    ] {
        assert_eq!(property(schema, name)["maxLength"], json!(max), "{schema}.{name}");
        assert_eq!(property(schema, name)["minLength"], json!(1), "{schema}.{name}");
    }
    // Empty when the message is a file: then it is the caption.
    assert_eq!(property("SandboxSayRequest", "text")["maxLength"], json!(limits::MAX_MESSAGE_CHARS));
    let todos = property("CreateInstanceRequest", "todos");
    assert_eq!((todos["minItems"].clone(), todos["maxItems"].clone()), (json!(1), json!(limits::MAX_TODOS)));
    let private = property("CreateInstanceRequest", "private_context");
    assert_eq!(private["maxItems"], json!(limits::MAX_PRIVATE_FACTS));
    let interval = property("HeartbeatOverrides", "interval_ms");
    assert_eq!(interval["minimum"], json!(limits::MIN_HEARTBEAT.as_millis() as u64));
    assert_eq!(interval["maximum"], json!(limits::MAX_HEARTBEAT.as_millis() as u64));
    assert_eq!(property("HeartbeatOverrides", "max_followups")["maximum"], json!(limits::MAX_FOLLOWUPS));
    assert_eq!(property("BudgetRequest", "expires_in_ms")["maximum"], json!(365 * 24 * 3600 * 1000_u64));
    let wait = doc["paths"]["/instances/{id}/wait"]["get"]["parameters"].as_array().unwrap();
    let timeout = wait.iter().find(|p| p["name"] == "timeout_ms").unwrap();
    assert_eq!(timeout["schema"]["maximum"], json!(limits::MAX_WAIT.as_millis() as u64));
    let until = wait.iter().find(|p| p["name"] == "until").unwrap();
    assert_eq!(until["schema"]["pattern"], json!(relay::engine::wait::Until::pattern()));
    let list = doc["paths"]["/instances"]["get"]["parameters"].as_array().unwrap();
    let state = list.iter().find(|p| p["name"] == "state").unwrap();
    assert_eq!(state["schema"]["pattern"], json!(relay::fsm::State::list_pattern()), "{state:#}");
    let limit = list.iter().find(|p| p["name"] == "limit").unwrap();
    assert_eq!(limit["schema"]["maximum"], json!(relay::api::paging::MAX_LIMIT), "{limit:#}");
    let cursor = list.iter().find(|p| p["name"] == "cursor").unwrap();
    assert_eq!(cursor["schema"]["pattern"], json!(relay::api::paging::CURSOR_PATTERN), "{cursor:#}");

    // And the daemon refuses one past each: the schema is not stricter than needed.
    let create = |objective: String| {
        json!({"objective": objective, "target_contact": "+56912345678", "todos": [{"text": "t"}]}).to_string()
    };
    let (status, _) = relay.http("POST", "/instances", &[], Some(&create("x".repeat(limits::MAX_OBJECTIVE_CHARS + 1))));
    assert_eq!(status, 400);
    let (status, body) = relay.http("POST", "/instances", &[], Some(&create("x".repeat(limits::MAX_OBJECTIVE_CHARS))));
    assert_eq!(status, 201, "{body}");
}

/// Every phone number a request carries (a body's property, a query or
/// path parameter: anything named `contact`, and the `phone` to pair) has the pattern the daemon's
/// parser keeps to (`relay::contact::pattern()`), and the daemon takes what
/// it matches and refuses what it does not (the MCP tests and
/// `contact.rs`'s proptests try many more).
#[test]
fn the_contacts_carry_the_daemons_pattern() {
    let relay = Relay::started();
    let doc = document(&relay);
    let pattern = json!(relay::contact::pattern());
    let mut found = BTreeSet::new();
    for (method, path, operation) in operations(&doc) {
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            let name = parameter["name"].as_str().unwrap();
            if name.contains("contact") {
                assert_eq!(parameter["schema"]["pattern"], pattern, "{method} {path}: {name}");
                found.insert(format!("{method} {path} {name}"));
            }
        }
        let Some(schema) = operation["requestBody"]["content"]["application/json"].get("schema") else { continue };
        let mut objects = Vec::new();
        request_object_schemas(&doc, schema, format!("{method} {path}"), &mut objects);
        for (at, object) in objects {
            for (name, property) in object["properties"].as_object().into_iter().flatten() {
                if name.contains("contact") || name == "phone" {
                    assert_eq!(property["pattern"], pattern, "{at}.{name}");
                    found.insert(format!("{}.{name}", at.trim_start_matches("#/components/schemas/")));
                }
            }
        }
    }
    for expected in [
        "CreateInstanceRequest.target_contact",
        "OptOutRequest.contact",
        "SandboxSayRequest.contact",
        "PhoneRequest.contact",
        "PairRequest.phone",
        "GET /instances contact",
        "GET /sandbox/outbox contact",
        "DELETE /opt-outs/{contact} contact",
    ] {
        assert!(found.contains(expected), "{expected} is not among the contacts found: {found:?}");
    }

    let matcher = regex::Regex::new(pattern.as_str().unwrap()).unwrap();
    for (contact, query, taken) in [
        ("+56 9 1234 5678", "%2B56%209%201234%205678", true),
        ("+1 (415) 555.2671", "%2B1%20(415)%20555.2671", true),
        ("+56 9 TAXI 2222", "%2B56%209%20TAXI%202222", false),
        ("56912345678", "56912345678", false),
    ] {
        assert_eq!(matcher.is_match(contact), taken, "{contact}");
        let (status, body) = relay.http("GET", &format!("/instances?contact={query}"), &[], None);
        assert_eq!(status, if taken { 200 } else { 400 }, "{contact}: {body}");
    }
}

/// A transcript message's `media` and a todo's evidence `media` are in the
/// document, with their enums, and optional.
#[test]
fn the_media_of_a_message_is_described() {
    let doc = serde_json::to_value(relay::daemon::routes::openapi()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let message = &schemas["TranscriptMessage"];
    assert!(message["properties"]["media"].to_string().contains("#/components/schemas/MediaInfo"), "{message}");
    assert!(!message["required"].as_array().unwrap().contains(&json!("media")));
    let info = &schemas["MediaInfo"];
    assert_eq!(info["required"], json!(["kind", "status", "reference"]), "{info}");
    let kinds = &schemas["MediaKind"]["enum"];
    assert_eq!(kinds, &json!(["photo", "voice_note", "audio", "video", "video_note", "document", "sticker"]));
    assert_eq!(schemas["MediaStatus"]["enum"], json!(["pending", "stored", "too_large", "failed", "pruned"]));
    assert_eq!(schemas["TranscriptStatus"]["enum"], json!(["done", "not_configured", "failed", "not_audio"]));
    let evidence = &schemas["Evidence"];
    assert!(evidence["properties"]["media"].is_object(), "{evidence}");
    assert!(!evidence["required"].as_array().unwrap().contains(&json!("media")));
}
