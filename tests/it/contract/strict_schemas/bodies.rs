//! Request bodies: a send's message or file, trimmed text, a create
//! request's quiet hours, zone, budget and answer schemas, a webhook, a
//! pairing, and the routes whose bodies are bytes.

use std::collections::BTreeSet;

use super::*;

/// A send takes a message or a file: both, neither, or both null is
/// refused; one with the other null is taken (404: no such conversation).
#[test]
fn a_send_takes_a_message_or_a_file() {
    let relay = Relay::started();
    let schema = body_schema("post", "/instances/{id}/send");
    let file = json!({"upload_id": "6f1c2b9e-4a43-4c8e-9a51-0e9d7f3a2b10"});
    for (body, admitted) in [
        (json!({"message": "hi"}), true),
        (json!({"file": file}), true),
        (json!({"message": null, "file": file}), true),
        (json!({"message": "hi", "file": null}), true),
        (json!({"message": "hi", "file": file}), false),
        (json!({}), false),
        (json!({"message": null, "file": null}), false),
        (json!({"message": null}), false),
    ] {
        agree(
            "POST /instances/{id}/send",
            &schema,
            &body,
            admitted,
            send(&relay, "POST", "/instances/0000dead/send", &body),
        );
    }
}

/// The strings of the request schemas that say `pattern: \S`, by schema
/// and property (`[]` for an array's items; a condition's branch is named
/// as the object it constrains).
fn trimmed_text_in_the_document() -> BTreeSet<String> {
    fn walk(schema: &Value, at: &str, found: &mut BTreeSet<String>) {
        if !schema.is_object() {
            return;
        }
        if schema["pattern"] == "\\S" {
            found.insert(at.to_string());
        }
        for (name, property) in schema["properties"].as_object().into_iter().flatten() {
            walk(property, &format!("{at}.{name}"), found);
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            schema[key].as_array().into_iter().flatten().for_each(|branch| walk(branch, at, found));
        }
        for key in ["then", "else"] {
            walk(&schema[key], at, found);
        }
        walk(&schema["items"], &format!("{at}[]"), found);
    }
    let mut found = BTreeSet::new();
    for (name, schema) in document()["components"]["schemas"].as_object().unwrap() {
        walk(schema, name, &mut found);
    }
    found
}

/// Text the engine trims and refuses when empty says so (`pattern: \S`,
/// every one of them and no other): spaces alone are refused by both,
/// text with spaces around taken by both. A text that is not trimmed
/// text (a caption, a reaction) takes spaces alone, in both.
#[test]
fn trimmed_text_has_a_character_that_is_not_a_space() {
    let expected: BTreeSet<String> = [
        "AnswerRequest.answer",
        "AnswerSchema.enum[]",
        "CreateInstanceRequest.objective",
        "CreateInstanceRequest.override_opt_out",
        "CreateInstanceRequest.private_context[]",
        "NewTodo.text",
        "OptOutRequest.reason",
        "SandboxActRequest.text",
        "SandboxSayRequest.text",
        "SendMessageRequest.message",
    ]
    .map(String::from)
    .into();
    assert_eq!(trimmed_text_in_the_document(), expected);

    let relay = Relay::started();
    let (_, message) = contact_message(&relay);
    let full = json!({"objective": "o", "target_contact": OTHER_CONTACT, "override_opt_out": "asked again",
                      "todos": [{"text": "t", "answer_schema": {"type": "string", "enum": ["yes", "no"]}}],
                      "private_context": ["fact"]});
    let edit = json!({"contact": CONTACT, "act": "edit", "message": message, "text": "new"});
    let react = json!({"contact": CONTACT, "act": "react", "message": message, "emoji": "👍"});
    let file = json!({"file": {"upload_id": "6f1c2b9e-4a43-4c8e-9a51-0e9d7f3a2b10", "caption": "c"}});
    let cases = [
        ("/instances", "/instances", full.clone(), "/objective", true),
        ("/instances", "/instances", full.clone(), "/todos/0/text", true),
        ("/instances", "/instances", full.clone(), "/private_context/0", true),
        ("/instances", "/instances", full.clone(), "/override_opt_out", true),
        ("/instances", "/instances", full, "/todos/0/answer_schema/enum/0", true),
        ("/instances/{id}/send", "/instances/0000dead/send", json!({"message": "m"}), "/message", true),
        ("/instances/{id}/answer", "/instances/0000dead/answer", json!({"answer": "a"}), "/answer", true),
        ("/opt-outs", "/opt-outs", json!({"contact": "+56900000002", "reason": "r"}), "/reason", true),
        ("/sandbox/messages", "/sandbox/messages", json!({"contact": "+56900000003", "text": "t"}), "/text", true),
        ("/sandbox/acts", "/sandbox/acts", edit, "/text", true),
        ("/instances/{id}/send", "/instances/0000dead/send", file, "/file/caption", false),
        ("/sandbox/acts", "/sandbox/acts", react, "/emoji", false),
    ];
    for (template, path, body, pointer, trimmed) in cases {
        let schema = body_schema("post", template);
        let what = format!("POST {template} {pointer}");
        let blank = with(&body, pointer, json!("   "));
        agree(&what, &schema, &blank, !trimmed, send(&relay, "POST", path, &blank));
        let padded = with(&body, pointer, json!("  x  "));
        if trimmed {
            agree(&what, &schema, &padded, true, send(&relay, "POST", path, &padded));
        }
    }
}

/// A create request's quiet hours, zone, start time, budget and answer
/// schemas, as their parsers and `AnswerSchema::check` take them.
#[test]
fn a_create_request_takes_what_its_parsers_take() {
    let relay = Relay::started();
    let schema = body_schema("post", "/instances");
    let create = |body: &Value| send(&relay, "POST", "/instances", body);
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    let mut cases: Vec<(&str, Value, bool)> = Vec::new();
    for (window, admitted) in
        [("22:00-08:00", true), ("OFF", true), ("22:00-22:00", false), ("25:00-08:00", false), ("", false)]
    {
        cases.push(("/quiet_hours", json!(window), admitted));
    }
    for (zone, admitted) in
        [(json!("Europe/Madrid"), true), (Value::Null, true), (json!("Mars/Olympus"), false), (json!(""), false)]
    {
        cases.push(("/time_zone", zone, admitted));
    }
    // "tomorrow 10:00" is ahead, and within 30 days, on any clock.
    for (start, admitted) in
        [(json!("tomorrow 10:00"), true), (Value::Null, true), (json!("soon"), false), (json!(""), false)]
    {
        cases.push(("/start_at", start, admitted));
    }
    for (budget, admitted) in [
        (json!({"expires_in_ms": 60_000, "expires_at": tomorrow}), false),
        (json!({"expires_in_ms": 60_000, "expires_at": null}), true),
        (json!({"expires_in_ms": null, "expires_at": tomorrow}), true),
        (json!({"expires_in_ms": null, "expires_at": null}), true),
    ] {
        cases.push(("/budget", budget, admitted));
    }
    for (answer_schema, admitted) in [
        (json!({"type": "integer", "minimum": 1, "format": null}), true),
        (json!({"type": "boolean", "minimum": 1}), false),
        (json!({"type": "string", "pattern": "^[A-Z]{3}$", "minLength": 3, "maxLength": 3}), true),
        (json!({"type": "number", "pattern": "a"}), false),
        (json!({"type": "integer", "format": "date"}), false),
        (json!({"type": "boolean", "maxLength": 3}), false),
        (json!({"type": "integer", "enum": [1, 2]}), true),
        (json!({"type": "string", "enum": ["a", 1]}), false),
        (json!({"type": "string", "enum": []}), false),
        (json!({"type": "string", "enum": ["a", "a"]}), false),
        (json!({"type": "string", "pattern": "("}), false),
        (json!({"type": "string", "pattern": "a".repeat(201)}), false),
    ] {
        cases.push(("/answer_schema", answer_schema, admitted));
    }
    for (pointer, value, admitted) in cases {
        let mut body = create_body();
        match pointer {
            "/answer_schema" => body["todos"][0]["answer_schema"] = value,
            _ => body[&pointer[1..]] = value,
        }
        agree(&format!("POST /instances {pointer}"), &schema, &body, admitted, create(&body));
    }
    let window = &document()["components"]["schemas"]["CreateInstanceRequest"]["properties"]["quiet_hours"]["pattern"];
    assert_eq!(window, &json!(relay::courtesy::quiet::pattern()));
    runner(8)
        .run(&matching(window.as_str().unwrap()), |window| {
            let mut body = create_body();
            body["quiet_hours"] = json!(window);
            let (status, answer) = create(&body);
            prop_assert_eq!(status, 201, "{}: {}", window, answer);
            Ok(())
        })
        .unwrap();
}

/// A webhook's URL is an http(s) URL of the pattern `webhooks.add` keeps
/// to, its events are kinds of event; a pairing's phone is a phone number.
/// (Generated URLs are not sent: the daemon would POST to them; the
/// webhooks' proptest checks what the pattern matches is taken.)
#[test]
fn a_webhook_and_a_pairing_take_what_their_handlers_take() {
    let relay = Relay::started();
    let webhook = &document()["components"]["schemas"]["WebhookRequest"]["properties"];
    assert_eq!(webhook["url"]["pattern"], relay::webhooks::url_pattern());
    assert_eq!(webhook["events"]["items"]["enum"], json!(relay::api::EventData::KINDS));
    let schema = body_schema("post", "/webhooks");
    for (n, (url, events, admitted)) in [
        ("http://127.0.0.1:9/a", json!([]), true),
        ("HTTPS://localhost:9/b?x=1", json!(["transition", "todo"]), true),
        ("http://127.0.0.1:9/c", json!(["nope"]), false),
        ("ftp://127.0.0.1:9/d", json!([]), false),
        ("http://", json!([]), false),
        ("127.0.0.1:9/e", json!([]), false),
        ("", json!([]), false),
    ]
    .into_iter()
    .enumerate()
    {
        let body = json!({"url": url, "events": events});
        let answer = send(&relay, "POST", "/webhooks", &body);
        agree(&format!("POST /webhooks ({n})"), &schema, &body, admitted, answer.clone());
        if admitted {
            let id = serde_json::from_str::<Value>(&answer.1).unwrap()["id"].as_str().unwrap().to_string();
            assert_eq!(relay.http("DELETE", &format!("/webhooks/{id}"), &[], None).0, 200);
        }
    }

    let schema = body_schema("post", "/whatsapp/pair");
    for (phone, admitted) in [
        (json!(CONTACT), true),
        (json!("+56 9 1234 5678"), true),
        (Value::Null, true),
        (json!(""), false),
        (json!("56912345678"), false),
    ] {
        let body = json!({"phone": phone});
        // A sandbox daemon reads the phone, then answers 409: no WhatsApp to pair.
        agree("POST /whatsapp/pair", &schema, &body, admitted, send(&relay, "POST", "/whatsapp/pair", &body));
    }
}

/// `POST /media` takes bytes (no JSON schema, required), and a message's
/// file comes back as the type relay found in it, which the document
/// declares as any type (every answer here is checked against it).
#[test]
fn files_are_bytes_of_their_own_type() {
    let upload = &document()["paths"]["/media"]["post"]["requestBody"];
    assert_eq!(upload["content"], json!({"application/octet-stream": {}}), "{upload}");
    assert_eq!(upload["required"], true);
    let media = "/instances/{id}/messages/{message_id}/media";
    let read = &document()["paths"][media]["get"]["responses"]["200"];
    assert_eq!(read["content"], json!({"*/*": {}}), "{read}");

    let relay = Relay::started();
    let id = relay.create(&[]);
    let mut jpeg = b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01".to_vec();
    jpeg.resize(2_000, 7);
    let photo = relay.path().join("meter.jpg");
    std::fs::write(&photo, jpeg).unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "the meter", "--image", photo.to_str().unwrap()]);
    let stored = relay
        .wait_for(&id, "the photo kept", |_| relay.transcript(&id).iter().any(|m| m["media"]["status"] == "stored"));
    assert_eq!(stored["id"], json!(id));
    let transcript = relay.transcript(&id);
    let message = transcript.iter().find(|m| m["media"]["status"] == "stored").unwrap();
    let path = media.replace("{id}", &id).replace("{message_id}", message["id"].as_str().unwrap());
    let (status, headers, _) = relay.http_with_headers("GET", &path);
    assert_eq!(status, 200);
    let content_type = headers.iter().find(|(name, _)| name == "content-type").map(|(_, v)| v.as_str());
    assert_eq!(content_type, Some("image/jpeg"));
}
