//! What the conversation learns of its messages after the channel took
//! them: one is awaited on the contact's phone, one reached it (or was
//! read), or none arrived within `delivery.timeout`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Durability, Step, transition};
use crate::api::{AwaitingDelivery, State, TranscriptMessage};
use crate::engine::delivery::note;
use crate::fsm::{Event, InvalidTransition};
use crate::store::ConversationRecord;

/// The channel took message `message_id` at `now`: until a device of the
/// contact has it (or `timeout` passes), follow-ups wait.
pub fn awaiting_delivery(
    current: &ConversationRecord,
    message_id: Uuid,
    timeout: std::time::Duration,
    now: DateTime<Utc>,
) -> Step {
    // The config caps the timeout at 30 days; a value built another way
    // (tests, the library) must not overflow the clock.
    let due_at = chrono::Duration::from_std(timeout)
        .ok()
        .and_then(|timeout| now.checked_add_signed(timeout))
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    Step::change(current, now, |record| {
        record.awaiting_delivery = Some(AwaitingDelivery { message_id, sent_at: now, due_at, overdue: false })
    })
}

/// `message` (one of the conversation's) has a new status: when it was
/// delivered or read. A person called because nothing arrived learns that
/// it has since. A change of `last_read_at` alone waits for the record's
/// next write to be durable: the transcript holds the read durably, and a
/// contact who read a message usually writes next.
pub fn message_status(current: &ConversationRecord, message: &TranscriptMessage, now: DateTime<Utc>) -> Step {
    let mut step = Step::change(current, now, |record| {
        let first = record.first_delivered_at.is_none();
        note(record, message);
        let called_for_it = record.state == State::NeedsHumanIntervention
            && record.history.last().is_some_and(|t| t.trigger == Event::NotDelivered);
        if first
            && record.first_delivered_at.is_some()
            && called_for_it
            && let Some(reason) = record.intervention_reason.as_mut()
        {
            reason.push_str(" (it has been delivered since)");
        }
    });
    let mut read_put_back = step.next.clone();
    read_put_back.last_read_at = current.last_read_at;
    read_put_back.updated_at = current.updated_at;
    if read_put_back == *current {
        step.durability = Durability::WithNextWrite;
    }
    step
}

/// `delivery.timeout` (`timeout_words`) passed and relay's latest message
/// has not reached the contact's phone. If none of the conversation's
/// messages ever did, a person decides (the number may not be on WhatsApp):
/// nothing more is sent into the void. Otherwise the message is flagged,
/// and follow-ups keep waiting for it. `None` when nothing is awaited.
pub fn delivery_overdue(
    current: &ConversationRecord,
    timeout_words: &str,
    now: DateTime<Utc>,
) -> Option<Result<Step, InvalidTransition>> {
    let awaiting = current.awaiting_delivery.clone().filter(|a| !a.overdue)?;
    let flagged = AwaitingDelivery { overdue: true, ..awaiting };
    if current.first_delivered_at.is_some() {
        return Some(Ok(Step::change(current, now, |record| record.awaiting_delivery = Some(flagged))));
    }
    let reason = format!(
        "the first message was not delivered after {timeout_words}: the number may not be on WhatsApp, or the \
         contact's phone is offline"
    );
    Some(transition(current, Event::NotDelivered, Some(reason.clone()), now, |record| {
        record.intervention_reason = Some(reason);
        record.awaiting_delivery = Some(flagged);
    }))
}

#[cfg(test)]
#[path = "delivery_tests.rs"]
mod tests;
