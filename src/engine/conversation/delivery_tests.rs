use proptest::prelude::*;

use super::*;
use crate::api::HeartbeatConfig;

fn waiting() -> ConversationRecord {
    let mut record = ConversationRecord::new("o".into(), "+56912345678".into(), Vec::new(), HeartbeatConfig::default());
    record.state = State::WaitingForReply;
    record
}

fn sent(record: &ConversationRecord) -> TranscriptMessage {
    TranscriptMessage::new(record.id, crate::api::Role::Agent, "hola".into())
}

#[test]
fn a_first_message_never_delivered_goes_to_a_person() {
    let record = waiting();
    let message = sent(&record);
    let now = Utc::now();
    let awaited = awaiting_delivery(&record, message.id, std::time::Duration::from_secs(60), now).next;
    let step = delivery_overdue(&awaited, "1m", now).unwrap().unwrap();
    assert_eq!(step.next.state, State::NeedsHumanIntervention);
    assert!(step.next.intervention_reason.as_deref().unwrap().contains("not delivered after 1m"));
    assert!(step.next.awaiting_delivery.as_ref().unwrap().overdue);
    assert!(delivery_overdue(&record, "1m", now).is_none(), "nothing awaited, nothing to do");
}

#[test]
fn a_late_delivery_tells_the_person_who_was_called_for_it() {
    let record = waiting();
    let mut message = sent(&record);
    let now = Utc::now();
    let awaited = awaiting_delivery(&record, message.id, std::time::Duration::from_secs(60), now).next;
    let called = delivery_overdue(&awaited, "1m", now).unwrap().unwrap().next;
    message.delivered_at = Some(now);
    let step = message_status(&called, &message, now);
    assert!(step.next.intervention_reason.as_deref().unwrap().ends_with("(it has been delivered since)"));
    assert_eq!(step.next.first_delivered_at, Some(now));
    assert!(step.next.awaiting_delivery.is_none());
}

#[test]
fn a_read_alone_waits_for_the_next_write_and_a_delivery_does_not() {
    let record = waiting();
    let mut message = sent(&record);
    let now = Utc::now();
    let awaited = awaiting_delivery(&record, message.id, std::time::Duration::from_secs(60), now).next;
    message.delivered_at = Some(now);
    let delivered = message_status(&awaited, &message, now);
    assert_eq!(delivered.durability, Durability::Now, "what was awaited arrived");
    message.read_at = Some(now);
    let read = message_status(&delivered.next, &message, now);
    assert_eq!((read.durability, read.next.last_read_at), (Durability::WithNextWrite, Some(now)));
    assert_eq!(message_status(&awaited, &message, now).durability, Durability::Now, "delivered and read at once");
}

proptest! {
    /// A status change waits for the next write only when all it changes
    /// is when the contact last read: never what is awaited, the first
    /// delivery, the state or why a person was called.
    #[test]
    fn only_a_read_waits_for_the_next_write(
        awaited in any::<bool>(),
        delivered_before in any::<bool>(),
        delivered in any::<bool>(),
        read in any::<bool>(),
        called in any::<bool>(),
    ) {
        let record = waiting();
        let mut message = sent(&record);
        let now = Utc::now();
        let mut current = record.clone();
        if awaited {
            current = awaiting_delivery(&current, message.id, std::time::Duration::from_secs(60), now).next;
        }
        if called {
            current.state = State::NeedsHumanIntervention;
            current.intervention_reason = Some("not delivered".into());
        }
        current.first_delivered_at = delivered_before.then_some(now - chrono::Duration::hours(1));
        message.delivered_at = delivered.then_some(now);
        message.read_at = read.then_some(now);
        let step = message_status(&current, &message, now);
        if step.durability == Durability::WithNextWrite {
            prop_assert_eq!(&step.next.awaiting_delivery, &current.awaiting_delivery);
            prop_assert_eq!(step.next.first_delivered_at, current.first_delivered_at);
            prop_assert_eq!(step.next.state, current.state);
            prop_assert_eq!(&step.next.intervention_reason, &current.intervention_reason);
        }
        if read && !delivered {
            prop_assert_eq!(step.durability, Durability::WithNextWrite);
        }
    }

    /// Once a message of the conversation was delivered, a later one that
    /// is not only gets flagged: the state stays, and follow-ups wait.
    #[test]
    fn after_a_delivery_an_overdue_message_is_only_flagged(
        timeout_secs in 0u64..u64::MAX / 4,
        state in prop::sample::select(State::ALL.to_vec()),
    ) {
        let mut record = waiting();
        record.state = state;
        record.first_delivered_at = Some(Utc::now());
        let now = Utc::now();
        let awaited = awaiting_delivery(&record, uuid::Uuid::new_v4(), std::time::Duration::from_secs(timeout_secs), now).next;
        prop_assert!(awaited.awaiting_delivery.as_ref().unwrap().due_at >= now, "no overflow");
        let step = delivery_overdue(&awaited, "x", now).unwrap().unwrap();
        prop_assert_eq!(step.next.state, state);
        prop_assert!(step.next.awaiting_delivery.as_ref().unwrap().overdue);
        prop_assert!(step.effects.is_empty());
    }
}
