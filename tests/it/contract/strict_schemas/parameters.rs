//! Path, query and header parameters: conversation and webhook ids, the
//! `Idempotency-Key`, and where an event stream starts.

use relay::api::limits;

use super::*;

/// Every conversation `{id}` (and `/events`' `instance`) carries the
/// resolver's pattern; what it admits is looked up (200 or 404), what it
/// refuses is refused, on every such route.
#[test]
fn conversation_ids_are_what_the_resolver_takes() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    let mut routes = Vec::new();
    for (path, item) in document()["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let parameters = operation["parameters"].as_array().into_iter().flatten();
            let Some(parameter) = parameters.clone().find(|p| p["name"] == "id" && p["in"] == "path") else { continue };
            if !path.starts_with("/instances/") {
                continue;
            }
            assert_eq!(parameter["schema"]["pattern"], limits::ID_PATTERN, "{method} {path}");
            assert_eq!(parameter["schema"]["minLength"], limits::MIN_ID_PREFIX, "{method} {path}");
            routes.push((method.to_uppercase(), path.clone()));
        }
    }
    assert_eq!(routes.len(), 9, "{routes:?}");
    let instance = parameter_schema("get", "/events", "instance");
    assert_eq!(instance["pattern"], limits::ID_PATTERN);
    let instance = validator(instance);

    // The real one (read only) by its whole id and prefixes; others for what acts.
    let ids = [id.clone(), id[..8].to_string(), id[..4].to_uppercase(), "0000dead".into(), "0000-DEAD-00".into()];
    let refused =
        [("abc", "abc"), ("zzzz", "zzzz"), ("0000_dead", "0000_dead"), ("ab cd", "ab%20cd"), ("ab/c", "ab%2Fc")];
    let request = |method: &str, path: &str, given: &str| {
        let target = path.replace("{id}", given).replace("{message_id}", "00000000-0000-0000-0000-000000000000");
        match (method, path.rsplit('/').next().unwrap()) {
            ("GET", "wait") => relay.http("GET", &format!("{target}?timeout_ms=0"), &[], None),
            ("POST", "send") => relay.http("POST", &target, &[], Some(r#"{"message": "hi"}"#)),
            ("POST", "answer") => relay.http("POST", &target, &[], Some(r#"{"answer": "yes"}"#)),
            _ => relay.http(method, &target, &[], None),
        }
    };
    for (method, path) in &routes {
        let schema = validator(parameter_schema(&method.to_lowercase(), path, "id"));
        for given in ids.iter().filter(|given| method == "GET" || given.starts_with("0000")) {
            agree(&format!("{method} {path}"), &schema, &json!(given), true, request(method, path, given));
        }
        for (given, encoded) in refused {
            agree(&format!("{method} {path}"), &schema, &json!(given), false, request(method, path, encoded));
        }
    }
    for given in &ids {
        agree(
            "GET /events?instance",
            &instance,
            &json!(given),
            true,
            relay.http("GET", &format!("/events?instance={given}"), &[], None),
        );
    }
    for (given, encoded) in refused {
        agree(
            "GET /events?instance",
            &instance,
            &json!(given),
            false,
            relay.http("GET", &format!("/events?instance={encoded}"), &[], None),
        );
    }
    // Generated: whatever the pattern matches is looked up.
    let schema = validator(parameter_schema("get", "/instances/{id}", "id"));
    let prefix = matching(limits::ID_PATTERN).prop_filter("at its minLength", |s| s.len() >= limits::MIN_ID_PREFIX);
    runner(40)
        .run(&prefix, |given| {
            prop_assert!(schema.is_valid(&json!(given)));
            let (status, body) = relay.http("GET", &format!("/instances/{given}"), &[], None);
            prop_assert!(status == 200 || status == 404, "{}: {} {}", given, status, body);
            Ok(())
        })
        .unwrap();
}

/// A webhook's `{id}` carries the webhooks' pattern: `wh_` or not, any
/// case, at least 4 hex digits.
#[test]
fn webhook_ids_are_what_the_webhooks_take() {
    let relay = Relay::started();
    let pattern = relay::webhooks::id_pattern();
    let declared = parameter_schema("delete", "/webhooks/{id}", "id");
    assert_eq!(declared["pattern"], pattern);
    let schema = validator(declared);
    let delete = |given: &str| relay.http("DELETE", &format!("/webhooks/{given}"), &[], None);
    for given in ["wh_0000", "WH_00AB", "00ab", "0123456789ab"] {
        agree("DELETE /webhooks/{id}", &schema, &json!(given), true, delete(given));
    }
    for given in ["0", "wh_", "wh_zz00", "abc", "wh-0000"] {
        agree("DELETE /webhooks/{id}", &schema, &json!(given), false, delete(given));
    }
    runner(30)
        .run(&matching(&pattern), |given| {
            let (status, body) = delete(&given);
            prop_assert_eq!(status, 404, "{}: {}", given, body);
            Ok(())
        })
        .unwrap();
}

/// An `Idempotency-Key` is 1 to 255 printable ASCII characters without
/// spaces on both routes that take one; `after` and `Last-Event-ID` are
/// sequence numbers: unsigned 64-bit integers, as the handler parses them.
#[test]
fn keys_and_sequence_numbers_are_what_the_handlers_read() {
    let relay = Relay::started();
    for path in ["/instances", "/instances/{id}/send"] {
        let key = parameter_schema("post", path, "Idempotency-Key");
        assert_eq!(key["pattern"], limits::IDEMPOTENCY_KEY_PATTERN, "{path}");
        assert_eq!((&key["minLength"], &key["maxLength"]), (&json!(1), &json!(limits::MAX_IDEMPOTENCY_KEY_CHARS)));
    }
    let key = validator(parameter_schema("post", "/instances", "Idempotency-Key"));
    let create = |given: &str| {
        let body = create_body().to_string();
        relay.http("POST", "/instances", &[("Idempotency-Key", given)], Some(&body))
    };
    let longest = "k".repeat(limits::MAX_IDEMPOTENCY_KEY_CHARS);
    for given in ["k-1", "0b8e4f6a-uuid", longest.as_str()] {
        agree("Idempotency-Key", &key, &json!(given), true, create(given));
    }
    for given in [String::new(), "a b".into(), format!("{longest}k")] {
        agree("Idempotency-Key", &key, &json!(given), false, create(&given));
    }

    let after = parameter_schema("get", "/events", "after");
    assert_eq!((&after["format"], &after["maximum"]), (&json!("uint64"), &json!(u64::MAX)), "{after}");
    let after = validator(after);
    let events = |query: &str| relay.http("GET", &format!("/events?{query}"), &[], None);
    for (given, admitted) in
        [("0", true), ("18446744073709551615", true), ("100000000000000000000", false), ("-1", false)]
    {
        let value: Value = serde_json::from_str(given).unwrap();
        agree("after", &after, &value, admitted, events(&format!("after={given}")));
    }
    let last = parameter_schema("get", "/events", "Last-Event-ID");
    assert_eq!((&last["type"], &last["maximum"]), (&json!("integer"), &json!(u64::MAX)), "{last}");
    let last = validator(last);
    for (given, admitted) in [("3", true), ("18446744073709551615", true), ("x", false), ("-1", false)] {
        let value = serde_json::from_str(given).unwrap_or(json!(given));
        let answer = relay.http("GET", "/events", &[("Last-Event-ID", given)], None);
        agree("Last-Event-ID", &last, &value, admitted, answer);
    }
}
