//! The document's routes: valid OpenAPI, filters as query parameters, the
//! guard's refusals and docs/api.md's errors declared, the routes exactly
//! the ones served and listed, and a method a path does not serve a 405
//! with `Allow` as declared.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::*;

use super::document::*;

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
