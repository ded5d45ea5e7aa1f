//! What a checked `mark_todo_item` does to its todo. The checks (what the
//! answer rests on, the typed value) are the tool's (`actor::tools`); this
//! is the rule of how a todo takes a mark.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{Effect, Step};
use crate::api::{EventData, Evidence, TodoStatus, ValueCheck};
use crate::store::ConversationRecord;

/// A mark that passed every check, to be recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub todo_id: String,
    pub status: TodoStatus,
    pub answer: Option<String>,
    pub value: Option<Value>,
    pub check: Option<ValueCheck>,
    pub evidence: Vec<Evidence>,
    /// The contact's messages the turn answers: what a mark with no
    /// evidence of its own rests on.
    pub answered_ids: Vec<Uuid>,
}

/// `mark` on its todo of `current` (which has it), and the todo's event.
/// A skipped todo taken up again starts with no answer (its words were why
/// it was skipped, the model's own); an answer or a value rests on its
/// evidence, else on the messages the turn answers; what the mark leaves
/// out stays as it was.
pub fn todo_marked(current: &ConversationRecord, mark: Mark, now: DateTime<Utc>) -> Step {
    let Mark { todo_id, status, answer, value, check, evidence, answered_ids } = mark;
    let mut step = Step::change(current, now, |record| {
        let Some(todo) = record.todos.iter_mut().find(|t| t.id == todo_id) else { return };
        if todo.status == TodoStatus::Skipped && status != TodoStatus::Skipped {
            todo.answer = None;
            todo.answer_message_ids.clear();
            todo.evidence.clear();
            todo.check = None;
        }
        todo.status = status;
        if answer.is_some() || value.is_some() {
            todo.answer_message_ids = match evidence.is_empty() {
                true => answered_ids,
                false => evidence.iter().map(|e| e.message_id).collect(),
            };
        }
        if answer.is_some() {
            todo.answer = answer;
        }
        if value.is_some() {
            todo.value = value;
            todo.check = check;
        }
        if !evidence.is_empty() {
            todo.evidence = evidence;
        }
    });
    let event = step.next.todos.iter().find(|t| t.id == todo_id).map(|todo| Effect::Publish(EventData::todo(todo)));
    step.effects.extend(event);
    step
}

#[cfg(test)]
#[path = "todo_tests.rs"]
mod tests;
