//! The report a caller reads once a conversation has ended: `outcome`,
//! `ended_by` and `summary`. The agent writes its own when it ends the
//! conversation (`end_conversation(outcome, summary)`); every other ending
//! gets relay's own words here, which never quote the contact.

use super::fsm::Event;
use crate::api::{ConversationInstance, EndedBy, Outcome};

/// Fills the report of `instance`, which `event` has just ended, unless the
/// agent already did.
pub fn on_end(instance: &mut ConversationInstance, event: Event, reason: Option<&str>) {
    if instance.outcome.is_some() {
        return;
    }
    let (outcome, ended_by, summary) = match event {
        Event::MaxFollowupsExceeded => (
            Outcome::NoResponse,
            EndedBy::MaxFollowups,
            format!(
                "The contact did not reply to {} follow-up{}.",
                instance.heartbeat_config.max_followups,
                if instance.heartbeat_config.max_followups == 1 { "" } else { "s" }
            ),
        ),
        Event::Cancel => (Outcome::Cancelled, EndedBy::Operator, "Cancelled by the operator.".to_string()),
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
