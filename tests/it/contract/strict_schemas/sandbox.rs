//! The sandbox's bodies: a contact's act and message, the link, the lock.

use super::*;

/// An act on a message names it, an edit has its text, a reaction is an
/// emoji, a call needs neither; a contact's message is text or a file
/// (whose caption may be empty, and at most 1,024 characters).
#[test]
fn a_contacts_act_and_message_are_what_the_handlers_take() {
    let relay = Relay::started();
    let (_, message) = contact_message(&relay);
    let schema = body_schema("post", "/sandbox/acts");
    let act = |fields: Value| {
        let mut body = json!({"contact": CONTACT});
        body.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        body
    };
    // In this order: the deletion last, as a deleted message is not acted on.
    for (body, admitted) in [
        (act(json!({"act": "call"})), true),
        (act(json!({"act": "call", "message": null, "emoji": null, "text": null})), true),
        (act(json!({"act": "react", "message": message, "emoji": "👍"})), true),
        (act(json!({"act": "react", "message": message})), true),
        (act(json!({"act": "react", "message": message, "emoji": "ok"})), false),
        (act(json!({"act": "react", "emoji": "👍"})), false),
        (act(json!({"act": "edit", "message": message, "text": "Friday, sorry"})), true),
        (act(json!({"act": "edit", "message": message})), false),
        (act(json!({"act": "edit", "message": message, "text": null})), false),
        (act(json!({"act": "delete"})), false),
        (act(json!({"act": "delete", "message": null})), false),
        (act(json!({"act": "delete", "message": message})), true),
    ] {
        agree("POST /sandbox/acts", &schema, &body, admitted, send(&relay, "POST", "/sandbox/acts", &body));
    }

    let schema = body_schema("post", "/sandbox/messages");
    let say = |body: &Value| send(&relay, "POST", "/sandbox/messages", body);
    let upload = || {
        let headers = [("Content-Type", "application/octet-stream")];
        let (status, body) = relay.http("POST", "/media", &headers, Some("%PDF-1.7 the delivery note"));
        assert_eq!(status, 201, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["upload_id"].as_str().unwrap().to_string()
    };
    let file = |upload_id: &str| json!({"kind": "document", "upload_id": upload_id, "file_name": "note.pdf"});
    for (body, admitted) in [
        (json!({"contact": CONTACT, "text": "hello"}), true),
        (json!({"contact": CONTACT}), false),
        (json!({"contact": CONTACT, "text": ""}), false),
        (json!({"contact": CONTACT, "text": "", "media": null}), false),
        (json!({"contact": CONTACT, "text": "", "media": file(&upload())}), true),
        (json!({"contact": CONTACT, "text": "the note", "media": file(&upload())}), true),
        (json!({"contact": CONTACT, "text": "x".repeat(1_025), "media": file(&upload())}), false),
    ] {
        agree("POST /sandbox/messages", &schema, &body, admitted, say(&body));
    }
}

/// `cut_short` is for coming back online; a lock lasts more than 0s and at
/// most 365 days, written as the duration pattern says (generated ones too).
#[test]
fn the_link_and_the_lock_are_what_the_handlers_take() {
    let relay = Relay::started();
    let schema = body_schema("post", "/sandbox/link");
    for (body, admitted) in [
        (json!({"online": false, "cut_short": true}), false),
        (json!({"online": false}), true),
        (json!({"online": true, "cut_short": true}), true),
        (json!({"online": false, "cut_short": false}), true),
        (json!({"online": true}), true),
    ] {
        agree("POST /sandbox/link", &schema, &body, admitted, send(&relay, "POST", "/sandbox/link", &body));
    }

    let lasts = &document()["components"]["schemas"]["SandboxLockRequest"]["properties"]["lasts"]["pattern"];
    assert_eq!(lasts, &json!(relay::duration::pattern(relay::api::limits::MAX_SANDBOX_LOCK)));
    let schema = body_schema("put", "/sandbox/lock");
    let lock = |lasts: &str| send(&relay, "PUT", "/sandbox/lock", &json!({"lasts": lasts}));
    for (lasts, admitted) in [
        ("90s", true),
        ("2h", true),
        ("365d", true),
        ("52w", true),
        ("31536000000ms", true),
        ("366d", false),
        ("53w", false),
        ("0s", false),
        ("0", false),
        ("", false),
        ("soon", false),
    ] {
        agree("PUT /sandbox/lock", &schema, &json!({"lasts": lasts}), admitted, lock(lasts));
    }
    runner(20)
        .run(&matching(lasts.as_str().unwrap()), |lasts| {
            let (status, body) = lock(&lasts);
            prop_assert_eq!(status, 200, "{}: {}", lasts, body);
            Ok(())
        })
        .unwrap();
}
