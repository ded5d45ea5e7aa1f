//! The tools' schemas, their strict parsing, and docs/conversation-agent.md's list of them.

use std::time::Duration;

use super::*;
use crate::api::{Outcome, TodoStatus, limits};

#[test]
fn valid_calls_parse() {
    assert_eq!(parse("send_message", json!({"text": "hi"})), Ok(ToolCall::SendMessage { text: "hi".into() }));
    assert_eq!(
        parse("send_attachment", json!({"attachment_id": "a1", "caption": "the invoice"})),
        Ok(ToolCall::SendAttachment { attachment_id: "a1".into(), caption: Some("the invoice".into()) })
    );
    assert_eq!(
        parse("send_attachment", json!({"attachment_id": "a2"})),
        Ok(ToolCall::SendAttachment { attachment_id: "a2".into(), caption: None })
    );
    assert_eq!(
        parse("mark_todo_item", json!({"todo_id": 2, "status": "completed", "answer": "Friday"})),
        Ok(ToolCall::MarkTodoItem {
            todo_id: "2".into(),
            status: TodoStatus::Completed,
            answer: Some("Friday".into()),
            value: None,
            quote: None,
            media: None,
        })
    );
    assert_eq!(
        parse("schedule_next_heartbeat", json!({"delay": "2h"})),
        Ok(ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(7200) })
    );
    assert_eq!(
        parse("schedule_next_heartbeat", json!({"delay": 90})),
        Ok(ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(90) })
    );
    assert_eq!(parse("place_call", Value::Null), Ok(ToolCall::PlaceCall));
    assert_eq!(parse("place_call", json!("{}")), Ok(ToolCall::PlaceCall));
}

/// The seeds' signatures: `end_conversation(reason)` and
/// `mark_todo_item(todo_id, status)`; the rest is optional.
#[test]
fn the_seeds_signatures_are_accepted() {
    assert_eq!(
        parse("end_conversation", json!({"reason": "all done"})),
        Ok(ToolCall::EndConversation { reason: "all done".into(), outcome: None, summary: None })
    );
    assert_eq!(
        parse("end_conversation", json!({"reason": "r", "outcome": "declined", "summary": "said no"})),
        Ok(ToolCall::EndConversation {
            reason: "r".into(),
            outcome: Some(Outcome::Declined),
            summary: Some("said no".into())
        })
    );
    assert_eq!(
        parse("mark_todo_item", json!({"todo_id": "1", "status": "skipped"})),
        Ok(ToolCall::MarkTodoItem {
            todo_id: "1".into(),
            status: TodoStatus::Skipped,
            answer: None,
            value: None,
            quote: None,
            media: None,
        })
    );
    // Older prompts call the answer a note.
    assert_eq!(
        parse("mark_todo_item", json!({"todo_id": "1", "status": "completed", "note": "3pm"})),
        Ok(ToolCall::MarkTodoItem {
            todo_id: "1".into(),
            status: TodoStatus::Completed,
            answer: Some("3pm".into()),
            value: None,
            quote: None,
            media: None,
        })
    );
}

#[test]
fn a_recipient_or_any_extra_argument_is_refused() {
    for (name, args) in [
        ("send_message", json!({"text": "hi", "to": "+15550001111"})),
        ("send_message", json!({"text": "hi", "recipient": "+15550001111"})),
        ("place_call", json!({"number": "+15550001111"})),
        ("send_attachment", json!({"attachment_id": "a1", "to": "+15550001111"})),
        ("send_attachment", json!({"attachment_id": "a1", "path": "/etc/passwd"})),
        ("end_conversation", json!({"reason": "done", "notify": "+1"})),
    ] {
        let error = parse(name, args).unwrap_err();
        assert!(error.0.contains("is not an argument of this tool") && error.0.contains("nothing was done"), "{error}");
    }
}

/// A refusal names the tool, the argument and why, in words a model can act on.
#[test]
fn a_refusal_names_the_argument_and_why() {
    // Each refusal ends with how to call the tool (checked here, then left out).
    let said = |name: &str, args: Value| {
        let refusal = parse(name, args).unwrap_err().0;
        let definition = definitions().into_iter().find(|d| d.name == name).unwrap();
        let ending = format!(". Call it as {}", signature(&definition));
        refusal.strip_suffix(&ending).unwrap_or_else(|| panic!("{refusal} does not end with {ending}")).to_string()
    };
    assert_eq!(said("send_message", json!({})), "send_message: missing `text`; nothing was done");
    assert_eq!(
        said("send_message", json!({"text": 5})),
        "send_message: `text` must be a string, not the number 5; nothing was done"
    );
    assert_eq!(said("send_message", json!({"text": "  "})), "send_message: `text` is empty; nothing was done");
    assert_eq!(
        said("end_conversation", json!({"reason": "r", "outcome": "great"})),
        "end_conversation: `outcome` must be one of achieved, partially_achieved, declined, failed \
         (not \"great\"); nothing was done"
    );
    assert_eq!(
        said("end_conversation", json!({"outcome": "achieved", "summary": "done"})),
        "end_conversation: missing `reason`; nothing was done"
    );
    assert_eq!(
        said("mark_todo_item", json!({"todo_id": "1", "status": "done"})),
        "mark_todo_item: `status` must be one of pending, in_progress, completed, skipped (not \"done\"); \
         nothing was done"
    );
    assert_eq!(
        said("send_message", json!({"text": "hi", "to": "+1"})),
        "send_message: `to` is not an argument of this tool (its arguments are `text`); nothing was done"
    );
    assert_eq!(
        said("place_call", json!({"number": "+1"})),
        "place_call: `number` is not an argument of this tool (it takes none); nothing was done"
    );
    let long = "x".repeat(limits::MAX_MESSAGE_CHARS + 1);
    assert!(said("send_message", json!({"text": long})).contains("`text` is too long (4097 characters; at most 4096)"));
    assert!(said("send_message", json!("{not json")).starts_with("send_message: the arguments are not valid JSON"));
    assert!(said("send_message", json!([1])).contains("the arguments must be a JSON object, not a list"));
    assert!(said("schedule_next_heartbeat", json!({"delay": -5})).contains("`delay` must be at least 0"));
    assert!(said("schedule_next_heartbeat", json!({"delay": "soon"})).contains("`delay` must be seconds"));
    assert!(
        said("mark_todo_item", json!({"todo_id": [1], "status": "completed"})).contains("`todo_id` must be a string")
    );
}

#[test]
fn unknown_tools_are_tool_errors() {
    assert!(parse("read_file", json!({"path": "/etc/passwd"})).unwrap_err().0.contains("there is no tool 'read_file'"));
}

/// An unknown tool is answered with every tool's signature, generated from
/// the schemas: what the model needs to call the right one.
#[test]
fn an_unknown_tool_is_answered_with_the_signatures() {
    assert_eq!(
        parse("send", json!({"text": "hi"})).unwrap_err().0,
        "there is no tool 'send'; the tools are send_message(text), send_attachment(attachment_id, caption?), mark_todo_item(todo_id, status, answer?, value?, quote?, media?), \
         end_conversation(reason, outcome?, summary?), schedule_next_heartbeat(delay), place_call(), \
         request_human_intervention(reason, question?), contact_opted_out(reason)"
    );
}

#[test]
fn the_model_is_offered_exactly_eight_tools_none_with_a_recipient() {
    let defs = definitions();
    let names: Vec<&str> = defs.iter().map(|d| d.name).collect();
    assert_eq!(names, NAMES, "NAMES is the definitions' names");
    assert_eq!(
        names,
        [
            "send_message",
            "send_attachment",
            "mark_todo_item",
            "end_conversation",
            "schedule_next_heartbeat",
            "place_call",
            "request_human_intervention",
            "contact_opted_out"
        ]
    );
    for def in &defs {
        let schema = &def.parameters;
        assert_eq!(schema["type"], "object", "{}", def.name);
        assert_eq!(schema["additionalProperties"], false, "{}", def.name);
        assert!(schema.get("$defs").is_none() && !schema.to_string().contains("$ref"), "inlined: {schema}");
        assert!(!def.description.is_empty());
        for field in schema["properties"].as_object().unwrap().keys() {
            assert!(!["to", "recipient", "contact", "number", "phone"].contains(&field.as_str()), "{field}");
        }
    }
    // The limits are in the schemas the model is sent.
    assert_eq!(defs[0].parameters["properties"]["text"]["maxLength"], limits::MAX_MESSAGE_CHARS);
    assert_eq!(defs[1].parameters["properties"]["caption"]["maxLength"], limits::MAX_CAPTION_CHARS);
    assert_eq!(defs[1].parameters["required"], json!(["attachment_id"]));
    assert_eq!(defs[2].parameters["properties"]["answer"]["maxLength"], limits::MAX_NOTE_CHARS);
    assert_eq!(defs[3].parameters["required"], json!(["reason"]));
    let offered: Vec<&str> = defs[3].parameters["properties"]["outcome"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(offered, Outcome::AGENT_CHOICES.map(Outcome::as_str));
}

/// docs/conversation-agent.md lists the tools between markers; this regenerates the
/// list and compares. To refresh the page after changing a tool:
/// `RELAY_REFRESH_DOCS=1 cargo test --lib agent::tools`.
#[test]
fn docs_agent_md_lists_the_tools_the_model_is_sent() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/conversation-agent.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- tools:begin (generated from src/agent/tools/mod.rs) -->\n", "<!-- tools:end -->");
    let start = page.find(begin).expect("docs/conversation-agent.md has the tools:begin marker") + begin.len();
    let stop = page[start..].find(end).expect("docs/conversation-agent.md has the tools:end marker") + start;
    let generated = markdown();
    if page[start..stop] != generated {
        if std::env::var_os("RELAY_REFRESH_DOCS").is_some() {
            std::fs::write(&path, format!("{}{generated}{}", &page[..start], &page[stop..])).unwrap();
            return;
        }
        panic!(
            "docs/conversation-agent.md's tool list differs from the schemas the model is sent; refresh it with \
             `RELAY_REFRESH_DOCS=1 cargo test --lib agent::tools`. Generated:\n{generated}"
        );
    }
}

/// The one list: every tool's name reads back as that tool, its definition
/// carries the name, and a call parsed under the name is of that tool.
#[test]
fn every_tool_name_round_trips_through_definition_and_parse() {
    let minimal = |tool: ToolName| match tool {
        ToolName::SendMessage => json!({"text": "hi"}),
        ToolName::SendAttachment => json!({"attachment_id": "a1"}),
        ToolName::MarkTodoItem => json!({"todo_id": "1", "status": "skipped"}),
        ToolName::EndConversation | ToolName::ContactOptedOut | ToolName::RequestHumanIntervention => {
            json!({"reason": "r"})
        }
        ToolName::ScheduleNextHeartbeat => json!({"delay": 60}),
        ToolName::PlaceCall => json!({}),
    };
    for tool in ToolName::ALL {
        assert_eq!(ToolName::from_name(tool.as_str()), Some(tool));
        assert_eq!(tool.definition().name, tool.as_str());
        assert_eq!(parse(tool.as_str(), minimal(tool)).map(|call| call.tool()), Ok(tool));
    }
    let mut names = NAMES.to_vec();
    names.dedup();
    assert_eq!(names.len(), ToolName::ALL.len());
}
