//! The served document and the walks over it the OpenAPI tests share: its
//! operations, a `$ref`'s target, a path template's names, and a concrete
//! path for a template.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::*;

/// What `/openapi.json` serves, parsed.
pub(super) fn document(relay: &Relay) -> Value {
    let (status, body) = relay.http("GET", "/openapi.json", &[], None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("the document is JSON")
}

pub(super) const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Every operation: (METHOD, path, operation).
pub(super) fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
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
pub(super) fn resolve<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference.strip_prefix('#').unwrap_or_else(|| panic!("{reference} is not a local reference"));
    doc.pointer(pointer).unwrap_or_else(|| panic!("{reference} points at nothing"))
}

/// The names between braces in a path template.
pub(super) fn template_names(path: &str) -> BTreeSet<String> {
    path.split('{').skip(1).filter_map(|rest| rest.split_once('}')).map(|(name, _)| name.to_string()).collect()
}

/// Placeholders for a path's parameters: ids nothing has, so routes that act
/// on one answer 404 from the handler (and act on nothing).
pub(super) fn concrete(path: &str) -> String {
    path.replace("{id}", "0000dead").replace("{contact}", "%2B56900000001")
}
