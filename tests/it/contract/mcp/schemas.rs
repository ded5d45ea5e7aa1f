//! The tools' input schemas against the daemon: they carry its limits, and
//! what they refuse the daemon refuses, what they admit it takes.

use crate::support::{CONTACT, OTHER_CONTACT, Relay};
use serde_json::{Value, json};

use super::client::*;

/// The tools' input schemas, by tool name, as `tools/list` gives them.
fn input_schemas(mcp: &mut McpClient) -> serde_json::Map<String, Value> {
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    tools.iter().map(|t| (t["name"].as_str().unwrap().to_string(), t["inputSchema"].clone())).collect()
}

/// The string arguments that carry no limit, enum or pattern, because the
/// daemon has none to state there (durations, zones and quiet hours are
/// read by their own parsers; an answer kind may be a JSON schema).
const FREE_TEXT: [(&str, &str); 4] = [
    ("create_conversation", "heartbeat_interval"),
    ("create_conversation", "time_zone"),
    ("create_conversation", "quiet_hours"),
    ("create_conversation", "expires_in"),
];

/// Every input schema states the limits the daemon enforces, from the
/// constants it enforces them with (`relay::api::limits`, the contact's
/// pattern, the state names): a limit that disappears from a schema, or
/// drifts from the daemon's, fails here. Every `id` is an id (pattern and
/// shortest prefix), every `contact` a phone number (the pattern), and a
/// new text argument without a limit must be named in `FREE_TEXT`.
#[test]
fn input_schemas_carry_the_daemons_limits() {
    use relay::api::limits;
    let relay = Relay::sandbox();
    let (mut mcp, _) = McpClient::connect(&relay);
    let schemas = input_schemas(&mut mcp);
    let contact = json!(relay::contact::pattern());
    let key = json!(limits::IDEMPOTENCY_KEY_PATTERN);
    let table: Vec<(&str, &str, &str, Value)> = vec![
        ("create_conversation", "objective", "minLength", json!(1)),
        ("create_conversation", "objective", "maxLength", json!(limits::MAX_OBJECTIVE_CHARS)),
        ("create_conversation", "contact", "pattern", contact.clone()),
        ("create_conversation", "todos", "minItems", json!(1)),
        ("create_conversation", "todos", "maxItems", json!(limits::MAX_TODOS)),
        ("create_conversation", "todos/items", "minLength", json!(1)),
        ("create_conversation", "todos/items", "maxLength", json!(limits::MAX_TODO_CHARS)),
        ("create_conversation", "answers", "maxProperties", json!(limits::MAX_TODOS)),
        ("create_conversation", "max_followups", "maximum", json!(limits::MAX_FOLLOWUPS)),
        ("create_conversation", "override_opt_out", "minLength", json!(1)),
        ("create_conversation", "override_opt_out", "maxLength", json!(limits::MAX_REASON_CHARS)),
        ("create_conversation", "max_turns", "minimum", json!(1)),
        ("create_conversation", "max_tokens", "minimum", json!(1)),
        ("create_conversation", "expires_at", "format", json!("date-time")),
        ("create_conversation", "attach", "maxItems", json!(limits::MAX_ATTACHMENTS)),
        ("create_conversation", "attach/items", "minLength", json!(1)),
        ("create_conversation", "idempotency_key", "minLength", json!(1)),
        ("create_conversation", "idempotency_key", "maxLength", json!(limits::MAX_IDEMPOTENCY_KEY_CHARS)),
        ("create_conversation", "idempotency_key", "pattern", key.clone()),
        ("send_to_contact", "message", "minLength", json!(1)),
        ("send_to_contact", "message", "maxLength", json!(limits::MAX_MESSAGE_CHARS)),
        ("send_to_contact", "idempotency_key", "minLength", json!(1)),
        ("send_to_contact", "idempotency_key", "maxLength", json!(limits::MAX_IDEMPOTENCY_KEY_CHARS)),
        ("send_to_contact", "idempotency_key", "pattern", key),
        ("answer_question", "answer", "minLength", json!(1)),
        ("answer_question", "answer", "maxLength", json!(limits::MAX_REASON_CHARS)),
        ("add_opt_out", "contact", "pattern", contact.clone()),
        ("add_opt_out", "reason", "minLength", json!(1)),
        ("add_opt_out", "reason", "maxLength", json!(limits::MAX_REASON_CHARS)),
        ("remove_opt_out", "contact", "pattern", contact.clone()),
        ("list_conversations", "contact", "pattern", contact.clone()),
        ("list_conversations", "state", "pattern", json!(relay::fsm::State::list_pattern())),
        ("list_conversations", "limit", "maximum", json!(relay::api::paging::MAX_LIMIT)),
        ("wait_for_conversation", "timeout_seconds", "maximum", json!(limits::MAX_WAIT.as_secs())),
        ("wait_for_conversation", "until", "pattern", json!(relay::engine::wait::Until::pattern())),
    ];
    let property = |tool: &str, path: &str| -> Value {
        let mut at = &schemas.get(tool).unwrap_or_else(|| panic!("no tool {tool}"))["properties"];
        for step in path.split('/') {
            at = &at[step];
        }
        at.clone()
    };
    for (tool, path, keyword, expected) in &table {
        assert_eq!(&property(tool, path)[keyword], expected, "{tool}.{path}: {keyword}");
    }
    // answers' keys: the todo ids, 1 to MAX_TODOS, and nothing else.
    let keys = property("create_conversation", "answers")["propertyNames"]["pattern"].clone();
    let keys = regex::Regex::new(keys.as_str().expect("answers' keys have a pattern")).unwrap();
    for n in 1..=limits::MAX_TODOS {
        assert!(keys.is_match(&n.to_string()), "todo {n}");
    }
    for wrong in ["0", "01", "a", "", " 1", &(limits::MAX_TODOS * 10).to_string()] {
        assert!(!keys.is_match(wrong), "{wrong:?}");
    }

    // The rules for every tool: ids, contacts, and text with a limit.
    for (tool, schema) in &schemas {
        for (name, declared) in schema["properties"].as_object().into_iter().flatten() {
            let at = format!("{tool}.{name}");
            match name.as_str() {
                "id" => {
                    assert_eq!(declared["minLength"], json!(limits::MIN_ID_PREFIX), "{at}");
                    assert_eq!(declared["pattern"], json!(limits::ID_PATTERN), "{at}");
                }
                "contact" => assert_eq!(declared["pattern"], contact, "{at}"),
                _ => {}
            }
            let text = if declared["type"] == "array" { &declared["items"] } else { declared };
            if text["type"] == "string" && !FREE_TEXT.contains(&(tool.as_str(), name.as_str())) {
                let bounded = ["maxLength", "pattern", "enum", "format"].iter().any(|k| text.get(*k).is_some());
                assert!(bounded, "{at}: text with no limit, enum, pattern or format (or name it in FREE_TEXT)");
            }
        }
    }
    assert_eq!(mcp.close(), Some(0));
}

/// Whether relay refused the arguments for their form: a tool error with
/// the daemon's `invalid_request` or MCP's own `invalid_arguments`.
fn refused_for_form(result: &Value) -> bool {
    result["isError"] == true
        && (text(result).contains("code: invalid_request") || text(result).contains("code: invalid_arguments"))
}

/// The words of `Contact::parse`'s refusals of a number's country (code or
/// length), which no pattern can foresee.
const COUNTRY_REFUSALS: [&str; 4] = [
    "no country code starts its digits",
    "digits after the country code",
    "too short to be a phone number",
    "do not read back",
];

/// What the schemas declare, the daemon does, both ways: arguments that
/// break a declared maxLength, maxItems, maximum, minimum, pattern or enum
/// are refused, and arguments within them are taken (a tool error that is
/// not about their form counts as taken: no question to answer, an id
/// nothing has). The limits are read from `tools/list`, so a schema that
/// promises more than the daemon takes fails here, as does one that is
/// looser. Generated by proptest: text of any length around each limit
/// (with characters outside the BMP, counted as one as both sides count
/// them), contacts written from the schema's pattern, real numbers written
/// with separators, and numbers spoilt by a character or a digit too many.
#[test]
fn arguments_outside_the_schemas_are_refused_and_inside_taken() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config as ProptestConfig, RngSeed, TestRunner};
    use relay::api::limits;

    let relay = Relay::started();
    let (mut mcp, _) = McpClient::connect(&relay);
    let schemas = input_schemas(&mut mcp);
    let declared = |tool: &str, path: &str, keyword: &str| -> Value {
        let mut at = &schemas[tool]["properties"];
        for step in path.split('/') {
            at = &at[step];
        }
        at[keyword].clone()
    };
    let conversation = json!({"objective": "Confirm the delivery date", "contact": CONTACT, "todos": ["Ask the day"]});
    let id = document(&mcp.call("create_conversation", conversation.clone()))["id"].as_str().unwrap().to_string();
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let config = |cases| ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(26),
        ..ProptestConfig::default()
    };

    // Text: each limited argument, with a base call it fits in.
    let texts: Vec<(&str, Value, &str, &str)> = vec![
        ("create_conversation", conversation.clone(), "/objective", "objective"),
        ("create_conversation", conversation.clone(), "/todos/0", "todos/items"),
        ("create_conversation", conversation.clone(), "/override_opt_out", "override_opt_out"),
        ("send_to_contact", json!({"id": id, "message": "m"}), "/message", "message"),
        ("answer_question", json!({"id": id, "answer": "a"}), "/answer", "answer"),
        ("add_opt_out", json!({"contact": OTHER_CONTACT, "reason": "r"}), "/reason", "reason"),
    ];
    let mcp = std::cell::RefCell::new(mcp);
    let call = |tool: &str, arguments: Value| mcp.borrow_mut().call(tool, arguments);
    // `base` with `value` at `pointer` (set, or added to its object).
    let with = |base: &Value, pointer: &str, value: Value| {
        let mut arguments = base.clone();
        let (parent, last) = pointer.rsplit_once('/').unwrap();
        match arguments.pointer_mut(parent).unwrap_or_else(|| panic!("{parent} in {base}")) {
            Value::Object(object) => _ = object.insert(last.to_string(), value),
            Value::Array(items) => items[last.parse::<usize>().unwrap()] = value,
            other => panic!("{pointer}: {other}"),
        }
        arguments
    };
    // The edges themselves, then around them.
    for (tool, base, pointer, path) in &texts {
        let max = declared(tool, path, "maxLength").as_u64().unwrap_or_else(|| panic!("{tool}.{path}")) as usize;
        for filler in ["x", "🙂"] {
            let taken = call(tool, with(base, pointer, json!(filler.repeat(max))));
            assert!(!refused_for_form(&taken), "{tool}{pointer} of {max} characters: {taken}");
            let refused = call(tool, with(base, pointer, json!(filler.repeat(max + 1))));
            assert!(refused_for_form(&refused), "{tool}{pointer} of {} characters: {refused}", max + 1);
        }
    }
    let mut runner = TestRunner::new(config(48));
    let filler = prop::sample::select(vec!['x', 'é', '日', '🙂']);
    runner
        .run(&(prop::sample::select((0..texts.len()).collect::<Vec<_>>()), filler, 0usize..40), |(n, filler, by)| {
            let (tool, base, pointer, path) = &texts[n];
            let max = declared(tool, path, "maxLength").as_u64().unwrap_or_else(|| panic!("{tool}.{path}")) as usize;
            let within = filler.to_string().repeat(max.saturating_sub(by).max(1));
            let taken = call(tool, with(base, pointer, json!(within)));
            prop_assert!(
                !refused_for_form(&taken),
                "{tool}{pointer} of {} characters: {taken}",
                within.chars().count()
            );
            let beyond = filler.to_string().repeat(max + 1 + by);
            let refused = call(tool, with(base, pointer, json!(beyond)));
            prop_assert!(refused_for_form(&refused), "{tool}{pointer} of {} characters: {refused}", max + 1 + by);
            Ok(())
        })
        .unwrap();
    // And text of spaces alone, which minLength 1 lets through, is refused
    // (it is trimmed first: the schemas' descriptions of the API say so).
    assert!(refused_for_form(&call("send_to_contact", json!({"id": id, "message": " "}))));

    // Contacts. The schema's own pattern, as a client reads it.
    let pattern = declared("list_conversations", "contact", "pattern");
    let pattern = pattern.as_str().unwrap().to_string();
    let matcher = regex::Regex::new(&pattern).unwrap();
    let body = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$')).unwrap().to_string();
    let listed = |contact: &str| call("list_conversations", json!({"contact": contact}));
    let mut runner = TestRunner::new(config(64));
    runner
        .run(&proptest::string::string_regex(&body).unwrap(), |contact| {
            prop_assert!(matcher.is_match(&contact), "{}", contact);
            let result = listed(&contact);
            let country = COUNTRY_REFUSALS.iter().any(|words| text(&result).contains(words));
            prop_assert!(result["isError"] == false || country, "{contact:?} matches the pattern: {result}");
            Ok(())
        })
        .unwrap();
    let numbers = [CONTACT, OTHER_CONTACT, "+14155552671", "+4915123456789", "+5511987654321", "+819012345678"];
    let written = (prop::sample::select(numbers.to_vec()), prop::collection::vec((1usize..15, "[ .()-]{1,2}"), 0..5));
    let mut runner = TestRunner::new(config(32));
    runner
        .run(&written, |(number, separators)| {
            let mut contact = String::from("+");
            for (i, digit) in number[1..].chars().enumerate() {
                separators.iter().filter(|(at, _)| *at == i).for_each(|(_, s)| contact.push_str(s));
                contact.push(digit);
            }
            prop_assert!(matcher.is_match(&contact), "{}", contact);
            let result = listed(&contact);
            prop_assert!(result["isError"] == false, "{contact:?}: {result}");
            Ok(())
        })
        .unwrap();
    let spoilt = prop_oneof![
        (prop::sample::select(numbers.to_vec()), 1usize..12, "[a-zA-Z*#,;/+_x]").prop_map(|(number, at, bad)| format!(
            "{}{bad}{}",
            &number[..at],
            &number[at..]
        )),
        prop::sample::select(numbers.to_vec()).prop_map(|number| number[1..].to_string()),
        // More digits than E.164's 15.
        (prop::sample::select(numbers.to_vec()), 1usize..4, "[0-9]")
            .prop_map(|(number, more, digit)| format!("{number}{}", digit.repeat(16 - (number.len() - 1) + more - 1))),
    ];
    let mut runner = TestRunner::new(config(32));
    runner
        .run(&spoilt, |contact| {
            prop_assert!(!matcher.is_match(&contact), "{}", contact);
            let result = listed(&contact);
            prop_assert!(refused_for_form(&result), "{contact:?}: {result}");
            prop_assert!(!COUNTRY_REFUSALS.iter().any(|words| text(&result).contains(words)), "{result}");
            Ok(())
        })
        .unwrap();

    // Numbers, enums and the rest, at their edges.
    let todos = |n: usize| json!((1..=n).map(|i| format!("todo {i}")).collect::<Vec<_>>());
    let max_todos = declared("create_conversation", "todos", "maxItems").as_u64().unwrap() as usize;
    let max_followups = declared("create_conversation", "max_followups", "maximum").as_u64().unwrap();
    let max_wait = declared("wait_for_conversation", "timeout_seconds", "maximum").as_u64().unwrap();
    let min_id = declared("get_conversation", "id", "minLength").as_u64().unwrap() as usize;
    let any_state = relay::api::State::ALL.map(|s| s.as_str()).join(",");
    let create = |field: &str, value: Value| with(&conversation, &format!("/{field}"), value);
    let mut inside_and_outside: Vec<(&str, Value, Value)> = vec![
        ("create_conversation", create("todos", todos(max_todos)), create("todos", todos(max_todos + 1))),
        ("create_conversation", create("todos", todos(1)), create("todos", todos(0))),
        (
            "create_conversation",
            {
                let mut c = create("max_followups", json!(max_followups));
                c["heartbeat_interval"] = json!("1h");
                c
            },
            create("max_followups", json!(max_followups + 1)),
        ),
        ("create_conversation", create("max_turns", json!(1)), create("max_turns", json!(0))),
        ("create_conversation", create("max_tokens", json!(1)), create("max_tokens", json!(0))),
        ("create_conversation", create("answers", json!({"1": "date"})), create("answers", json!({"0": "date"}))),
        (
            "create_conversation",
            create("idempotency_key", json!("k".repeat(limits::MAX_IDEMPOTENCY_KEY_CHARS))),
            create("idempotency_key", json!("k".repeat(limits::MAX_IDEMPOTENCY_KEY_CHARS + 1))),
        ),
        (
            "create_conversation",
            create("idempotency_key", json!("order-1042!")),
            create("idempotency_key", json!("order 1042")),
        ),
        (
            "create_conversation",
            create("expires_at", json!((chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339())),
            create("expires_at", json!("tomorrow")),
        ),
        (
            "wait_for_conversation",
            // Any state at all: reached at once, whatever the conversation is doing.
            json!({"id": id, "until": any_state, "timeout_seconds": max_wait}),
            json!({"id": id, "timeout_seconds": max_wait + 1}),
        ),
        (
            "wait_for_conversation",
            json!({"id": id, "until": "terminal,NEEDS_HUMAN_INTERVENTION", "timeout_seconds": 0}),
            json!({"id": id, "until": "DONE"}),
        ),
        ("get_conversation", json!({"id": id[..min_id]}), json!({"id": id[..min_id - 1]})),
        ("get_conversation", json!({"id": id}), json!({"id": "zzzz"})),
    ];
    for state in relay::fsm::State::ALL.map(|s| s.as_str()).into_iter().chain(["terminal,PAUSED"]) {
        inside_and_outside.push(("list_conversations", json!({"state": state}), json!({"state": "DONE"})));
    }
    inside_and_outside.push(("list_conversations", json!({"limit": 1000}), json!({"limit": 1001})));
    inside_and_outside.push(("list_conversations", json!({"limit": 1}), json!({"limit": 0})));
    for (tool, inside, outside) in inside_and_outside {
        let taken = call(tool, inside.clone());
        assert!(!refused_for_form(&taken), "{tool} {inside}: {taken}");
        let refused = call(tool, outside.clone());
        assert!(refused_for_form(&refused), "{tool} {outside}: {refused}");
    }
    assert_eq!(mcp.borrow_mut().close(), Some(0));
}
