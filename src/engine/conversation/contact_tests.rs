use proptest::prelude::*;
use uuid::Uuid;

use super::*;
use crate::api::{EventData, HeartbeatConfig};
use crate::engine::conversation::Effect;

fn record(state: State) -> ConversationRecord {
    let mut record = ConversationRecord::new("o".into(), "+56912345678".into(), Vec::new(), HeartbeatConfig::default());
    record.state = state;
    record.follow_up_count = 2;
    record.unanswered_contact_messages = 1;
    record
}

fn message(has_media: bool, opts_out: bool, turn_may_start: bool) -> ContactMessage {
    let last = ContactText { message_id: Uuid::new_v4(), at: Utc::now(), untrusted_contact_text: "el viernes".into() };
    ContactMessage { last, has_media, opts_out, turn_may_start }
}

fn triggers(step: &Step) -> Vec<String> {
    step.effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Publish(EventData::Transition { trigger, .. }) => Some(trigger.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_reply_with_nothing_between_goes_on_to_active_in_one_write() {
    let current = record(State::WaitingForReply);
    let step = contact_wrote(&current, message(false, false, true), Utc::now()).unwrap();
    assert_eq!(step.next.state, State::Active);
    assert_eq!(step.next.unanswered_contact_messages, 0, "the turn takes them");
    assert_eq!(triggers(&step), ["contact_replies", "agent_processes_reply"]);
    assert_eq!(step.next.history.len(), current.history.len() + 2);
}

#[test]
fn a_reply_that_must_wait_stops_at_waiting_for_agent() {
    for (has_media, opts_out, turn_may_start) in [(true, false, true), (false, true, true), (false, false, false)] {
        let step =
            contact_wrote(&record(State::WaitingForReply), message(has_media, opts_out, turn_may_start), Utc::now())
                .unwrap();
        assert_eq!(step.next.state, State::WaitingForAgent, "{has_media} {opts_out} {turn_may_start}");
        assert_eq!(step.next.unanswered_contact_messages, 2);
        assert_eq!(triggers(&step), ["contact_replies"]);
    }
}

#[test]
fn a_reply_past_the_deadline_is_left_for_the_deadline_to_end() {
    let mut current = record(State::WaitingForReply);
    current.budget.expires_at = Some(Utc::now() - chrono::Duration::minutes(1));
    let step = contact_wrote(&current, message(false, false, true), Utc::now()).unwrap();
    assert_eq!(step.next.state, State::WaitingForAgent);
}

proptest! {
    /// In any state: the message is the latest, it is counted (or taken by
    /// the turn it starts), the follow-ups start again, and nothing is
    /// awaited of the contact's phone any more.
    #[test]
    fn a_contact_message_is_counted_in_any_state(
        state in prop::sample::select(State::ALL.to_vec()),
        has_media: bool,
        opts_out: bool,
        turn_may_start: bool,
    ) {
        let current = record(state);
        let message = message(has_media, opts_out, turn_may_start);
        let step = contact_wrote(&current, message.clone(), Utc::now()).unwrap();
        let next = &step.next;
        prop_assert_eq!(next.last_contact_message.as_ref(), Some(&message.last));
        prop_assert_eq!(next.follow_up_count, 0);
        prop_assert_eq!(next.media_received, u32::from(has_media));
        prop_assert!(next.awaiting_delivery.is_none());
        let taken = next.state == State::Active && state == State::WaitingForReply;
        prop_assert_eq!(next.unanswered_contact_messages, if taken { 0 } else { 2 });
        if state != State::WaitingForReply {
            prop_assert_eq!(next.state, state);
            prop_assert!(step.effects.is_empty());
        }
    }
}
