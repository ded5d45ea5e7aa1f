//! The report a caller reads once a conversation has ended: `outcome`,
//! `ended_by` and `summary`. The agent writes its own when it ends the
//! conversation (`end_conversation(reason, outcome?, summary?)`, the missing
//! parts judged here); every other ending gets relay's own words here, which
//! never quote the contact.

use crate::api::{EndedBy, Outcome, TodoItem, TodoStatus};
use crate::fsm::Event;
use crate::store::ConversationRecord;

/// Fills the report of `instance`, which `event` has just ended, unless the
/// agent already did.
pub fn on_end(instance: &mut ConversationRecord, event: Event, reason: Option<&str>) {
    if instance.outcome.is_some() {
        return;
    }
    let (outcome, ended_by, summary) = match event {
        Event::MaxFollowupsExceeded => (Outcome::NoResponse, EndedBy::MaxFollowups, no_response(instance)),
        Event::Cancel => (Outcome::Cancelled, EndedBy::Operator, "Cancelled by the operator.".to_string()),
        Event::OptedOut => (
            Outcome::OptedOut,
            EndedBy::Contact,
            "The contact asked not to be contacted; relay will not write to this number again.".to_string(),
        ),
        // relay stopped it, not the agent: how far it got is judged from
        // its todos (partially achieved, or failed when none was done), and
        // the summary names the limit (`engine::budget` words the reason).
        Event::BudgetExhausted | Event::Expired => (
            judged_outcome(&instance.todos),
            if event == Event::Expired { EndedBy::Expired } else { EndedBy::Budget },
            sentence(reason.unwrap_or("its budget ran out")),
        ),
        Event::EndConversation => {
            // Only relay's own callers end a conversation without an outcome.
            (Outcome::Achieved, EndedBy::Agent, reason.unwrap_or("The agent ended the conversation.").to_string())
        }
        _ => (
            Outcome::Failed,
            EndedBy::Error,
            format!("relay could not go on: {}", reason.unwrap_or("an unrecoverable error")),
        ),
    };
    instance.outcome = Some(outcome);
    instance.ended_by = Some(ended_by);
    instance.summary = Some(summary);
}

/// `reason` as a sentence: capitalised, with a full stop.
fn sentence(reason: &str) -> String {
    let mut chars = reason.chars();
    let first: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    let rest = chars.as_str().trim_end_matches('.');
    format!("{first}{rest}.")
}

/// What happened to a conversation abandoned for silence, from what was
/// actually sent: `follow_up_count` counts the follow-ups that went out.
pub fn no_response(instance: &ConversationRecord) -> String {
    match instance.follow_up_count {
        0 => "The contact did not reply; no follow-up was allowed (max_followups is 0).".to_string(),
        1 => "The contact did not reply, even after 1 follow-up.".to_string(),
        n => format!("The contact did not reply, even after {n} follow-ups."),
    }
}

/// The outcome of a conversation the agent ended without naming one, judged
/// from its todos: all done (completed, or skipped as not needed) is
/// achieved, some completed is partially achieved, none is failed.
pub fn judged_outcome(todos: &[TodoItem]) -> Outcome {
    let done = |t: &&TodoItem| matches!(t.status, TodoStatus::Completed | TodoStatus::Skipped);
    if todos.iter().all(|t| done(&t)) && todos.iter().any(|t| t.status == TodoStatus::Completed) {
        Outcome::Achieved
    } else if todos.iter().any(|t| t.status == TodoStatus::Completed) {
        Outcome::PartiallyAchieved
    } else {
        Outcome::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todos(statuses: &[TodoStatus]) -> Vec<TodoItem> {
        statuses
            .iter()
            .enumerate()
            .map(|(i, s)| TodoItem {
                id: (i + 1).to_string(),
                text: "t".into(),
                status: *s,
                answer: None,
                answer_message_ids: vec![],
                answer_schema: None,
                value: None,
                evidence: Vec::new(),
                check: None,
            })
            .collect()
    }

    #[test]
    fn the_outcome_left_out_is_judged_from_the_todos() {
        use TodoStatus::*;
        assert_eq!(judged_outcome(&todos(&[Completed, Completed])), Outcome::Achieved);
        assert_eq!(judged_outcome(&todos(&[Completed, Skipped])), Outcome::Achieved);
        assert_eq!(judged_outcome(&todos(&[Completed, Pending])), Outcome::PartiallyAchieved);
        assert_eq!(judged_outcome(&todos(&[InProgress, Pending])), Outcome::Failed);
        assert_eq!(judged_outcome(&todos(&[Skipped])), Outcome::Failed);
    }
}
