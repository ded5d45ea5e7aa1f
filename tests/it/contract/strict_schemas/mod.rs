//! The request schemas are as strict as the handlers (issue 40): each rule
//! the document states (`src/daemon/routes/request_schemas.rs`, and the
//! patterns it takes from the parsers) is tied here to the handler it
//! describes. For each, inputs the schema refuses are refused by the daemon
//! (400), and inputs it admits (listed, or generated from the pattern) are
//! not refused for their form: what they name may still not exist (404).
//! Bodies and parameters are checked against the served document with a
//! real JSON Schema validator (`jsonschema`, draft 2020-12, formats
//! asserted), as `support::contract` checks the answers.

mod answer_schema;
mod bodies;
mod parameters;
mod sandbox;

use jsonschema::Validator;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed, TestRunner};
use serde_json::{Value, json};

use crate::support::*;

/// The document the daemon serves (`openapi/routes.rs` checks it is this one).
fn document() -> &'static Value {
    contract::document()
}

/// A validator of `schema`, whose `$ref`s point into the document.
fn validator(schema: &Value) -> Validator {
    let mut whole = schema.clone();
    whole.as_object_mut().expect("a schema object").insert("components".into(), document()["components"].clone());
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&whole)
        .unwrap_or_else(|e| panic!("the schema does not compile: {e}\n{schema}"))
}

/// The schema of an operation's JSON body.
fn body_schema(method: &str, path: &str) -> Validator {
    let schema = &document()["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "{method} {path} takes no JSON body");
    validator(schema)
}

/// The schema of an operation's parameter.
fn parameter_schema(method: &str, path: &str, name: &str) -> &'static Value {
    let parameters = document()["paths"][path][method]["parameters"].as_array();
    let parameter = parameters.into_iter().flatten().find(|p| p["name"] == name);
    &parameter.unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))["schema"]
}

/// `value` is admitted by the schema exactly when `admitted` says, and the
/// daemon's answer agrees: 400 when the schema refuses it, anything else
/// when it admits it.
#[track_caller]
fn agree(what: &str, schema: &Validator, value: &Value, admitted: bool, answer: (u16, String)) {
    let verdict = if admitted { "admit" } else { "refuse" };
    assert_eq!(schema.is_valid(value), admitted, "{what}: the schema should {verdict} {value}");
    let (status, body) = answer;
    if admitted {
        assert_ne!(status, 400, "{what}: the schema admits {value}, the daemon refused it: {body}");
    } else {
        assert_eq!(status, 400, "{what}: the schema refuses {value}, the daemon answered {status}: {body}");
    }
}

/// A deterministic proptest runner of `cases` cases.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(40),
        ..ProptestConfig::default()
    })
}

/// The strings a JSON Schema `pattern` (anchored) matches.
fn matching(pattern: &str) -> impl Strategy<Value = String> + use<> {
    proptest::string::string_regex(pattern.trim_start_matches('^').trim_end_matches('$')).expect("a pattern")
}

/// A create request the daemon takes (201).
fn create_body() -> Value {
    json!({"objective": "Confirm the delivery date", "target_contact": CONTACT, "todos": [{"text": "Ask which day suits"}]})
}

/// `body` with the value at `pointer` replaced.
fn with(body: &Value, pointer: &str, value: Value) -> Value {
    let mut changed = body.clone();
    *changed.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer} is not in {body}")) = value;
    changed
}

/// One request with a JSON body.
fn send(relay: &Relay, method: &str, path: &str, body: &Value) -> (u16, String) {
    relay.http(method, path, &[], Some(&body.to_string()))
}

/// A live conversation with `CONTACT` that has a message of theirs to act
/// on: (conversation id, message id).
fn contact_message(relay: &Relay) -> (String, String) {
    let id = relay.create(&[]);
    relay.ok(&["sandbox", "say", CONTACT, "Thursday works for me"]);
    let transcript = relay.transcript(&id);
    let theirs = transcript.iter().find(|m| m["role"] == "contact").expect("the contact's message");
    (id, theirs["id"].as_str().unwrap().to_string())
}
