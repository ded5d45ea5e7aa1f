//! The operator's commands to a conversation (pause, resume, cancel,
//! `relay answer`), as plain functions of its record.

use chrono::{DateTime, Utc};

use super::{Effect, Step, transition};
use crate::api::{EventData, Role, State};
use crate::engine::EngineError;
use crate::fsm::Event;
use crate::store::ConversationRecord;

/// `relay pause`: the turn under way stops, and re-runs on resume.
pub fn pause(current: &ConversationRecord, now: DateTime<Utc>) -> Result<Step, EngineError> {
    Ok(transition(current, Event::Pause, None, now, |_| {}).map_err(refused(current))?.then([Effect::StopTurn]))
}

/// `relay resume`: back where the pause found it.
pub fn resume(current: &ConversationRecord, now: DateTime<Utc>) -> Result<Step, EngineError> {
    transition(current, Event::Resume, None, now, |_| {}).map_err(refused(current))
}

/// `relay cancel`: FAILED, "cancelled"; the turn under way stops.
pub fn cancel(current: &ConversationRecord, now: DateTime<Utc>) -> Result<Step, EngineError> {
    let reason = "cancelled".to_string();
    let cancelled = transition(current, Event::Cancel, Some(reason.clone()), now, |i| i.failure_reason = Some(reason));
    Ok(cancelled.map_err(refused(current))?.then([Effect::StopTurn]))
}

/// `relay answer`: the agent's pending question gets the operator's answer,
/// noted in the transcript, and the agent takes a turn with it. Nothing
/// goes to the contact. With no question pending there is nothing to
/// answer: the operator resumes the agent or writes to the contact instead.
pub fn answer(current: &ConversationRecord, text: String, now: DateTime<Utc>) -> Result<Step, EngineError> {
    let id = current.id;
    if current.state == State::NeedsHumanIntervention && current.pending_question.is_none() {
        let reason = current.intervention_reason.clone().unwrap_or_else(|| "no reason was recorded".into());
        return Err(EngineError::NoQuestion { id, reason });
    }
    let mut answered = None;
    let step = transition(current, Event::OperatorAnswers, None, now, |i| {
        let Some(mut question) = i.pending_question.take() else { return };
        question.answer = Some(text.clone());
        question.answered_at = Some(now);
        answered = Some(question.id.clone());
        i.earlier_questions.push(question);
    })
    .map_err(refused(current))?;
    let question_id = answered.expect("the table lets an answer through only with a question pending");
    let note = format!("The operator answered the agent ({question_id}): {text}");
    Ok(step.then([Effect::Note(Role::System, note), Effect::Publish(EventData::Answer { question_id, answer: text })]))
}

/// A change the table refuses, as the engine reports it.
fn refused(current: &ConversationRecord) -> impl FnOnce(crate::fsm::InvalidTransition) -> EngineError {
    let id = current.id;
    move |source| EngineError::Transition { id, source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{HeartbeatConfig, Question};

    fn waiting_on_a_person(question: bool) -> ConversationRecord {
        let mut record =
            ConversationRecord::new("o".into(), "+56912345678".into(), Vec::new(), HeartbeatConfig::default());
        record.state = State::NeedsHumanIntervention;
        record.intervention_reason = Some("the contact asked for a refund".into());
        record.pending_question = question.then(|| Question {
            id: "q1".into(),
            reason: "refund".into(),
            question: Some("May I refund them?".into()),
            asked_at: record.created_at,
            answer: None,
            answered_at: None,
        });
        record
    }

    #[test]
    fn an_answer_to_a_question_is_recorded_noted_and_published_in_that_order() {
        let current = waiting_on_a_person(true);
        let now = current.created_at + chrono::Duration::minutes(5);
        let Step { next, effects, .. } = answer(&current, "Yes, refund them".into(), now).unwrap();
        assert_eq!(next.state, State::Active);
        assert!(next.pending_question.is_none());
        let asked = &next.earlier_questions[0];
        assert_eq!((asked.answer.as_deref(), asked.answered_at), (Some("Yes, refund them"), Some(now)));
        assert!(matches!(&effects[0], Effect::Publish(EventData::Transition { .. })));
        assert_eq!(
            effects[1],
            Effect::Note(Role::System, "The operator answered the agent (q1): Yes, refund them".into())
        );
        assert_eq!(
            effects[2],
            Effect::Publish(EventData::Answer { question_id: "q1".into(), answer: "Yes, refund them".into() })
        );
    }

    #[test]
    fn with_no_question_pending_there_is_nothing_to_answer() {
        let current = waiting_on_a_person(false);
        let refused = answer(&current, "yes".into(), current.created_at).unwrap_err();
        assert!(matches!(refused, EngineError::NoQuestion { reason, .. } if reason.contains("refund")));
    }

    #[test]
    fn pause_and_cancel_stop_the_turn_and_resume_does_not() {
        let mut current = waiting_on_a_person(true);
        current.state = State::Active;
        let now = current.created_at;
        assert_eq!(pause(&current, now).unwrap().effects.last(), Some(&Effect::StopTurn));
        assert_eq!(cancel(&current, now).unwrap().effects.last(), Some(&Effect::StopTurn));
        let paused = pause(&current, now).unwrap().next;
        assert!(!resume(&paused, now).unwrap().effects.contains(&Effect::StopTurn));
        assert_eq!(cancel(&current, now).unwrap().next.failure_reason.as_deref(), Some("cancelled"));
    }
}
