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

proptest! {
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
