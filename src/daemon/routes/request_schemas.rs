//! The request schemas as strict as the handlers: what each parser takes,
//! declared by rule from the code that parses it (a pattern, an enum, a
//! condition), so that the document does not call valid what a handler
//! refuses for its form. They work on the document as JSON: JSON Schema's
//! conditions (`if`/`then`, `not`, a `oneOf` of requirements) have no
//! utoipa type.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::api::{AnswerSchema, EventData, SandboxAct, limits};

/// Every rule; the trimmed text's last, as it reads what the others declare.
pub(super) fn declare_what_the_handlers_take(document: &mut Value) {
    declare_id_patterns(document);
    declare_idempotency_keys(document);
    declare_unsigned_ranges(document);
    declare_upload_body(document);
    declare_create_rules(document);
    declare_send_rules(document);
    declare_webhook_rules(document);
    declare_sandbox_rules(document);
    merge(component(document, "AnswerSchema"), AnswerSchema::schema_rules());
    declare_trimmed_text(document);
}

/// Conversation ids (the `{id}` of `/instances/{id}/...`, the `instance`
/// of `/events`, the `conversation` of `POST /login-codes`) are read by the
/// engine's resolver: a full id, or a prefix
/// of hex digits and dashes (`limits::is_id_prefix`); a webhook's `{id}`
/// by the webhooks' (`webhooks::id_pattern`); a `{message_id}` by
/// `message_ref::find`.
fn declare_id_patterns(document: &mut Value) {
    let conversation = json!({"pattern": limits::ID_PATTERN, "minLength": limits::MIN_ID_PREFIX});
    let webhook = json!({"pattern": crate::webhooks::id_pattern()});
    let message = json!({"pattern": crate::engine::message_ref::MESSAGE_PATTERN});
    for (path, parameter) in parameters_mut(document) {
        let rule = match (parameter["in"].as_str(), parameter["name"].as_str()) {
            (Some("path"), Some("id")) if path.starts_with("/instances/") => &conversation,
            (Some("query"), Some("instance")) if path == "/events" => &conversation,
            (Some("path"), Some("id")) if path.starts_with("/webhooks/") => &webhook,
            (Some("path"), Some("message_id")) => &message,
            _ => continue,
        };
        merge(&mut parameter["schema"], rule.clone());
    }
    merge(&mut document["components"]["schemas"]["LoginCodeRequest"]["properties"]["conversation"], conversation);
}

/// An `Idempotency-Key` is what `limits::idempotency_key_problem` takes.
fn declare_idempotency_keys(document: &mut Value) {
    let key = json!({
        "pattern": limits::IDEMPOTENCY_KEY_PATTERN,
        "minLength": 1,
        "maxLength": limits::MAX_IDEMPOTENCY_KEY_CHARS,
    });
    for (_, parameter) in parameters_mut(document) {
        if parameter["in"] == "header" && parameter["name"] == "Idempotency-Key" {
            merge(&mut parameter["schema"], key.clone());
        }
    }
}

/// An unsigned integer goes up to its type's largest value and no further
/// (serde refuses one more); its format is spelt as OpenAPI's registry
/// does (`uint64`), not as utoipa writes its `KnownFormat::UInt64`
/// (`u-int64`).
fn declare_unsigned_ranges(document: &mut Value) {
    visit_objects(document, &mut |node| {
        let (format, largest) = match node.get("format").and_then(Value::as_str) {
            Some("u-int8") => ("uint8", u64::from(u8::MAX)),
            Some("u-int16") => ("uint16", u64::from(u16::MAX)),
            Some("u-int32") => ("uint32", u64::from(u32::MAX)),
            Some("u-int64") => ("uint64", u64::MAX),
            _ => return,
        };
        node.insert("format".into(), json!(format));
        node.entry("maximum").or_insert(json!(largest));
    });
}

/// The file `POST /media` takes is its body, which it needs (an empty one
/// is refused); bytes have no JSON schema.
fn declare_upload_body(document: &mut Value) {
    let body = document.pointer_mut("/paths/~1media/post/requestBody").expect("POST /media takes a body");
    body["required"] = json!(true);
}

/// A create request: quiet hours, a time zone and a start time in the
/// plainest forms their parsers read, each private fact as text is
/// (trimmed, bounded), and a deadline given one way (`budget::of_request`
/// refuses both).
fn declare_create_rules(document: &mut Value) {
    let mut zones: Vec<Value> = crate::courtesy::zone::zone_names().map(Value::from).collect();
    zones.push(Value::Null);
    let properties = json!({
        "quiet_hours": {"pattern": crate::courtesy::quiet::pattern()},
        "start_at": {"pattern": crate::api::start_at::pattern()},
        "time_zone": {"enum": zones},
        "private_context": {"items": {"minLength": 1, "maxLength": limits::MAX_PRIVATE_CHARS}},
    });
    merge(component(document, "CreateInstanceRequest"), json!({"properties": properties}));
    let given = json!({"not": left_out()});
    let both = json!({"required": ["expires_in_ms", "expires_at"], "properties": {"expires_in_ms": given, "expires_at": given}});
    merge(component(document, "BudgetRequest"), json!({"not": both}));
}

/// `send` takes a message or a file, not both and not neither. Either may
/// be given as null, so each branch types the property it requires.
fn declare_send_rules(document: &mut Value) {
    let one_of = json!([
        {"required": ["message"], "properties": {"message": {"type": "string"}}},
        {"required": ["file"], "properties": {"file": {"type": "object"}}},
    ]);
    merge(component(document, "SendMessageRequest"), json!({"oneOf": one_of}));
}

/// A webhook's URL is what `webhooks.add` takes, and its events are kinds
/// of event (`EventData::KINDS`).
fn declare_webhook_rules(document: &mut Value) {
    let properties = json!({
        "url": {"pattern": crate::webhooks::url_pattern()},
        "events": {"items": {"enum": EventData::KINDS}},
    });
    merge(component(document, "WebhookRequest"), json!({"properties": properties}));
}

/// The sandbox's handlers: an act on a message names it, an edit has its
/// text and a reaction is an emoji; a contact's message is text or a file
/// (then the text is its caption); `cut_short` is for coming back online;
/// a lock lasts a duration in (0, `MAX_SANDBOX_LOCK`].
fn declare_sandbox_rules(document: &mut Value) {
    let act = |act: SandboxAct| serde_json::to_value(act).expect("an act serialises");
    let acts_on_a_message = [SandboxAct::React, SandboxAct::Edit, SandboxAct::Delete].map(act);
    let when_act = |acts: Value| json!({"properties": {"act": {"enum": acts}}});
    let acts = json!([
        {"if": when_act(json!(acts_on_a_message)),
         "then": {"required": ["message"], "properties": {"message": {"type": "string"}}}},
        {"if": when_act(json!([act(SandboxAct::Edit)])),
         "then": {"required": ["text"], "properties": {"text": {"type": "string", "minLength": 1}}}},
        {"if": when_act(json!([act(SandboxAct::React)])),
         "then": {"properties": {"emoji": {"pattern": crate::api::reaction_pattern()}}}},
    ]);
    merge(component(document, "SandboxActRequest"), json!({"allOf": acts}));

    let with_a_file = json!({"required": ["media"], "properties": {"media": {"type": "object"}}});
    let with_text = json!({"required": ["text"], "properties": {"text": {"type": "string", "minLength": 1}}});
    let caption = json!({"properties": {"text": {"maxLength": crate::media::label::MAX_CAPTION_CHARS}}});
    let say = json!({"anyOf": [with_a_file.clone(), with_text], "if": with_a_file, "then": caption});
    merge(component(document, "SandboxSayRequest"), say);

    let link = json!({"if": {"properties": {"online": {"const": false}}}, "then": {"properties": {"cut_short": {"const": false}}}});
    merge(component(document, "SandboxLinkRequest"), link);

    let lasts = json!({"pattern": crate::duration::pattern(limits::MAX_SANDBOX_LOCK)});
    merge(component(document, "SandboxLockRequest"), json!({"properties": {"lasts": lasts}}));
}

/// Text the engine trims and then refuses when empty (`bounded_text`) is
/// what a request's `minLength: 1` says (docs/api.md): it has a character
/// that is not a space too, `pattern: "\S"`. Every string of a request
/// body with that `minLength` and no pattern of its own gets it, in the
/// bodies' schemas and in their conditions' branches.
fn declare_trimmed_text(document: &mut Value) {
    let mut references = Vec::new();
    for (_, body) in request_bodies_mut(document) {
        references_in(body, &mut references);
    }
    let mut names = BTreeSet::new();
    while let Some(reference) = references.pop() {
        let Some(name) = reference.strip_prefix("#/components/schemas/") else { continue };
        if names.insert(name.to_string()) {
            references_in(component(document, name), &mut references);
        }
    }
    let mut trimmed = |node: &mut serde_json::Map<String, Value>| {
        let string = node
            .get("type")
            .is_some_and(|t| t == "string" || t.as_array().is_some_and(|t| t.contains(&json!("string"))));
        if string && node.get("minLength") == Some(&json!(1)) && !node.contains_key("pattern") {
            node.insert("pattern".into(), json!("\\S"));
        }
    };
    for (_, body) in request_bodies_mut(document) {
        visit_schema(body, &mut trimmed);
    }
    for name in names {
        visit_schema(component(document, &name), &mut trimmed);
    }
}

/// What JSON Schema makes of a property left out or null, which serde
/// reads alike (`#[serde(default)]`).
fn left_out() -> Value {
    json!({"type": "null"})
}

/// A component schema of the document, by name: a rule for a type that is
/// gone fails at once (at start, in every test), not silently.
fn component<'a>(document: &'a mut Value, name: &str) -> &'a mut Value {
    document
        .pointer_mut(&format!("/components/schemas/{name}"))
        .unwrap_or_else(|| panic!("the document has no schema {name}"))
}

/// `patch` merged into `target`: objects key by key, anything else replaced.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch,
    }
}

/// Every operation of the document, with its path.
fn operations_mut(document: &mut Value) -> Vec<(String, &mut Value)> {
    const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
    let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) else { return Vec::new() };
    let mut operations = Vec::new();
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, operation) in item.iter_mut() {
            if METHODS.contains(&method.as_str()) {
                operations.push((path.clone(), operation));
            }
        }
    }
    operations
}

/// Every parameter of every operation, with its operation's path.
fn parameters_mut(document: &mut Value) -> Vec<(String, &mut Value)> {
    let mut parameters = Vec::new();
    for (path, operation) in operations_mut(document) {
        let Some(list) = operation.get_mut("parameters").and_then(Value::as_array_mut) else { continue };
        parameters.extend(list.iter_mut().map(|parameter| (path.clone(), parameter)));
    }
    parameters
}

/// The JSON schema of every request body, with its operation's path.
fn request_bodies_mut(document: &mut Value) -> Vec<(String, &mut Value)> {
    let mut bodies = Vec::new();
    for (path, operation) in operations_mut(document) {
        if let Some(schema) = operation.pointer_mut("/requestBody/content/application~1json/schema") {
            bodies.push((path, schema));
        }
    }
    bodies
}

/// Every `$ref` in `value`, at any depth.
fn references_in(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                found.push(reference.clone());
            }
            map.values().for_each(|v| references_in(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| references_in(v, found)),
        _ => {}
    }
}

/// Every object in `value`, at any depth.
fn visit_objects(value: &mut Value, visit: &mut impl FnMut(&mut serde_json::Map<String, Value>)) {
    match value {
        Value::Object(map) => {
            visit(map);
            map.values_mut().for_each(|v| visit_objects(v, visit));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| visit_objects(v, visit)),
        _ => {}
    }
}

/// Every schema a value must be valid against, from `schema` down: its
/// properties and items, and its conditions' branches (`not` is left out:
/// what it holds is what the value must not be).
fn visit_schema(schema: &mut Value, visit: &mut impl FnMut(&mut serde_json::Map<String, Value>)) {
    let Some(node) = schema.as_object_mut() else { return };
    visit(node);
    for (key, value) in node.iter_mut() {
        match key.as_str() {
            "properties" => {
                value.as_object_mut().into_iter().flat_map(|p| p.values_mut()).for_each(|p| visit_schema(p, visit))
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                value.as_array_mut().into_iter().flatten().for_each(|branch| visit_schema(branch, visit))
            }
            "items" | "then" | "else" | "additionalProperties" => visit_schema(value, visit),
            _ => {}
        }
    }
}
