//! What the agent's tools do to the conversation (`send_message` is a
//! send: see [`super::sends`]). A tool acts only for the turn running now.

use uuid::Uuid;

use super::Actor;
use crate::agent::{ToolCall, ToolError};
use crate::api::limits;
use crate::api::{EventData, Evidence, MediaStatus, Outcome, Question, Role, TodoItem, TodoStatus, TranscriptMessage};
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
        tracing::debug!(instance = %id, tool = call.name(), "tool call");
        match call {
            ToolCall::SendMessage { .. } | ToolCall::SendAttachment { .. } => {
                unreachable!("handled by start_agent_send")
            }
            ToolCall::MarkTodoItem { todo_id, status, answer, value, quote, media } => {
                let instance = &self.convs[self.index(id).map_err(refused)?];
                let Some(todo) = instance.todos.iter().find(|t| t.id == todo_id) else {
                    let ids: Vec<&str> = instance.todos.iter().map(|t| t.id.as_str()).collect();
                    return Err(ToolError(format!(
                        "there is no todo '{todo_id}'; the todo ids are {}",
                        ids.join(", ")
                    )));
                };
                // A typed answer is checked now, while the contact is there
                // to be asked again: the caller gets a value that fits.
                let value = match (&todo.answer_schema, value) {
                    (Some(schema), Some(value)) => {
                        schema.admits(&value).map_err(|why| ToolError(typed_refusal(&todo_id, schema, &why)))?;
                        Some(value)
                    }
                    // Completed needs a value, unless it has one already.
                    (Some(schema), None) if status == TodoStatus::Completed && todo.value.is_none() => {
                        return Err(ToolError(format!(
                            "todo {todo_id} is not marked: it needs its answer as value, {}. Work it out from the \
                             conversation (relative days from the conversation's time), or ask the contact",
                            schema.describe()
                        )));
                    }
                    // Words only: a todo with no expected answer keeps none.
                    (None, _) | (Some(_), None) => None,
                };
                let answer =
                    answer.map(|a| bounded_text("answer", a, limits::MAX_NOTE_CHARS)).transpose().map_err(refused)?;
                // An answer is what someone told relay: the contact, or the
                // operator answering a question. Before either, a todo
                // marked with an answer is a guess (small models copied an
                // example answer into todos no one had answered), and the
                // model is told so. Without an answer a completed todo may
                // be an action done ("Tell them the parcel comes Friday"),
                // and is taken; a skipped todo's words say why it was
                // skipped, and are the model's own.
                let told = instance.last_contact_message.is_some()
                    || instance.earlier_questions.iter().any(|q| q.answer.is_some());
                let learned = answer.as_ref().filter(|_| status != TodoStatus::Skipped);
                let learned_now = learned.is_some();
                // A typed value is an answer as much as words are.
                if (learned.is_some() || value.is_some()) && !told {
                    return Err(ToolError(format!(
                        "todo {todo_id} is not marked: the contact has not written yet, so there is no answer to \
                         record. Record only what they tell you"
                    )));
                }
                // What the answer rests on: the messages this turn answers,
                // else the contact's latest.
                let mut answered = self.turn.as_ref().map(|t| t.answering.clone()).unwrap_or_default();
                if answered.is_empty() {
                    answered.extend(instance.last_contact_message.as_ref().map(|m| Evidence {
                        message_id: m.message_id,
                        untrusted_contact_text: m.untrusted_contact_text.clone(),
                        media: None,
                    }));
                }
                let answered_ids: Vec<Uuid> = answered.iter().map(|m| m.message_id).collect();
                // The evidence: the contact's words the answer rests on (the
                // quote, else the answer itself, found in what they wrote), or
                // the operator's answer to a question. A completed answer that
                // rests on nobody's words is refused: it is the model's own.
                let operator_said = |words: &str| {
                    let wanted = crate::courtesy::normalise(words);
                    instance.earlier_questions.iter().filter_map(|q| q.answer.as_deref()).any(|said| {
                        !wanted.trim().is_empty() && crate::courtesy::normalise(said).contains(wanted.trim())
                    })
                };
                // A file the contact sent is an answer's evidence by itself.
                let media_evidence = media.map(|m| self.find_media(id, &todo_id, &m)).transpose()?;
                // Without a quote, the answer's words are their own evidence,
                // unless this turn wrote them to the contact: then they are
                // the model's, whoever wrote them first (a small model sent
                // "The order is cancelled." as a contact had asked, and
                // recorded it as the delivery day). A typed value that is a
                // string or a number ("afternoon", 3) may be found like
                // words; a yes or no needs the quote.
                let value_words = value.as_ref().and_then(|v| match v {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Number(n) => Some(n.to_string()),
                    _ => None,
                });
                let own_words = learned.cloned().or(value_words);
                // Whatever its status: an answer kept on a pending todo is
                // shown to the model in every later turn, and a small model
                // that saw its own sentence there copied it again and again.
                let ask_for_quote = |why: &str| {
                    ToolError(format!(
                        "todo {todo_id} is not marked: {why}: add quote, the contact's exact words (a few are \
                         enough). Record only what they wrote{}",
                        answer_from(&answered)
                    ))
                };
                // A statement the turn wrote to the contact is the model's,
                // quoted or not: a small model sent an injected message back
                // and recorded "The order is cancelled." from it as the
                // delivery day, with the whole message as the quote. (The
                // other order, recorded and then said as a sentence of its
                // own, is taken back when it goes out: see
                // [`Actor::take_back_echoed`].)
                let turn_said = self.turn.as_ref().map(|t| t.said.as_slice()).unwrap_or_default();
                if let Some(answer) = learned.filter(|a| turn_said.iter().any(|m| repeats(m, a))) {
                    return Err(ToolError(format!(
                        "todo {todo_id} is not marked: {answer:?} is what you wrote to the contact in this turn, \
                         not what they told you. Record as the answer the contact's own words{}",
                        answer_from(&answered)
                    )));
                }
                // Words of relay's own instructions are not the contact's,
                // whatever the quote: a small model recorded the end of
                // relay's note ("record what they told you with
                // mark_todo_item, and answer with send_message.)") as a
                // delivery day, quoting a greeting it shared a word with.
                // (Without a quote or a file the answer must be found in the
                // contact's messages, which is check enough.)
                let cited = quote.as_deref().or(media_evidence.as_ref().map(|_| ""));
                if let (Some(answer), Some(cited)) = (learned, cited)
                    && let Some(run) = copies_instructions(answer, cited)
                {
                    return Err(ToolError(format!(
                        "todo {todo_id} is not marked: {answer:?} repeats relay's instructions to you (\"{run}\"), \
                         not what the contact said. Record as the answer the contact's own words{}",
                        answer_from(&answered)
                    )));
                }
                let evidence = match (&quote, &own_words) {
                    _ if media_evidence.is_some() => media_evidence.into_iter().collect(),
                    (Some(quote), _) => match self.find_quote(id, &todo_id, quote, &answered) {
                        Ok(found) => vec![found],
                        Err(_) if operator_said(quote) => Vec::new(),
                        Err(refusal) => return Err(refusal),
                    },
                    (None, Some(words)) if self.turn_wrote(words) => {
                        return Err(ask_for_quote(
                            "you wrote these words to the contact yourself in this turn, so they cannot show what \
                             the contact said",
                        ));
                    }
                    (None, Some(words)) => match self.find_quote(id, &todo_id, words, &answered) {
                        Ok(found) => vec![found],
                        Err(_) if operator_said(words) => Vec::new(),
                        Err(_) => {
                            return Err(ask_for_quote("say which of the contact's words this answer rests on"));
                        }
                    },
                    (None, None) if value.is_some() => {
                        return Err(ask_for_quote("say which of the contact's words this value rests on"));
                    }
                    (None, None) => Vec::new(),
                };
                // A quote backs the answer it comes with, not any answer: a
                // small model shown the contact's words quoted them beside
                // a delivery day of its own ("... is Friday 2026-11-27").
                if let (Some(quote), Some(learned)) = (&quote, learned) {
                    rests_on(learned, quote).map_err(|why| {
                        ToolError(format!(
                            "todo {todo_id} is not marked: the answer {learned:?} says what the quote does not \
                             ({why}). Record as the answer what the contact told you, in their words"
                        ))
                    })?;
                }
                let recorded = answer.clone();
                let before = todo.clone();
                self.update(id, |i| {
                    let todo = i.todos.iter_mut().find(|t| t.id == todo_id).expect("checked above");
                    // A skipped todo's words are why it was skipped, the
                    // model's own: taken up again, it has no answer (a small
                    // model saw its reason shown as the answer every turn).
                    if todo.status == TodoStatus::Skipped && status != TodoStatus::Skipped {
                        todo.answer = None;
                        todo.answer_message_ids.clear();
                        todo.evidence.clear();
                    }
                    todo.status = status;
                    // The messages an answer or a value rests on: those its
                    // evidence was found in, else the ones this turn answers.
                    // (A value alone kept none, and a reader could not tell
                    // when the contact had given it.)
                    if answer.is_some() || value.is_some() {
                        todo.answer_message_ids = match evidence.is_empty() {
                            true => answered_ids,
                            false => evidence.iter().map(|e| e.message_id).collect(),
                        };
                    }
                    if answer.is_some() {
                        todo.answer = answer;
                    }
                    if value.is_some() {
                        todo.value = value;
                    }
                    if !evidence.is_empty() {
                        todo.evidence = evidence;
                    }
                })
                .map_err(refused)?;
                // The todo as it was before the turn first answered it.
                if let Some(running) = self.turn.as_mut().filter(|_| learned_now)
                    && !running.recorded.iter().any(|t| t.id == todo_id)
                {
                    running.recorded.push(before);
                }
                self.shared.emit(id, EventData::Todo { todo_id: todo_id.clone(), status, answer: recorded });
                Ok(format!("todo {todo_id} is now {}", status.as_str()))
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

    /// Whether the running turn wrote `words` to the contact: they are
    /// within (case, spacing and punctuation aside) a message it sent.
    fn turn_wrote(&self, words: &str) -> bool {
        let wanted = crate::courtesy::normalise(words);
        let sent = self.turn.as_ref().map(|t| t.said.as_slice()).unwrap_or_default();
        !wanted.is_empty() && sent.iter().any(|said| contains_words(&crate::courtesy::normalise(said), &wanted))
    }

    /// After the turn's message `sent` went out: the answers this turn
    /// recorded that the message says as sentences of their own
    /// ([`states`]) are taken back (each todo as it was before the turn),
    /// and the model is told why: a small model recorded "The order is
    /// cancelled." as the delivery day, in the reply that then sent it. A
    /// confirmation that repeats an answer ("Perfect: Friday around 3pm.")
    /// leaves it.
    pub(super) fn take_back_echoed(&mut self, id: Uuid, turn: u64, sent: &str) -> Option<String> {
        let running = self.turn.as_mut().filter(|t| t.number == turn && t.instance == id)?;
        let at = self.convs.iter().position(|c| c.id == id)?;
        let todos = &self.convs[at].todos;
        let echoed = |before: &TodoItem| {
            let answer = todos.iter().find(|t| t.id == before.id)?.answer.as_deref()?;
            states(sent, answer).then(|| (before.clone(), answer.to_string()))
        };
        let taken: Vec<(TodoItem, String)> = running.recorded.iter().filter_map(echoed).collect();
        running.recorded.retain(|t| !taken.iter().any(|(before, _)| before.id == t.id));
        let mut notes = Vec::new();
        for (before, answer) in taken {
            let restored = self.update(id, |i| {
                if let Some(todo) = i.todos.iter_mut().find(|t| t.id == before.id) {
                    *todo = before.clone();
                }
            });
            if let Err(error) = restored {
                tracing::error!(instance = %id, %error, "cannot take back an answer the agent wrote itself");
                continue;
            }
            tracing::info!(instance = %id, todo = %before.id, "an answer the agent then wrote to the contact is taken back");
            let (todo_id, status, previous) = (before.id.clone(), before.status, before.answer.clone());
            self.shared.emit(id, EventData::Todo { todo_id: todo_id.clone(), status, answer: previous });
            notes.push(format!(
                "todo {todo_id} is {} again: {answer:?} is what you just wrote to the contact, not what they told \
                 you. Record as the answer the contact's own words, or leave it and ask",
                status.as_str()
            ));
        }
        (!notes.is_empty()).then(|| notes.join(". "))
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
fn their_words(answered: &[Evidence]) -> Option<String> {
    const SHOWN: usize = 300;
    let said: Vec<String> = answered
        .iter()
        .map(|m| m.untrusted_contact_text.trim())
        .filter(|text| !text.is_empty())
        .map(|text| format!("{:?}", text.chars().take(SHOWN).collect::<String>()))
        .collect();
    (!said.is_empty()).then(|| said.join(", then "))
}

/// [`their_words`] after an answer's refusal, with what to do with them.
fn answer_from(answered: &[Evidence]) -> String {
    their_words(answered).map_or_else(String::new, |words| {
        format!(
            ". The contact's latest words: {words}. Record them only where they answer the todo; if they do not, \
             leave it pending and ask"
        )
    })
}

/// Why a typed value was refused, and what to do, for the model: "todo 2
/// needs a date like "2026-11-27"; "next Friday" is not one: ...".
fn typed_refusal(todo_id: &str, schema: &crate::api::AnswerSchema, why: &str) -> String {
    format!(
        "todo {todo_id} is not marked: its value must be {}; {why}. Work it out from the conversation (relative days \
         from the conversation's time), or ask the contact",
        schema.describe()
    )
}

impl Actor {
    /// Where the contact wrote `quote` in conversation `id`: the piece of
    /// their message, as they wrote it. Case, spacing and punctuation aside,
    /// it must be there: an answer no one wrote cannot cite anything. The
    /// messages the turn answers are looked at first; the transcript is
    /// read only for an older one.
    fn find_quote(&self, id: Uuid, todo_id: &str, quote: &str, answered: &[Evidence]) -> Result<Evidence, ToolError> {
        let wanted: Vec<String> = crate::courtesy::normalise(quote).split(' ').map(str::to_string).collect();
        let found_in = |message_id: Uuid, text: &str| {
            quoted_piece(text, &wanted).map(|piece| Evidence { message_id, untrusted_contact_text: piece, media: None })
        };
        let recent = answered.iter().rev().find_map(|m| found_in(m.message_id, &m.untrusted_contact_text));
        let found = match recent {
            Some(found) => Some(found),
            None => {
                let transcript = self.shared.store.read_transcript(id).map_err(|e| ToolError(e.to_string()))?;
                transcript.iter().rev().filter(|m| m.role == Role::Contact).find_map(|m| found_in(m.id, &m.content))
            }
        };
        found.ok_or_else(|| {
            ToolError(format!(
                "todo {todo_id} is not marked: the contact never wrote {quote:?}. Quote their exact words (a \
                 few are enough){}",
                answer_from(answered)
            ))
        })
    }
}

impl Actor {
    /// The contact's file `reference` (`m2`) in conversation `id`, kept, as
    /// an answer's evidence: its message, its caption, and the reference.
    fn find_media(&self, id: Uuid, todo_id: &str, reference: &str) -> Result<Evidence, ToolError> {
        let transcript = self.shared.store.read_transcript(id).map_err(|e| ToolError(e.to_string()))?;
        let files: Vec<&TranscriptMessage> =
            transcript.iter().filter(|m| m.role == Role::Contact && m.media.is_some()).collect();
        let wanted = reference.trim().to_ascii_lowercase();
        let found = files.iter().find(|m| m.media.as_ref().is_some_and(|f| f.reference == wanted));
        let Some(message) = found else {
            let theirs: Vec<&str> =
                files.iter().filter_map(|m| m.media.as_deref()).map(|f| f.reference.as_str()).collect();
            let sent = match theirs.is_empty() {
                true => "the contact has sent no file".to_string(),
                false => format!("the contact's files are {}", theirs.join(", ")),
            };
            return Err(ToolError(format!("todo {todo_id} is not marked: there is no file {reference:?}; {sent}")));
        };
        let file = message.media.as_deref().expect("found by its media");
        if file.status != MediaStatus::Stored {
            return Err(ToolError(format!(
                "todo {todo_id} is not marked: relay could not keep {} ({}); ask them to send it again",
                file.reference,
                file.status.as_str().replace('_', " ")
            )));
        }
        Ok(Evidence {
            message_id: message.id,
            untrusted_contact_text: file.caption.clone().unwrap_or_default(),
            media: Some(file.reference.clone()),
        })
    }
}

/// An answer of this many words or more is a statement of its own ("The
/// order is cancelled."); a shorter one is a fact a confirmation naturally
/// repeats ("Friday", "after 3pm").
const STATEMENT_WORDS: usize = 3;

/// The answer's words, normalised, if it is a statement.
fn statement(answer: &str) -> Option<String> {
    let answer = crate::courtesy::normalise(answer);
    (answer.split(' ').filter(|w| !w.is_empty()).count() >= STATEMENT_WORDS).then_some(answer)
}

/// Whether `message`, written before `answer` was recorded, holds it whole
/// (case, spacing and punctuation aside): the words were the model's before
/// they were an answer.
fn repeats(message: &str, answer: &str) -> bool {
    statement(answer).is_some_and(|answer| contains_words(&crate::courtesy::normalise(message), &answer))
}

/// Whether `message`, written after `answer` was recorded, says it as a
/// sentence of its own ("The order is cancelled. Anything else?"). A
/// confirmation that repeats an answer inside a sentence of its own
/// ("Perfect: Friday around 3pm.") does not.
fn states(message: &str, answer: &str) -> bool {
    let sentences = message.split(['.', '!', '?', ';', '\n']).map(crate::courtesy::normalise);
    statement(answer).is_some_and(|answer| sentences.into_iter().any(|sentence| sentence == answer))
}

/// Whether normalised `text` holds the normalised words `wanted`, whole
/// words only ("friday" is not within "fridays").
fn contains_words(text: &str, wanted: &str) -> bool {
    format!(" {text} ").contains(&format!(" {wanted} "))
}

/// The run of `message`'s words that reads as `wanted` (normalised words,
/// see [`crate::courtesy::normalise`]), as the contact wrote it.
fn quoted_piece(message: &str, wanted: &[String]) -> Option<String> {
    if wanted.iter().all(|w| w.is_empty()) {
        return None;
    }
    let words: Vec<&str> = message.split_whitespace().collect();
    // Each normalised token, with the message word it comes from.
    let tokens: Vec<(usize, String)> = words
        .iter()
        .enumerate()
        .flat_map(|(n, w)| {
            let normalised = crate::courtesy::normalise(w);
            normalised.split(' ').filter(|t| !t.is_empty()).map(|t| (n, t.to_string())).collect::<Vec<_>>()
        })
        .collect();
    let start = tokens.windows(wanted.len()).position(|run| run.iter().map(|(_, t)| t).eq(wanted.iter()))?;
    let (first, last) = (tokens[start].0, tokens[start + wanted.len() - 1].0);
    Some(words[first..=last].join(" "))
}

/// Words of 4 letters or more that say nothing of an answer by themselves,
/// in the languages relay's agent is rated in. Sharing one with the quote
/// is no sign that the answer rests on it: the 0.5B model recorded relay's
/// own instruction ("record what they told you with mark_todo_item...") as
/// an answer, quoting "Hi, yes that's me. What do you need?" ("what").
const FUNCTION_WORDS: &[&str] = &[
    // English
    "what", "what's", "that", "that's", "this", "these", "those", "with", "they", "they're", "them", "their", "there",
    "then", "than", "have", "has", "from", "your", "yours", "will", "would", "could", "should", "shall", "been",
    "being", "were", "when", "where", "which", "while", "about", "just", "also", "only", "into", "onto", "some",
    "here", "does", "doesn't", "don't", "didn't", "done", "like", "very", "want", "need", "know", "okay", "sure",
    "please", "thanks", "thank", "hello", "it's", "i'll", "i'm", "let's", "can't", "won't", "because", "maybe",
    "every", "other", "more", "most", "much", "many", "well", "yeah", // Spanish
    "para", "pero", "como", "cómo", "esto", "esta", "está", "este", "estos", "estas", "todo", "toda", "todos", "bien",
    "sobre", "cuando", "donde", "dónde", "porque", "tengo", "tiene", "hola", "gracias", "quiero", "necesito", "puedo",
    "puede", "desde", "hasta", "entre", "también", "muy", "nada", "algo", "pues", "sí",
];

/// Whether `answer` rests on `quote`, the words given as its evidence: each
/// number in it is in the quote (a date or an amount is never the model's
/// to add), and it shares with the quote a word of 4 letters or more that
/// is not a [`FUNCTION_WORDS`] one, or holds no word the quote lacks
/// ("yes", "3pm"). Else why not, for the model. Words compare as
/// [`crate::courtesy::normalise`] leaves them.
fn rests_on(answer: &str, quote: &str) -> Result<(), String> {
    let quoted = crate::courtesy::normalise(quote);
    let quoted: std::collections::HashSet<&str> = quoted.split(' ').collect();
    let answer = crate::courtesy::normalise(answer);
    let words: Vec<&str> = answer.split(' ').filter(|w| !w.is_empty()).collect();
    let number = |w: &str| w.chars().any(char::is_numeric);
    if let Some(added) = words.iter().find(|w| number(w) && !quoted.contains(*w)) {
        return Err(format!("{added} is not in it"));
    }
    let shared = words.iter().filter(|w| says_something(w)).any(|w| quoted.contains(w));
    match shared || words.iter().all(|w| quoted.contains(w)) {
        true => Ok(()),
        false => Err("they share no word".into()),
    }
}

/// Whether a word says something by itself: 4 letters or more, no digit,
/// and not one of the [`FUNCTION_WORDS`].
fn says_something(word: &str) -> bool {
    word.chars().count() >= 4 && !word.chars().any(char::is_numeric) && !FUNCTION_WORDS.contains(&word)
}

/// A run of [`prompt::INSTRUCTION_RUN_WORDS`] words of `answer`, with a
/// word that says something by itself, that relay's own instructions to
/// the model hold and `quote` does not: the answer copies relay, not the
/// contact. (A contact may happen to say what relay's prompt says; then
/// their quote holds it.)
///
/// [`prompt::INSTRUCTION_RUN_WORDS`]: crate::agent::prompt::INSTRUCTION_RUN_WORDS
fn copies_instructions(answer: &str, quote: &str) -> Option<String> {
    use crate::agent::prompt::{INSTRUCTION_RUN_WORDS, instructions_hold};
    let quoted = format!(" {} ", crate::courtesy::normalise(quote));
    let answer = crate::courtesy::normalise(answer);
    let words: Vec<&str> = answer.split(' ').filter(|w| !w.is_empty()).collect();
    words
        .windows(INSTRUCTION_RUN_WORDS)
        .filter(|run| run.iter().any(|w| says_something(w)))
        .map(|run| run.join(" "))
        .find(|run| instructions_hold(run) && !quoted.contains(&format!(" {run} ")))
}

#[cfg(test)]
mod tests {
    use super::{contains_words, copies_instructions, quoted_piece, repeats, rests_on, states};
    use crate::courtesy::normalise;
    use proptest::prelude::*;

    fn wanted(quote: &str) -> Vec<String> {
        crate::courtesy::normalise(quote).split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_quote_is_found_as_the_contact_wrote_it() {
        let said = "Hi! Friday works, around 3pm. Thanks";
        assert_eq!(quoted_piece(said, &wanted("friday WORKS")), Some("Friday works,".into()));
        assert_eq!(quoted_piece(said, &wanted("Saturday")), None);
        assert_eq!(quoted_piece(said, &wanted("!!")), None, "no words, nothing cited");
    }

    proptest! {
        /// Any run of a message's words, in other case and with other
        /// punctuation around it, is found, and gives back those words as
        /// written; a word the message does not have is never found.
        #[test]
        fn any_run_of_the_words_is_found_and_nothing_else(
            words in proptest::collection::vec("[a-zA-Z0-9]{1,8}[,.!?]?", 1..20),
            from in any::<prop::sample::Index>(),
            len in 1usize..5,
        ) {
            let message = words.join(" ");
            let start = from.index(words.len());
            let end = (start + len).min(words.len());
            let quote = words[start..end].join("  ").to_uppercase();
            let piece = quoted_piece(&message, &wanted(&quote)).expect("a run of its own words");
            prop_assert_eq!(crate::courtesy::normalise(&piece), crate::courtesy::normalise(&quote));
            prop_assert!(message.contains(&piece));
            prop_assert_eq!(quoted_piece(&message, &wanted("zzzzzzzzz")), None);
        }

        /// What a turn wrote holds any run of its whole words, in any case
        /// and punctuation (the answer is then the model's own); never a
        /// word it does not have, nor a word cut short ("friday" is not in
        /// "fridays").
        #[test]
        fn what_the_turn_wrote_holds_its_runs_of_whole_words(
            words in proptest::collection::vec("[a-zA-Z0-9]{2,8}[,.!?]?", 1..20),
            from in any::<prop::sample::Index>(),
            len in 1usize..5,
        ) {
            let sent = normalise(&words.join(" "));
            let start = from.index(words.len());
            let run = words[start..(start + len).min(words.len())].join(" ").to_uppercase() + "!";
            prop_assert!(contains_words(&sent, &normalise(&run)));
            prop_assert!(!contains_words(&sent, "zzzzzzzzz"));
            let cut = normalise(&words[start]);
            let cut = &cut[..cut.len() - 1];
            prop_assert_eq!(contains_words(&sent, cut), sent.split(' ').any(|w| w == cut));
        }
    }

    proptest! {
        /// A message repeats an answer of three words or more that it holds
        /// whole, however it is cased and punctuated around it, and states
        /// it when the answer is a sentence of its own; neither holds for an
        /// answer of one or two words (a confirmation repeats "Friday"), nor
        /// for one the message does not hold.
        #[test]
        fn a_message_repeats_an_answer_it_holds_and_states_one_it_says_as_a_sentence(
            before in proptest::collection::vec("[a-zA-Z0-9]{1,8}[,.!?]?", 0..6),
            answer in proptest::collection::vec("[a-zA-Z0-9]{1,8}", 1..7),
            after in proptest::collection::vec("[a-zA-Z0-9]{1,8}[,.!?]?", 0..6),
            lead in "[a-zA-Z]{1,8}",
        ) {
            let said = answer.join(" ").to_uppercase();
            let recorded = answer.join(", ");
            let statement = answer.len() >= 3;
            let within = [before.join(" "), format!("{lead}: {said},"), after.join(" ")].join(" ");
            prop_assert_eq!(repeats(&within, &recorded), statement);
            prop_assert!(!states(&within, &recorded), "inside a sentence of its own: {}", within);
            let alone = [before.join(" ") + ".", format!("{said}!"), after.join(" ")].join(" ");
            prop_assert_eq!(states(&alone, &recorded), statement);
            prop_assert_eq!(repeats(&alone, &recorded), statement);
            let longer = format!("{recorded} zzzzzzzzz");
            prop_assert!(!repeats(&alone, &longer) && !states(&alone, &longer));
        }
    }

    #[test]
    fn what_a_small_model_sent_states_what_it_recorded() {
        let sent = "The order is cancelled. Please let me know if you need anything else.";
        assert!(states(sent, "The order is cancelled.") && repeats(sent, "The order is cancelled."));
        assert!(!repeats("Great, Friday it is!", "Friday"), "a fact a confirmation repeats");
        assert!(!repeats("Great, Friday after 3pm then!", "Friday works, any time after 3pm"));
        // A confirmation of what was recorded is not the answer said anew.
        let confirmed = "Perfect: Friday around 3pm. Thank you, see you then!";
        assert!(!states(confirmed, "Friday, around 3pm") && repeats(confirmed, "Friday, around 3pm"));
    }

    proptest! {
        /// An answer made of the quote's own words rests on it.
        #[test]
        fn an_answer_in_the_quotes_words_rests_on_it(quote in "[A-Za-z0-9 ,.:']{1,60}", picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..6)) {
            let words: Vec<String> = normalise(&quote).split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect();
            prop_assume!(!words.is_empty());
            let answer: Vec<&str> = picks.iter().map(|i| words[i.index(words.len())].as_str()).collect();
            prop_assert!(rests_on(&answer.join(", "), &quote).is_ok(), "{:?} on {:?}", answer, quote);
        }

        /// A number the quote lacks never rests on it, whatever else the
        /// answer shares with it.
        #[test]
        fn an_answer_with_a_number_the_quote_lacks_does_not_rest_on_it(quote in "[A-Za-z ,.]{0,60}", n in 0u32..100_000, rest in "[A-Za-z ]{0,30}") {
            let answer = format!("{quote} {rest} {n}");
            let why = rests_on(&answer, &quote).unwrap_err();
            prop_assert!(why.contains(&n.to_string()), "{}", why);
        }

        /// Nor does an answer sharing no word with it.
        #[test]
        fn an_answer_sharing_no_word_with_the_quote_does_not_rest_on_it(quote in "[a-m ]{1,40}", answer in "[n-z]{1,8}( [n-z]{1,8}){0,4}") {
            prop_assert!(rests_on(&answer, &quote).is_err());
        }

        /// Words that say nothing by themselves ("what", "with", "para")
        /// shared with the quote are no evidence: an answer of other words
        /// does not rest on it, however many of them both hold.
        #[test]
        fn sharing_only_words_that_say_nothing_is_no_evidence(
            common in proptest::collection::vec(prop::sample::select(super::FUNCTION_WORDS.to_vec()), 1..4),
            quote in "[a-m]{1,8}( [a-m]{1,8}){0,4}",
            answer in "[n-z]{1,8}( [n-z]{1,8}){0,4}",
        ) {
            let common = common.join(" ");
            let quote = format!("{quote}, {common}?");
            let (before, after) = (format!("{common} {answer}"), format!("{answer} {common}."));
            prop_assert!(rests_on(&before, &quote).is_err(), "{}", quote);
            prop_assert!(rests_on(&after, &quote).is_err(), "{}", quote);
        }
    }

    proptest! {
        /// Any run of relay's own instructions (ten words or fewer, from
        /// any of its texts, in other case and punctuation, with words of
        /// the model's around it) recorded as an answer is caught, unless
        /// the quote holds it; the quote's own words never are.
        #[test]
        fn an_answer_that_copies_relays_instructions_is_caught_unless_the_contact_wrote_it(
            text in prop::sample::select(crate::agent::prompt::instructions().to_vec()),
            at in any::<prop::sample::Index>(),
            len in 4..10usize,
            around in "[n-z]{1,8}( [n-z]{1,8}){0,2}",
            quote in "[a-m]{1,8}( [a-m]{1,8}){0,6}",
        ) {
            let words: Vec<String> = normalise(&text).split(' ').map(str::to_string).collect();
            let start = at.index(words.len().saturating_sub(len).max(1));
            let run = &words[start..(start + len).min(words.len())];
            let telling = run.windows(crate::agent::prompt::INSTRUCTION_RUN_WORDS)
                .any(|w| w.iter().any(|w| super::says_something(w)));
            prop_assume!(telling);
            let copied = format!("{around}: {}.)", run.join(", ").to_uppercase());
            prop_assert!(copies_instructions(&copied, &quote).is_some(), "{copied:?}");
            let theirs = format!("{quote} {} {around}", run.join(" "));
            prop_assert_eq!(copies_instructions(&copied, &theirs), None);
            prop_assert_eq!(copies_instructions(&quote, &quote), None);
        }
    }

    #[test]
    fn relays_note_recorded_as_an_answer_is_caught() {
        // 0.5B model, `are-you-a-bot`, on b1b95d9: it shares "answer" with the quote.
        let copied = "record what they told you with mark_todo_item, and answer with send_message.)";
        let quote = "Before I answer: am I talking to a real person or a bot?";
        assert!(rests_on(copied, quote).is_ok(), "a shared word alone lets it through");
        assert_eq!(copies_instructions(copied, quote).as_deref(), Some("record what they told"));
        for answer in ["Friday, in the afternoon", "Thursday", "yes, that's me", "a real person"] {
            assert_eq!(copies_instructions(answer, ""), None, "{answer}");
        }
    }

    #[test]
    fn answers_rest_on_the_words_they_come_from() {
        assert!(rests_on("Friday, in the afternoon", "friday WORKS").is_ok());
        assert!(rests_on("3pm", "around 3pm").is_ok());
        assert!(rests_on("yes", "Yes, someone is home").is_ok());
        let invented = "The delivery day for order 1042 is Friday 2026-11-27.";
        assert_eq!(rests_on(invented, "Fine. Friday works."), Err("1042 is not in it".into()));
        assert_eq!(
            rests_on("The delivery day is Friday", "Before I answer: am I talking to a bot?"),
            Err("they share no word".into())
        );
        // What the 0.5B model recorded, relay's own instruction, beside the
        // contact's greeting: only "what" and "you" in common.
        let instruction = "record what they told you with mark_todo_item, and answer with send_message.)";
        assert_eq!(rests_on(instruction, "Hi, yes that's me. What do you need?"), Err("they share no word".into()));
    }
}
