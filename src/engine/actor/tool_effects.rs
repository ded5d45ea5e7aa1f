//! What the agent's tools do to the conversation (`send_message` is a
//! send: see [`super::sends`]). A tool acts only for the turn running now.

use uuid::Uuid;

use super::Actor;
use crate::agent::{ToolCall, ToolError};
use crate::api::limits;
use crate::api::{EventData, Evidence, Outcome, Question, Role, TodoStatus};
use crate::engine::{EngineError, bounded_text, heartbeat, report};
use crate::fsm::Event;

impl Actor {
    /// Tools may only act for the turn that is running now.
    pub(super) fn check_turn(&self, id: Uuid, turn: u64) -> Result<(), ToolError> {
        let mine = self.is_running(id, turn);
        if !mine || self.index(id).is_err() {
            return Err(ToolError(
                "this turn is over (the conversation was paused, cancelled or ended): do nothing more".into(),
            ));
        }
        Ok(())
    }

    /// Every tool but `send_message` and `send_attachment` (see
    /// [`Actor::start_agent_send`]).
    pub(super) fn tool(&mut self, id: Uuid, turn: u64, call: ToolCall) -> Result<String, ToolError> {
        self.check_turn(id, turn)?;
        let refused = |e: EngineError| ToolError(e.to_string());
        tracing::debug!(instance = %id, tool = %call.tool(), "tool call");
        match call {
            ToolCall::SendMessage { .. } | ToolCall::SendAttachment { .. } | ToolCall::MarkTodoItem { .. } => {
                unreachable!("handled by start_agent_send and mark_todo")
            }
            ToolCall::EndConversation { reason, outcome, summary } => {
                let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
                let summary = summary
                    .map(|s| bounded_text("summary", s, limits::MAX_REASON_CHARS))
                    .transpose()
                    .map_err(refused)?
                    .unwrap_or_else(|| reason.clone());
                let todos = &self.convs[self.index(id).map_err(refused)?].todos;
                let judged = report::judged_outcome(todos);
                let open = todos.iter().filter(|t| matches!(t.status, TodoStatus::Pending | TodoStatus::InProgress));
                let open = open.count();
                // "Achieved" with todos still open is the model guessing, not
                // reporting: the conversation goes on until it says which.
                if outcome == Some(Outcome::Achieved) && open > 0 {
                    let counted = if open == 1 { "1 todo is".to_string() } else { format!("{open} todos are") };
                    return Err(ToolError(format!(
                        "not ended: {counted} still pending: mark them with mark_todo_item, or choose another outcome"
                    )));
                }
                let outcome = outcome.unwrap_or(judged);
                self.transition(id, Event::EndConversation, Some(reason), |i| {
                    i.outcome = Some(outcome);
                    i.ended_by = Some(crate::api::EndedBy::Agent);
                    i.summary = Some(summary);
                })
                .map_err(refused)?;
                self.detach_turn();
                Ok("the conversation is ended; stop here".into())
            }
            ToolCall::ScheduleNextHeartbeat { delay } => {
                let delay = heartbeat::clamp(delay, self.shared.settings.scheduled_heartbeat_bounds);
                self.update(id, |i| i.scheduled_heartbeat_ms = Some(delay.as_millis() as u64)).map_err(refused)?;
                if let Some(running) = self.turn.as_mut() {
                    running.scheduled = true;
                }
                Ok(format!(
                    "if the contact stays silent, the next follow-up is due {} after this turn",
                    crate::duration::format(delay)
                ))
            }
            ToolCall::PlaceCall => {
                tracing::info!(instance = %id, "the agent asked to place a call; calls are not available");
                let note = "The agent tried to place a call; calls are not available yet.".to_string();
                self.record(id, Role::System, note).map_err(refused)?;
                Ok("Calls are not available yet: no call was placed. Continue by message.".into())
            }
            ToolCall::RequestHumanIntervention { reason, question } => {
                let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
                let question = question
                    .map(|q| bounded_text("question", q, limits::MAX_REASON_CHARS))
                    .transpose()
                    .map_err(refused)?;
                self.ask_a_person(id, reason, question).map_err(refused)?;
                self.detach_turn();
                Ok("a human operator has been asked to step in; stop here. Their answer, if they give one, \
                    comes in your next turn."
                    .into())
            }
            ToolCall::ContactOptedOut { reason } => {
                let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
                // The model's word alone does not silence a number for good:
                // the contact's own words must ask to stop, or a person
                // decides. A first unbacked call is refused and the turn goes
                // on (a small model called it, with the tool's description as
                // its reason, on the contact's first "hello"); a model that
                // insists hands the conversation to a person, and nothing
                // more is sent in this turn.
                if !self.contact_asked_to_stop(id) && !self.turn.as_ref().is_some_and(|t| t.opt_out_refused) {
                    if let Some(running) = self.turn.as_mut() {
                        running.opt_out_refused = true;
                    }
                    let answered = self.turn.as_ref().map(|t| t.answering.clone()).unwrap_or_default();
                    let theirs = their_words(&answered).map_or_else(String::new, |w| format!(" (they wrote {w})"));
                    return Err(ToolError(format!(
                        "not recorded: the contact's words do not ask to stop{theirs}. Go on with the objective. \
                         Only if they did ask not to be written to, call contact_opted_out again and a person will \
                         decide"
                    )));
                }
                if !self.contact_asked_to_stop(id) {
                    tracing::info!(instance = %id, "the agent's opt-out has no backing in the contact's words; a person decides");
                    let why = "the agent says the contact asked not to be written to again, but their words do not \
                               say so plainly: if they did, add the number with `relay optout add`; if not, answer \
                               or resume";
                    self.ask_a_person(id, why.into(), Some(reason)).map_err(refused)?;
                    self.detach_turn();
                    return Ok("the contact's words do not plainly ask to stop, so a person will decide; send \
                               nothing more and stop here."
                        .into());
                }
                // Its turn ends here; the opt-out ends the conversation.
                self.detach_turn();
                self.opt_out(crate::courtesy::OptOutSource::Contact, Some(id), reason).map_err(refused)?;
                Ok("the contact will not be written to again; the conversation is ended. Stop here.".into())
            }
        }
    }
}

impl Actor {
    /// Hands conversation `id` to a person with `reason` and, if any, a
    /// `question` for them (`request_human_intervention`).
    fn ask_a_person(&mut self, id: Uuid, reason: String, question: Option<String>) -> Result<(), EngineError> {
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
        if let Some(question) = asked.pending_question {
            self.shared.emit(id, EventData::Question { question });
        }
        Ok(())
    }

    /// Whether the contact's messages this turn answers (else their latest)
    /// ask relay to stop writing ([`crate::courtesy::asks_to_stop`]).
    fn contact_asked_to_stop(&self, id: Uuid) -> bool {
        let words = &self.shared.settings.courtesy.opt_out_words;
        let answering = self.turn.as_ref().map(|t| t.answering.as_slice()).unwrap_or_default();
        let latest = self.index(id).ok().and_then(|at| self.convs[at].last_contact_message.as_ref());
        let said: Vec<&str> = if answering.is_empty() {
            latest.map(|m| m.untrusted_contact_text.as_str()).into_iter().collect()
        } else {
            answering.iter().map(|m| m.untrusted_contact_text.as_str()).collect()
        };
        said.iter().any(|text| crate::courtesy::asks_to_stop(text, words))
    }
}

/// The contact's words an answer could rest on, for a refusal: a small
/// model told only "quote their words" quoted its own sentence again; shown
/// theirs, it records them. Each message is cut to a few hundred
/// characters; the words are the contact's, as in the prompt.
pub(super) fn their_words(answered: &[Evidence]) -> Option<String> {
    const SHOWN: usize = 300;
    let said: Vec<String> = answered
        .iter()
        .map(|m| m.untrusted_contact_text.trim())
        .filter(|text| !text.is_empty())
        .map(|text| format!("{:?}", text.chars().take(SHOWN).collect::<String>()))
        .collect();
    (!said.is_empty()).then(|| said.join(", then "))
}
