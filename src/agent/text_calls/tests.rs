//! Each format a model writes its calls in, with generated names and
//! arguments (quotes, newlines, any unicode); prose and broken JSON.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn call(name: &str, arguments: Value) -> Found {
    Found::Call { name: name.to_string(), arguments }
}

fn calls(found: &[Found]) -> Vec<&Found> {
    found.iter().filter(|f| matches!(f, Found::Call { .. })).collect()
}

/// The JSON object a model writes for one call.
fn object(name: &str, arguments: &Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// `value` as Python source: strings single- or double-quoted.
fn python_value(value: &Value, single_quotes: bool) -> String {
    match value {
        Value::String(s) if single_quotes => {
            let mut out = String::from("'");
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\'' => out.push_str("\\'"),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
            }
            out + "'"
        }
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

fn python(name: &str, arguments: &Value, single_quotes: bool) -> String {
    let arguments: Vec<String> =
        arguments.as_object().unwrap().iter().map(|(k, v)| format!("{k}={}", python_value(v, single_quotes))).collect();
    format!("{name}({})", arguments.join(", "))
}

/// `name (key: value, ...)`, as Qwen2.5-Coder 1.5B also writes its calls.
fn with_colons(name: &str, arguments: &Value) -> String {
    let arguments: Vec<String> =
        arguments.as_object().unwrap().iter().map(|(k, v)| format!("{k}: {}", python_value(v, false))).collect();
    format!("{name} ({})", arguments.join(", "))
}

fn tool_name() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(TOOL_NAMES.to_vec())
}

fn argument_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::String),
        "[a-z\"' \n\\\\]{0,20}".prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

fn arguments() -> impl Strategy<Value = Value> {
    let keys = proptest::sample::select(vec![
        "text", "todo_id", "status", "answer", "reason", "delay", "question", "summary", "outcome",
    ]);
    proptest::collection::btree_map(keys, argument_value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

fn some_calls() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    proptest::collection::vec((tool_name(), arguments()), 1..4)
}

proptest! {
    /// Any call, written in any of the formats, reads back as itself.
    #[test]
    fn every_format_reads_back_the_calls_written(written in some_calls(), prose in "[A-Za-z ,.!]{0,30}") {
        let expected: Vec<Found> = written.iter().map(|(n, a)| call(n, a.clone())).collect();
        let objects: Vec<Value> = written.iter().map(|(n, a)| object(n, a)).collect();
        let hermes: String =
            objects.iter().map(|o| format!("<tool_call>\n{o}\n</tool_call>\n")).collect();
        let list = Value::Array(objects.clone());
        let texts = [
            format!("{prose}\n{hermes}"),
            hermes.replace('\n', ""),
            list.to_string(),
            serde_json::to_string_pretty(&list).unwrap(),
            format!("{prose}\n```json\n{}\n```\n", serde_json::to_string_pretty(&list).unwrap()),
            objects.iter().map(|o| format!("```json\n{o}\n```")).collect::<Vec<_>>().join("\n\n"),
            objects.iter().map(Value::to_string).collect::<Vec<_>>().join("\n"),
            // The arguments as a JSON string holding the object.
            written
                .iter()
                .map(|(n, a)| json!({"name": n, "arguments": a.to_string()}).to_string())
                .collect::<Vec<_>>()
                .join("\n"),
            written.iter().map(|(n, a)| python(n, a, false)).collect::<Vec<_>>().join("\n"),
            written.iter().map(|(n, a)| python(n, a, true)).collect::<Vec<_>>().join("; "),
            written.iter().map(|(n, a)| format!("{n}({a})")).collect::<Vec<_>>().join("\n"),
            written.iter().map(|(n, a)| with_colons(n, a)).collect::<Vec<_>>().join("\n"),
            // Doubled braces, as the same model wrote its JSON calls.
            objects.iter().map(|o| format!("{{{o}}}")).collect::<Vec<_>>().join("\n"),
        ];
        for text in texts {
            prop_assert_eq!(&find(&text), &expected, "{}", text);
        }
    }

    /// Prose that names no tool is no call, whatever its punctuation.
    #[test]
    fn prose_naming_no_tool_yields_nothing(text in "[A-Za-z0-9 ,.!?'\"(){}\\[\\]:;=\n-]{0,300}") {
        prop_assert_eq!(find(&text), Vec::<Found>::new());
    }

    /// Broken JSON (any cut of a call) is never a call: a reply that is
    /// nothing but the broken call is an error for the model.
    #[test]
    fn broken_json_is_never_a_call(name in tool_name(), arguments in arguments(), cut in any::<proptest::sample::Index>()) {
        let whole = object(name, &arguments).to_string();
        let ends: Vec<usize> = whole.char_indices().map(|(i, _)| i).filter(|&i| i > 0).collect();
        let cut = &whole[..ends[cut.index(ends.len())]];
        for text in [cut.to_string(), format!("<tool_call>{cut}</tool_call>"), format!("```json\n{cut}\n```")] {
            let found = find(&text);
            prop_assert!(calls(&found).is_empty(), "{} gave {:?}", text, found);
            // Inside the tags it was meant as a call: the model is told.
            prop_assert!(!text.starts_with(TAG_OPEN) || !found.is_empty());
        }
    }
}

#[test]
fn the_common_shapes() {
    assert_eq!(
        find(r#"<tool_call>{"name": "send_message", "arguments": {"text": "Hi!"}}</tool_call>"#),
        [call("send_message", json!({"text": "Hi!"}))]
    );
    assert_eq!(
        find("mark_todo_item(todo_id=\"1\", status='completed', answer=None)"),
        [call("mark_todo_item", json!({"todo_id": "1", "status": "completed", "answer": null}))]
    );
    assert_eq!(find("place_call()"), [call("place_call", json!({}))]);
    assert_eq!(
        find(r#"Mark_todo_item({"todo_id": "1", "status": "skipped"})"#),
        [call("mark_todo_item", json!({"todo_id": "1", "status": "skipped"}))]
    );
    // As Qwen2.5-Coder 1.5B wrote it, at the start of its reply.
    assert_eq!(
        find(r#"Mark_todo_item(todo_id="1", status="skipped")"#),
        [call("mark_todo_item", json!({"todo_id": "1", "status": "skipped"}))]
    );
    assert_eq!(find(r#"{"name": "place_call"}"#), [call("place_call", json!({}))]);
    // Llama-style "parameters", and OpenAI's wrapper written as text.
    assert_eq!(
        find(r#"{"name": "end_conversation", "parameters": {"reason": "done"}}"#),
        [call("end_conversation", json!({"reason": "done"}))]
    );
    assert_eq!(
        find(r#"{"type": "function", "function": {"name": "send_message", "arguments": "{\"text\": \"x\"}"}}"#),
        [call("send_message", json!({"text": "x"}))]
    );
    // An unknown tool is found, for the strict parse to refuse.
    assert_eq!(find(r#"{"name": "send", "arguments": {}}"#), [call("send", json!({}))]);
}

#[test]
fn what_is_not_a_call() {
    for text in [
        "send_message(\"hi\")", // positional
        "send_message({\"text\": \"hi\"}, 2)",
        "send_message({'text': 'hi'})", // a Python dict is not JSON
        "send_message(text=hi)",        // not a value
        "send_message(text=\"hi\"",     // never closed
        "I will use send_message to write to them.",
        "the signature is send_message(text)",
        "resend_message(text=\"hi\")",           // another name
        r#"{"name": "Alice", "age": 3}"#,        // JSON, no call
        r#"{"note": "send_message(text='x')"}"#, // a string's text is not read
    ] {
        assert!(calls(&find(text)).is_empty(), "{text}: {:?}", find(text));
    }
}

#[test]
fn a_call_that_cannot_be_read_says_so() {
    let found = find("<tool_call>{\"name\": \"send_message\", \"arguments\": {\"text\": \"hi\"</tool_call>");
    assert!(matches!(&found[..], [Found::Unreadable(why)] if why.contains("<tool_call>")), "{found:?}");
    let found = find("```json\n{\"name\": \"send_message\", \"arguments\": {text: hi}}\n```");
    assert!(matches!(&found[..], [Found::Unreadable(why)] if why.contains("not valid JSON")), "{found:?}");
}
