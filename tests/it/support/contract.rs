//! The published contract, checked on every response the suite sees: each
//! answer's status, content type, headers and body against the OpenAPI
//! document the daemon serves, with a real JSON Schema validator
//! (`jsonschema`, draft 2020-12 as OpenAPI 3.1 uses it, formats checked).
//! A response the document does not describe fails the test that caused it.
//!
//! The document is the one `GET /openapi.json` serves
//! (`contract/openapi/routes.rs` checks the two are the same), built once
//! per test binary.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

/// The document and the validators compiled from it so far.
struct Contract {
    doc: Value,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

fn contract() -> &'static Contract {
    static CONTRACT: OnceLock<Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| Contract {
        doc: serde_json::to_value(relay::daemon::routes::openapi()).expect("the document serialises"),
        validators: Mutex::new(HashMap::new()),
    })
}

/// The document, as served.
pub fn document() -> &'static Value {
    &contract().doc
}

/// Panics, naming what the document says, unless the answer to `method
/// target` is one the document describes. A status of 0 (no answer came)
/// is nothing to check.
pub fn check(method: &str, target: &str, status: u16, headers: &[(String, String)], body: &[u8]) {
    if status == 0 {
        return;
    }
    if let Err(broken) = conformance(method, target, status, headers, body) {
        let shown = String::from_utf8_lossy(&body[..body.len().min(2000)]);
        panic!(
            "the answer breaks /openapi.json: {broken}\n{method} {target} => {status}\nheaders: {headers:?}\n{shown}"
        );
    }
}

/// Why the answer is not one the document describes, if it is not.
pub fn conformance(
    method: &str,
    target: &str,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(), String> {
    let contract = contract();
    // An absolute-form target (`http://host/path`) names the same path.
    let origin_form = target.split_once("://").map_or(target, |(_, rest)| rest.find('/').map_or("/", |at| &rest[at..]));
    let path = origin_form.split(['?', '#']).next().unwrap_or(origin_form);
    let method = method.to_ascii_lowercase();
    // The live view's page, its files and its sign-in (`/ui/...`) answer a
    // browser, not the API: outside the document on purpose (docs/ui.md).
    if path == "/ui" || path.starts_with("/ui/") {
        return Ok(());
    }
    let Some((template, operation)) = operation(&contract.doc, &method, path) else {
        return answer_to_no_operation(contract, &method, status, headers, body);
    };
    let at = format!("{} {template}", method.to_uppercase());
    let response =
        response_for(&contract.doc, operation, status).ok_or_else(|| format!("{at} declares no {status} response"))?;
    check_headers(contract, &at, response, headers)?;
    if method == "head" || status == 204 || status == 304 {
        return Ok(());
    }
    check_body(contract, &at, status, response, headers, body)
}

/// The operation that serves `method path`: the template whose fixed
/// segments match most (`/instances/wait` before `/instances/{id}`). HEAD is
/// served by GET.
fn operation<'a>(doc: &'a Value, method: &str, path: &str) -> Option<(&'a str, &'a Value)> {
    let segments: Vec<&str> = path.split('/').collect();
    let mut best: Option<(usize, &str, &Value)> = None;
    for (template, item) in doc["paths"].as_object()? {
        let parts: Vec<&str> = template.split('/').collect();
        if parts.len() != segments.len() {
            continue;
        }
        let fits = parts.iter().zip(&segments).all(|(part, segment)| {
            part == segment || (part.starts_with('{') && part.ends_with('}') && !segment.is_empty())
        });
        if !fits {
            continue;
        }
        let fixed = parts.iter().filter(|part| !part.starts_with('{')).count();
        let served = item.get(method).or_else(|| (method == "head").then(|| item.get("get")).flatten());
        if let Some(operation) = served
            && best.is_none_or(|(most, _, _)| fixed > most)
        {
            best = Some((fixed, template.as_str(), operation));
        }
    }
    best.map(|(_, template, operation)| (template, operation))
}

/// A request no operation serves (an unknown path or method) is answered
/// with an error the document defines: the server's or the guard's before
/// routing (503, 400, 401, 403, 413, 415) or the router's (404, 405).
fn answer_to_no_operation(
    contract: &Contract,
    method: &str,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(), String> {
    if ![400, 401, 403, 404, 405, 413, 415, 503].contains(&status) {
        return Err(format!("no operation serves this request, yet it was answered {status}"));
    }
    if method == "head" {
        return Ok(());
    }
    let response =
        json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ApiErrorResponse"}}}});
    check_body(contract, "an unserved request", status, &response, headers, body)
}

/// The response an operation declares for `status` (`$ref`s followed),
/// else its `4XX`/`5XX` range, else its `default`.
fn response_for<'a>(doc: &'a Value, operation: &'a Value, status: u16) -> Option<&'a Value> {
    let responses = operation.get("responses")?;
    let range = format!("{}XX", status / 100);
    let declared =
        responses.get(status.to_string()).or_else(|| responses.get(&range)).or_else(|| responses.get("default"))?;
    Some(follow(doc, declared))
}

/// What a `{"$ref": "#/..."}` points at; anything else as it is.
fn follow<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => follow(doc, doc.pointer(pointer).unwrap_or(&Value::Null)),
        None => value,
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// Each declared header: there when required, and its value of its schema
/// (a number read as one).
fn check_headers(contract: &Contract, at: &str, response: &Value, headers: &[(String, String)]) -> Result<(), String> {
    let Some(declared) = response.get("headers").and_then(Value::as_object) else { return Ok(()) };
    for (name, spec) in declared {
        let spec = follow(&contract.doc, spec);
        let Some(value) = header(headers, name) else {
            if spec["required"] == true {
                return Err(format!("{at}: the required header {name} is missing"));
            }
            continue;
        };
        let schema = &spec["schema"];
        let typed = match schema["type"].as_str() {
            Some("integer" | "number") => value.parse::<f64>().map(|n| json!(n)).unwrap_or(json!(value)),
            _ => json!(value),
        };
        validate(contract, &format!("{at} header {name}"), schema, &typed)?;
    }
    Ok(())
}

/// The content type is one declared for the status, and the body is of its
/// schema: JSON whole, NDJSON line by line, an event stream's `data:`
/// lines one by one against its events' `data` `contentSchema`. A status declared without content has an empty body.
fn check_body(
    contract: &Contract,
    at: &str,
    status: u16,
    response: &Value,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(), String> {
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        return if body.is_empty() {
            Ok(())
        } else {
            Err(format!("{at} {status} declares no content, yet a body came"))
        };
    };
    let sent = header(headers, "content-type").unwrap_or("");
    let media = sent.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let Some((_, declared)) = content.iter().find(|(name, _)| media_matches(name, &media)) else {
        let names: Vec<&String> = content.keys().collect();
        return Err(format!("{at} {status}: content type {sent:?} is not one declared ({names:?})"));
    };
    let mut schema = &declared["schema"];
    let documents: Vec<&[u8]> = match media.as_str() {
        "application/json" => vec![body],
        "application/x-ndjson" => body.split(|b| *b == b'\n').filter(|line| !line.is_empty()).collect(),
        "text/event-stream" => {
            // The schema is of an event; its `data` is the item, as JSON.
            schema = &schema["properties"]["data"]["contentSchema"];
            if schema.is_null() {
                return Err(format!("{at} {status}: the event stream's events declare no contentSchema for data"));
            }
            event_stream_data(body)
        }
        _ => return Ok(()),
    };
    for document in documents {
        let value: Value = serde_json::from_slice(document).map_err(|e| {
            format!("{at} {status}: not JSON ({e}): {}", String::from_utf8_lossy(&document[..document.len().min(300)]))
        })?;
        validate(contract, &format!("{at} {status} body"), schema, &value)?;
    }
    Ok(())
}

fn media_matches(declared: &str, sent: &str) -> bool {
    let declared = declared.to_ascii_lowercase();
    declared == sent
        || declared == "*/*"
        || declared.strip_suffix("/*").is_some_and(|kind| sent.split('/').next() == Some(kind))
}

/// The `data:` lines of a server-sent event stream.
fn event_stream_data(body: &[u8]) -> Vec<&[u8]> {
    body.split(|b| *b == b'\n').filter_map(|line| line.strip_prefix(b"data:")).map(|d| d.trim_ascii()).collect()
}

/// `value` against `schema`, whose `$ref`s point into the document.
fn validate(contract: &Contract, at: &str, schema: &Value, value: &Value) -> Result<(), String> {
    let key = schema.to_string();
    let validator = {
        let mut validators = contract.validators.lock().unwrap();
        match validators.get(&key) {
            Some(validator) => validator.clone(),
            None => {
                let mut whole = schema.clone();
                if let Some(object) = whole.as_object_mut() {
                    object.insert("components".into(), contract.doc["components"].clone());
                }
                let validator = jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .should_validate_formats(true)
                    .build(&whole)
                    .unwrap_or_else(|e| panic!("{at}: the document's schema does not compile: {e}\n{schema}"));
                let validator = Arc::new(validator);
                validators.insert(key, validator.clone());
                validator
            }
        }
    };
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    if errors.is_empty() { Ok(()) } else { Err(format!("{at} breaks its schema: {}", errors.join("; "))) }
}
