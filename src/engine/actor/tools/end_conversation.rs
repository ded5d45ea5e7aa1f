//! `end_conversation`: the agent ends the conversation with an outcome and
//! a summary for the person who started it.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::refused;
use crate::agent::ToolError;
use crate::api::{EndedBy, Outcome, TodoItem, TodoStatus, limits};
use crate::engine::actor::Actor;
use crate::engine::conversation::{self, Effect, Step};
use crate::engine::{EngineError, bounded_text, report};
use crate::fsm::Event;
use crate::store::ConversationRecord;

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

/// The agent ends conversation `current` at `now`: its outcome and summary
/// recorded, and the turn left to finish on its own.
pub(super) fn end(
    current: &ConversationRecord,
    reason: String,
    outcome: Option<Outcome>,
    summary: Option<String>,
    now: DateTime<Utc>,
) -> Result<Step, ToolError> {
    let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
    let summary = summary.map(|s| bounded_text("summary", s, limits::MAX_REASON_CHARS)).transpose();
    let summary = summary.map_err(refused)?.unwrap_or_else(|| reason.clone());
    let outcome = self::outcome(&current.todos, outcome)?;
    let ended = conversation::transition(current, Event::EndConversation, Some(reason), now, |i| {
        i.outcome = Some(outcome);
        i.ended_by = Some(EndedBy::Agent);
        i.summary = Some(summary);
    });
    let ended = ended.map_err(|source| refused(EngineError::Transition { id: current.id, source }))?;
    Ok(ended.then([Effect::LetTurnFinish]))
}

impl Actor {
    pub(super) fn end_conversation(
        &mut self,
        id: Uuid,
        reason: String,
        outcome: Option<Outcome>,
        summary: Option<String>,
    ) -> Result<String, ToolError> {
        let current = &self.convs[self.index(id).map_err(refused)?];
        let step = end(current, reason, outcome, summary, crate::clock::now())?;
        self.run_step(id, step).map_err(refused)?;
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

    #[test]
    fn ending_records_the_report_and_lets_the_turn_finish() {
        let mut current = ConversationRecord::new(
            "o".into(),
            "+56912345678".into(),
            vec![todo(TodoStatus::Completed)],
            Default::default(),
        );
        current.state = crate::api::State::Active;
        let now = current.created_at;
        let Step { next, effects, .. } = end(&current, " done ".into(), None, None, now).unwrap();
        assert_eq!(next.state, crate::api::State::Completed);
        assert_eq!((next.summary.as_deref(), next.ended_by), (Some("done"), Some(EndedBy::Agent)));
        assert_eq!(effects.last(), Some(&Effect::LetTurnFinish));
        let refused = end(&current, "  ".into(), None, None, now).unwrap_err();
        assert!(refused.0.contains("reason"), "{refused}");
    }
}
