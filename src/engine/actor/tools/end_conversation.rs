//! `end_conversation`: the agent ends the conversation with an outcome and
//! a summary for the person who started it.

use uuid::Uuid;

use super::refused;
use crate::agent::ToolError;
use crate::api::{EndedBy, Outcome, TodoItem, TodoStatus, limits};
use crate::engine::actor::Actor;
use crate::engine::{bounded_text, report};
use crate::fsm::Event;

/// The outcome a conversation ends with: the agent's choice, or judged from
/// the todos. "Achieved" with todos still open is a guess, not a report:
/// refused, and the conversation goes on until the agent says which.
pub(super) fn outcome(todos: &[TodoItem], chosen: Option<Outcome>) -> Result<Outcome, ToolError> {
    let open = todos.iter().filter(|t| matches!(t.status, TodoStatus::Pending | TodoStatus::InProgress)).count();
    if chosen == Some(Outcome::Achieved) && open > 0 {
        let counted = if open == 1 { "1 todo is".to_string() } else { format!("{open} todos are") };
        return Err(ToolError(format!(
            "not ended: {counted} still pending: mark them with mark_todo_item, or choose another outcome"
        )));
    }
    Ok(chosen.unwrap_or_else(|| report::judged_outcome(todos)))
}

impl Actor {
    pub(super) fn end_conversation(
        &mut self,
        id: Uuid,
        reason: String,
        outcome: Option<Outcome>,
        summary: Option<String>,
    ) -> Result<String, ToolError> {
        let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
        let summary = summary.map(|s| bounded_text("summary", s, limits::MAX_REASON_CHARS)).transpose();
        let summary = summary.map_err(refused)?.unwrap_or_else(|| reason.clone());
        let outcome = self::outcome(&self.convs[self.index(id).map_err(refused)?].todos, outcome)?;
        self.transition(id, Event::EndConversation, Some(reason), |i| {
            i.outcome = Some(outcome);
            i.ended_by = Some(EndedBy::Agent);
            i.summary = Some(summary);
        })
        .map_err(refused)?;
        self.detach_turn();
        Ok("the conversation is ended; stop here".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(status: TodoStatus) -> TodoItem {
        serde_json::from_value(serde_json::json!({"id": "1", "text": "Which day suits", "status": status}))
            .expect("a todo")
    }

    #[test]
    fn achieved_with_a_todo_open_is_refused_and_anything_else_stands() {
        let open = [todo(TodoStatus::Completed), todo(TodoStatus::Pending)];
        assert!(outcome(&open, Some(Outcome::Achieved)).unwrap_err().0.contains("1 todo is still pending"));
        assert_eq!(outcome(&open, Some(Outcome::PartiallyAchieved)), Ok(Outcome::PartiallyAchieved));
        let done = [todo(TodoStatus::Completed)];
        assert_eq!(outcome(&done, Some(Outcome::Achieved)), Ok(Outcome::Achieved));
        assert_eq!(outcome(&done, None), Ok(report::judged_outcome(&done)));
    }
}
