//! `request_human_intervention`: the agent hands the conversation to the
//! operator with a question; the answer comes back to the agent in a
//! later turn (`relay answer`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::refused;
use crate::agent::ToolError;
use crate::api::{EventData, Question, limits};
use crate::engine::actor::Actor;
use crate::engine::actor::transitions::refused as table_refused;
use crate::engine::conversation::{self, Effect, Step};
use crate::engine::{EngineError, bounded_text};
use crate::fsm::Event;
use crate::store::ConversationRecord;

/// Hands conversation `current` to a person at `now`, with `reason` and, if
/// any, a `question` for them: NEEDS_HUMAN_INTERVENTION, the question
/// pending (numbered after the earlier ones) and published, and the turn
/// left to finish on its own.
pub(super) fn ask_a_person(
    current: &ConversationRecord,
    reason: String,
    question: Option<String>,
    now: DateTime<Utc>,
) -> Result<Step, EngineError> {
    let asked = conversation::transition(current, Event::RequestIntervention, Some(reason.clone()), now, |i| {
        i.intervention_reason = Some(reason.clone());
        i.pending_question = Some(Question {
            id: format!("q{}", i.earlier_questions.len() + 1),
            reason,
            question,
            asked_at: now,
            answer: None,
            answered_at: None,
        });
    })
    .map_err(|source| table_refused(current.id, source))?;
    let published =
        asked.next.pending_question.clone().map(|question| Effect::Publish(EventData::Question { question }));
    Ok(asked.then(published).then([Effect::LetTurnFinish]))
}

impl Actor {
    pub(super) fn request_human_intervention(
        &mut self,
        id: Uuid,
        reason: String,
        question: Option<String>,
    ) -> Result<String, ToolError> {
        let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
        let question = question.map(|q| bounded_text("question", q, limits::MAX_REASON_CHARS)).transpose();
        self.hand_to_a_person(id, reason, question.map_err(refused)?).map_err(refused)?;
        Ok("a human operator has been asked to step in; stop here. Their answer, if they give one, comes in your \
            next turn."
            .into())
    }

    /// [`ask_a_person`], written and run.
    pub(super) fn hand_to_a_person(
        &mut self,
        id: Uuid,
        reason: String,
        question: Option<String>,
    ) -> Result<(), EngineError> {
        let step = ask_a_person(&self.convs[self.index(id)?], reason, question, crate::clock::now())?;
        self.run_step(id, step).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{HeartbeatConfig, State};

    #[test]
    fn a_person_is_asked_the_next_question_and_the_turn_finishes_on_its_own() {
        let mut current =
            ConversationRecord::new("o".into(), "+56912345678".into(), Vec::new(), HeartbeatConfig::default());
        current.state = State::Active;
        let now = current.created_at;
        let Step { next, effects, .. } = ask_a_person(&current, "refund".into(), Some("May I?".into()), now).unwrap();
        assert_eq!(next.state, State::NeedsHumanIntervention);
        let question = next.pending_question.clone().unwrap();
        assert_eq!((question.id.as_str(), question.question.as_deref()), ("q1", Some("May I?")));
        assert!(matches!(&effects[0], Effect::Publish(EventData::Transition { .. })));
        assert_eq!(effects[1], Effect::Publish(EventData::Question { question }));
        assert_eq!(effects[2], Effect::LetTurnFinish);
        current.state = State::Completed;
        assert!(matches!(ask_a_person(&current, "r".into(), None, now), Err(EngineError::Transition { .. })));
    }
}
