//! What the model sees of its six tools (names, descriptions, JSON schemas),
//! and the strict parsing of its calls into [`ToolCall`]s. An unknown tool,
//! a missing or extra argument, or a value of the wrong type is a tool error
//! the model reads; it never acts. No tool takes a recipient.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolCall, ToolError};
use crate::api::{Outcome, TodoStatus};
use crate::engine::limits;

/// (name, description, JSON schema of the arguments)
pub fn definitions() -> Vec<(&'static str, &'static str, Value)> {
    let text = |description: &str, max: usize| json!({"type": "string", "minLength": 1, "maxLength": max, "description": description});
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties});
    vec![
        (
            "send_message",
            "Send a WhatsApp message to the contact of this conversation (the only person you can write to). \
             Keep it brief and natural, in the contact's language.",
            object(json!({"text": text("the message", limits::MAX_MESSAGE_CHARS)}), &["text"]),
        ),
        (
            "mark_todo_item",
            "Update a todo of this conversation. Put what you learned in the note (e.g. \"Friday 3pm confirmed\").",
            object(
                json!({
                    "todo_id": {"type": "string", "description": "the todo's id, e.g. \"1\""},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "skipped"]},
                    "note": text("what was learned", limits::MAX_NOTE_CHARS),
                }),
                &["todo_id", "status"],
            ),
        ),
        (
            "end_conversation",
            "End this conversation, when the objective is achieved or cannot be. Stop after calling it. \
             The summary is what the person who started this conversation reads: what was achieved or \
             learned, in a sentence or two.",
            object(
                json!({
                    "outcome": {
                        "type": "string",
                        "enum": Outcome::AGENT_CHOICES.map(Outcome::as_str),
                        "description": "achieved: the objective is met; partially_achieved: some of it; \
                                        declined: the contact said no; failed: it cannot be done"
                    },
                    "summary": text("what happened, for the person who asked", limits::MAX_REASON_CHARS),
                }),
                &["outcome", "summary"],
            ),
        ),
        (
            "schedule_next_heartbeat",
            "Choose when to follow up if the contact stays silent after this turn \
             (e.g. they said \"ask me tomorrow\").",
            object(
                json!({"delay": {
                    "description": "seconds (a number), or a duration such as \"90s\", \"30m\", \"2h\"",
                    "type": ["integer", "string"]
                }}),
                &["delay"],
            ),
        ),
        (
            "place_call",
            "Calls are not available yet: this tool places no call and only tells you so.",
            object(json!({}), &[]),
        ),
        (
            "request_human_intervention",
            "Ask the human operator for help: the contact needs something you cannot give or decide. \
             Put what you need to know in `question`; the operator's answer comes to you (not to the \
             contact) in a later turn. Stop after calling it.",
            object(
                json!({
                    "reason": text("what the operator must handle", limits::MAX_REASON_CHARS),
                    "question": text("the question to the operator, if you have one", limits::MAX_REASON_CHARS),
                }),
                &["reason"],
            ),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Text {
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct End {
    outcome: String,
    summary: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Intervention {
    reason: String,
    #[serde(default)]
    question: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkTodo {
    todo_id: Value,
    status: TodoStatus,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Delay {
    delay: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Nothing {}

/// Turns the model's `name(arguments)` into a [`ToolCall`], or says why not.
pub fn parse(name: &str, arguments: Value) -> Result<ToolCall, ToolError> {
    // Some models send `null` or "" for "no arguments".
    let arguments = match arguments {
        Value::Null => json!({}),
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => serde_json::from_str(&s).map_err(|e| bad(name, e))?,
        other => other,
    };
    fn args<T: serde::de::DeserializeOwned>(name: &str, arguments: Value) -> Result<T, ToolError> {
        serde_json::from_value(arguments).map_err(|e| bad(name, e))
    }
    Ok(match name {
        "send_message" => ToolCall::SendMessage { text: args::<Text>(name, arguments)?.text },
        "mark_todo_item" => {
            let MarkTodo { todo_id, status, note } = args(name, arguments)?;
            let todo_id = match todo_id {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                _ => return Err(ToolError("mark_todo_item: todo_id must be a string such as \"1\"".into())),
            };
            ToolCall::MarkTodoItem { todo_id, status, note }
        }
        "end_conversation" => {
            let End { outcome, summary } = args(name, arguments)?;
            let outcome = Outcome::AGENT_CHOICES.into_iter().find(|o| o.as_str() == outcome).ok_or_else(|| {
                let choices: Vec<&str> = Outcome::AGENT_CHOICES.iter().map(|o| o.as_str()).collect();
                ToolError(format!("end_conversation: outcome must be one of {}; nothing was done", choices.join(", ")))
            })?;
            ToolCall::EndConversation { outcome, summary }
        }
        "schedule_next_heartbeat" => {
            let delay = match args::<Delay>(name, arguments)?.delay {
                Value::Number(n) => n.as_u64().map(Duration::from_secs),
                Value::String(s) => crate::duration::parse(&s).ok(),
                _ => None,
            }
            .ok_or_else(|| {
                ToolError(
                    "schedule_next_heartbeat: delay must be seconds (a whole number) or a duration like \"2h\"".into(),
                )
            })?;
            ToolCall::ScheduleNextHeartbeat { delay }
        }
        "place_call" => {
            args::<Nothing>(name, arguments)?;
            ToolCall::PlaceCall
        }
        "request_human_intervention" => {
            let Intervention { reason, question } = args(name, arguments)?;
            ToolCall::RequestHumanIntervention { reason, question }
        }
        other => {
            let names: Vec<&str> = definitions().iter().map(|(n, _, _)| *n).collect();
            return Err(ToolError(format!("there is no tool '{other}'; the tools are {}", names.join(", "))));
        }
    })
}

fn bad(name: &str, error: serde_json::Error) -> ToolError {
    ToolError(format!("{name}: invalid arguments ({error}); nothing was done"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_calls_parse() {
        assert_eq!(parse("send_message", json!({"text": "hi"})), Ok(ToolCall::SendMessage { text: "hi".into() }));
        assert_eq!(
            parse("mark_todo_item", json!({"todo_id": 2, "status": "completed", "note": "Friday"})),
            Ok(ToolCall::MarkTodoItem {
                todo_id: "2".into(),
                status: TodoStatus::Completed,
                note: Some("Friday".into())
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

    #[test]
    fn a_recipient_or_any_extra_argument_is_refused() {
        for (name, args) in [
            ("send_message", json!({"text": "hi", "to": "+15550001111"})),
            ("send_message", json!({"text": "hi", "recipient": "+15550001111"})),
            ("place_call", json!({"number": "+15550001111"})),
            ("end_conversation", json!({"outcome": "achieved", "summary": "done", "notify": "+1"})),
        ] {
            let error = parse(name, args).unwrap_err();
            assert!(error.0.contains("unknown field") && error.0.contains("nothing was done"), "{error}");
        }
    }

    #[test]
    fn unknown_tools_and_wrong_types_are_tool_errors() {
        assert!(
            parse("read_file", json!({"path": "/etc/passwd"})).unwrap_err().0.contains("there is no tool 'read_file'")
        );
        assert!(parse("send_message", json!({"text": 5})).is_err());
        assert!(parse("send_message", json!({})).is_err());
        assert!(parse("mark_todo_item", json!({"todo_id": "1", "status": "done"})).is_err());
        assert!(parse("schedule_next_heartbeat", json!({"delay": "soon"})).is_err());
        assert!(parse("schedule_next_heartbeat", json!({"delay": -5})).is_err());
        assert!(parse("send_message", json!("{not json")).is_err());
    }

    #[test]
    fn the_model_is_offered_exactly_six_tools_none_with_a_recipient() {
        let defs = definitions();
        let names: Vec<&str> = defs.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(
            names,
            [
                "send_message",
                "mark_todo_item",
                "end_conversation",
                "schedule_next_heartbeat",
                "place_call",
                "request_human_intervention"
            ]
        );
        for (_, _, schema) in &defs {
            assert_eq!(schema["additionalProperties"], false);
            for field in schema["properties"].as_object().unwrap().keys() {
                assert!(!["to", "recipient", "contact", "number", "phone"].contains(&field.as_str()), "{field}");
            }
        }
    }
}
