//! `request_human_intervention`: the agent hands the conversation to the
//! operator with a question; the answer comes back to the agent in a
//! later turn (`relay answer`).

use uuid::Uuid;

use super::refused;
use crate::agent::ToolError;
use crate::api::{EventData, Question, limits};
use crate::engine::actor::Actor;
use crate::engine::{EngineError, bounded_text};
use crate::fsm::Event;

impl Actor {
    pub(super) fn request_human_intervention(
        &mut self,
        id: Uuid,
        reason: String,
        question: Option<String>,
    ) -> Result<String, ToolError> {
        let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
        let question = question.map(|q| bounded_text("question", q, limits::MAX_REASON_CHARS)).transpose();
        self.ask_a_person(id, reason, question.map_err(refused)?).map_err(refused)?;
        self.detach_turn();
        Ok("a human operator has been asked to step in; stop here. Their answer, if they give one, comes in your \
            next turn."
            .into())
    }

    /// Hands conversation `id` to a person with `reason` and, if any, a
    /// `question` for them.
    pub(super) fn ask_a_person(
        &mut self,
        id: Uuid,
        reason: String,
        question: Option<String>,
    ) -> Result<(), EngineError> {
        let asked = self.transition(id, Event::RequestIntervention, Some(reason.clone()), |i| {
            i.intervention_reason = Some(reason.clone());
            i.pending_question = Some(Question {
                id: format!("q{}", i.earlier_questions.len() + 1),
                reason,
                question,
                asked_at: crate::clock::now(),
                answer: None,
                answered_at: None,
            });
        })?;
        if let Some(question) = asked.instance.pending_question {
            self.shared.emit(id, EventData::Question { question });
        }
        Ok(())
    }
}
