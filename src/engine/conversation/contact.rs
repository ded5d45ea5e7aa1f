//! A contact's message that asks something of the agent: it is their
//! latest, it waits for an answer, and the follow-up count starts again.

use chrono::{DateTime, Utc};

use super::{Step, transition};
use crate::api::{ContactText, State};
use crate::engine::budget;
use crate::fsm::{Event, InvalidTransition};
use crate::store::ConversationRecord;

/// What the actor knows of a contact's message beyond the record.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactMessage {
    pub last: ContactText,
    /// It carries a photo, voice note or file (fetched after the write).
    pub has_media: bool,
    /// It is only an opt-out word: the conversation ends instead.
    pub opts_out: bool,
    /// Nothing outside the record holds a turn back: no reply window, no
    /// file being fetched, no turn running, no stop under way.
    pub turn_may_start: bool,
}

/// Counts `message` in `current`. A reply to relay (WAITING_FOR_REPLY) moves
/// on to WAITING_FOR_AGENT; when a turn may start at once and nothing in the
/// record ends the conversation instead (an opt-out word, a budget spent,
/// its deadline), on to ACTIVE in the same write, since nothing happens
/// between the two. In any other state the message is counted in place.
pub fn contact_wrote(
    current: &ConversationRecord,
    message: ContactMessage,
    now: DateTime<Utc>,
) -> Result<Step, InvalidTransition> {
    let answer_at_once = message.turn_may_start
        && !message.has_media
        && !message.opts_out
        && budget::spent(current, false).is_none()
        && budget::expired(current, now).is_none();
    let count = |record: &mut ConversationRecord| {
        record.media_received += u32::from(message.has_media);
        record.unanswered_contact_messages += 1;
        record.follow_up_count = 0;
        record.last_contact_message = Some(message.last);
        // They wrote: their phone is on WhatsApp, whatever its receipts say.
        record.awaiting_delivery = None;
    };
    if current.state != State::WaitingForReply {
        return Ok(Step::change(current, now, count));
    }
    let replied = transition(current, Event::ContactReplies, None, now, count)?;
    if !answer_at_once {
        return Ok(replied);
    }
    let taken = transition(&replied.next, Event::AgentProcessesReply, None, now, |record| {
        record.unanswered_contact_messages = 0
    })?;
    Ok(Step::new(taken.next, replied.effects.into_iter().chain(taken.effects).collect()))
}

#[cfg(test)]
#[path = "contact_tests.rs"]
mod tests;
