//! The OpenAPI document (`GET /openapi.json`) against what the daemon does:
//! it is valid OpenAPI, its routes are exactly the ones served (and the
//! ones docs/api.md lists), its filters are query parameters, and every
//! request object it says is closed (`additionalProperties: false`) is
//! refused by the daemon with an unknown field at any depth.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed, TestCaseError, TestRunner};
use serde_json::{Value, json};

use crate::support::*;

/// What `/openapi.json` serves, parsed.
fn document(relay: &Relay) -> Value {
    let (status, body) = relay.http("GET", "/openapi.json", &[], None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("the document is JSON")
}

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Every operation: (METHOD, path, operation).
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                all.push((method.to_uppercase(), path.clone(), operation));
            }
        }
    }
    all
}

/// What a `$ref` inside the document points at.
fn resolve<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference.strip_prefix('#').unwrap_or_else(|| panic!("{reference} is not a local reference"));
    doc.pointer(pointer).unwrap_or_else(|| panic!("{reference} points at nothing"))
}

/// The names between braces in a path template.
fn template_names(path: &str) -> BTreeSet<String> {
    path.split('{').skip(1).filter_map(|rest| rest.split_once('}')).map(|(name, _)| name.to_string()).collect()
}

/// Parsed by a real OpenAPI 3.1 parser (oas3), then the rules a parser does
/// not check but a generated client depends on: each `in: path` parameter
/// is a name in the path template and required (the eight filters that
/// were declared `in: path` broke exactly this), each name in the template
/// has one, no parameter twice, every `$ref` resolves, every response says
/// what it is, every error is an `ApiErrorResponse`.
#[test]
fn the_document_is_valid_openapi() {
    let relay = Relay::started();
    let doc = document(&relay);
    let text = doc.to_string();
    let parsed = oas3::from_json(&text).unwrap_or_else(|e| panic!("oas3 refuses the document: {e}"));
    assert!(parsed.openapi.starts_with("3.1"), "{}", parsed.openapi);
    // Every response the suite sees is checked against this same document.
    assert_eq!(&doc, contract::document(), "the served document is the one the suite checks responses against");

    let mut operation_ids = BTreeSet::new();
    for (method, path, operation) in operations(&doc) {
        let at = format!("{method} {path}");
        if let Some(id) = operation["operationId"].as_str() {
            assert!(operation_ids.insert(id.to_string()), "{at}: operationId {id} twice");
        }
        let parameters = operation["parameters"].as_array().cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        let mut in_path = BTreeSet::new();
        for parameter in &parameters {
            let (name, place) = (parameter["name"].as_str().unwrap(), parameter["in"].as_str().unwrap());
            assert!(["query", "header", "path", "cookie"].contains(&place), "{at}: {name} in {place}");
            assert!(seen.insert((name.to_string(), place.to_string())), "{at}: {name} ({place}) twice");
            if place == "path" {
                assert!(template_names(&path).contains(name), "{at}: path parameter {name} is not in the path");
                assert_eq!(parameter["required"], true, "{at}: path parameter {name} must be required");
                in_path.insert(name.to_string());
            }
        }
        assert_eq!(in_path, template_names(&path), "{at}: the template's names and the path parameters");
        let responses = operation["responses"].as_object().unwrap_or_else(|| panic!("{at}: no responses"));
        assert!(!responses.is_empty(), "{at}: no responses");
        for (status, response) in responses {
            let response = match response["$ref"].as_str() {
                Some(reference) => resolve(&doc, reference),
                None => response,
            };
            assert!(response["description"].is_string(), "{at} {status}: a response needs a description");
            if status.starts_with('4') || status.starts_with('5') {
                let schema = &response["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/ApiErrorResponse", "{at} {status}");
            }
        }
    }
    // Every reference anywhere resolves.
    fn references(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref") {
                    found.push(reference.clone());
                }
                map.values().for_each(|v| references(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| references(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    references(&doc, &mut found);
    assert!(!found.is_empty());
    for reference in found {
        resolve(&doc, &reference);
    }
}

/// The eight filters are query parameters, so a generated client sends them.
#[test]
fn the_filters_are_query_parameters() {
    let relay = Relay::started();
    let doc = document(&relay);
    for (path, names) in [
        ("/events", &["after", "instance", "follow"][..]),
        ("/instances", &["state", "contact"]),
        ("/instances/{id}/wait", &["until", "timeout_ms"]),
        ("/sandbox/outbox", &["contact"]),
    ] {
        let parameters = doc["paths"][path]["get"]["parameters"].as_array().unwrap_or_else(|| panic!("GET {path}"));
        for name in names {
            let parameter = parameters.iter().find(|p| p["name"] == *name).unwrap_or_else(|| panic!("{path}: {name}"));
            assert_eq!(parameter["in"], "query", "GET {path}: {name}");
            assert_ne!(parameter["required"], true, "GET {path}: {name} is optional");
        }
    }
}

/// Error responses the guard and the extractors give, declared by one rule:
/// every route but /health needs the token, every one refuses a foreign
/// Host and an oversized body, every POST a body that is not JSON.
#[test]
fn the_guards_refusals_are_declared_on_every_route() {
    let relay = Relay::started();
    let doc = document(&relay);
    for (method, path, operation) in operations(&doc) {
        let responses = operation["responses"].as_object().unwrap();
        // The Host rule and the connection limit hold on every route.
        let mut expected = vec!["400", "403", "413", "503"];
        if path != "/health" {
            expected.push("401");
        }
        if method == "POST" || operation.get("requestBody").is_some() {
            expected.push("415");
        }
        if operation.get("requestBody").is_some() || path.contains('{') {
            expected.push("404");
        }
        for status in expected {
            assert!(responses.contains_key(status), "{method} {path} does not declare {status}");
        }
    }
    // And the document says so for what the daemon does: /health without a token.
    let host = format!("127.0.0.1:{}", relay.port);
    assert_eq!(raw_http(relay.port, "GET", "/health", &[("Host", &host)], b"").0, 200);
    assert!(!doc["paths"]["/health"]["get"]["responses"].as_object().unwrap().contains_key("401"));
}

/// Placeholders for a path's parameters: ids nothing has, so routes that act
/// on one answer 404 from the handler (and act on nothing).
fn concrete(path: &str) -> String {
    path.replace("{id}", "0000dead").replace("{contact}", "%2B56900000001")
}

/// Whether the router has a route for this method and path: anything but
/// its fallbacks' 405 and "no route" 404.
fn served(relay: &Relay, method: &str, path: &str) -> bool {
    let body = ["POST", "PUT", "PATCH"].contains(&method).then_some("{}");
    let (status, answer) = relay.http(method, &concrete(path), &[], body);
    let no_route = status == 404 && answer.contains("\"no route ");
    assert_ne!(status, 0, "{method} {path}: no answer");
    !(status == 405 || no_route)
}

/// Every route the router serves is in the document and in docs/api.md's
/// table, and every one they list is served: each documented operation is
/// routed, and every other method on those paths (and on their parents)
/// meets the router's 405 or 404 fallback.
#[test]
fn the_router_the_document_and_the_docs_agree() {
    let relay = Relay::started();
    let doc = document(&relay);
    let documented: BTreeSet<(String, String)> = operations(&doc).into_iter().map(|(m, p, _)| (m, p)).collect();

    let table = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md")).unwrap();
    let listed: BTreeSet<(String, String)> = table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let method = *cells.get(1)?;
            let path = cells.get(2)?.trim_matches('`');
            (METHODS.contains(&method.to_lowercase().as_str()) && path.starts_with('/'))
                .then(|| (method.to_string(), path.split('?').next().unwrap().to_string()))
        })
        .collect();
    assert_eq!(listed, documented, "docs/api.md's route table and /openapi.json");

    // Candidates: every documented path and each of its parents.
    let mut paths: BTreeSet<String> = BTreeSet::from(["/".to_string()]);
    for (_, path) in &documented {
        let mut prefix = String::new();
        for segment in path.split('/').skip(1) {
            prefix = format!("{prefix}/{segment}");
            paths.insert(prefix.clone());
        }
    }
    let mut routed = BTreeSet::new();
    for path in &paths {
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            // Last, and only if documented: it stops the daemon.
            if (method, path.as_str()) == ("POST", "/shutdown") {
                continue;
            }
            if served(&relay, method, path) {
                routed.insert((method.to_string(), path.clone()));
            }
        }
    }
    assert!(documented.contains(&("POST".to_string(), "/shutdown".to_string())));
    for method in ["GET", "PUT", "DELETE", "PATCH"] {
        assert!(!served(&relay, method, "/shutdown"), "{method} /shutdown");
    }
    assert!(served(&relay, "POST", "/shutdown"));
    routed.insert(("POST".to_string(), "/shutdown".to_string()));
    assert_eq!(routed, documented, "what the router serves and what /openapi.json says");
}

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

/// The errors docs/api.md's table gives for a route are declared on it.
#[test]
fn the_errors_docs_api_md_lists_are_declared() {
    let relay = Relay::started();
    let doc = document(&relay);
    let table = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md")).unwrap();
    let mut checked = 0;
    for line in table.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(method), Some(path), Some(errors)) = (cells.get(1), cells.get(2), cells.get(5)) else { continue };
        if !METHODS.contains(&method.to_lowercase().as_str()) {
            continue;
        }
        let path = path.trim_matches('`').split('?').next().unwrap();
        let responses = doc["paths"][path][method.to_lowercase()]["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} is not in the document"));
        for status in errors.split(|c: char| !c.is_ascii_digit()).filter(|s| s.len() == 3) {
            assert!(
                responses.contains_key(status),
                "{method} {path}: docs/api.md says {status}, the document does not"
            );
            checked += 1;
        }
    }
    assert!(checked > 30, "the table's error column was not read ({checked})");
}

/// A method a path does not serve meets the router's 405 with an `Allow`
/// header naming the methods it does, and the document agrees: every
/// operation of such a path declares 405 with `Allow`, and `Allow` names
/// exactly the path's documented methods (and HEAD, which GET serves).
#[test]
fn a_method_a_path_does_not_serve_is_405_with_allow_as_declared() {
    let relay = Relay::started();
    let doc = document(&relay);
    let mut by_path: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (method, path, _) in operations(&doc) {
        by_path.entry(path).or_default().insert(method);
    }
    for (path, documented) in &by_path {
        let mut allowed = documented.clone();
        if allowed.contains("GET") {
            allowed.insert("HEAD".to_string());
        }
        let mut refused = 0;
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"] {
            if allowed.contains(method) {
                continue;
            }
            let (status, headers, body) = relay.http_with_headers(method, &concrete(path));
            assert_eq!(status, 405, "{method} {path}: {body}");
            assert!(body.contains("\"method_not_allowed\""), "{method} {path}: {body}");
            let allow = headers.iter().find(|(name, _)| name == "allow").map(|(_, v)| v.as_str());
            let allow: BTreeSet<String> = allow
                .unwrap_or_else(|| panic!("{method} {path}: no Allow"))
                .split(',')
                .map(|m| m.trim().to_string())
                .collect();
            assert_eq!(allow, allowed, "{method} {path}: Allow, and the document's methods");
            refused += 1;
        }
        assert!(refused > 0, "{path} serves every method");
        for method in documented {
            let declared = &doc["paths"][path][method.to_lowercase()]["responses"]["405"];
            let declared = match declared["$ref"].as_str() {
                Some(reference) => resolve(&doc, reference),
                None => declared,
            };
            assert!(declared.is_object(), "{method} {path} does not declare 405");
            assert_eq!(declared["headers"]["Allow"]["schema"]["type"], "string", "{method} {path}: 405 without Allow");
        }
    }
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
