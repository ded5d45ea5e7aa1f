//! `mark_todo_item`: what the agent learned is recorded on a todo only when
//! it rests on what someone said. An answer rests on the contact's words
//! (its quote, found in what they wrote, or a file they sent) or on the
//! operator's answer to a question; a typed value is also read from those
//! words by relay ([`crate::grounding`]), or, when relay cannot read it by
//! rule, confirmed by a second, narrow model call (`agent::verify`), so the
//! Main Agent can act on `value` without reading the chat.

use serde_json::Value;
use uuid::Uuid;

mod value_check;

use super::their_words;
use crate::agent::{ToolCall, ToolError, Verification};
use crate::api::limits;
use crate::api::{
    AnswerFormat, EventData, Evidence, MediaInfo, MediaStatus, Role, TodoItem, TodoStatus, TranscriptMessage,
};
use crate::engine::actor::Actor;
use crate::engine::conversation::{self, Mark};
use crate::engine::evidence::{contains_words, copies_instructions, quoted_piece, repeats, rests_on, states};
use crate::engine::{EngineError, bounded_text};

/// What a `mark_todo_item` call came to.
pub(crate) enum Marked {
    /// Recorded (or refused): the text the model sees.
    Done(String),
    /// relay cannot read the value by rule: a model must confirm it first,
    /// and the call is made again with its verdict.
    Verify(Box<Verification>),
}

/// A contact's file an answer rests on: the evidence, and what the model
/// was given of it (its caption, a voice note's transcript).
pub(super) struct FileEvidence {
    pub(super) evidence: Evidence,
    pub(super) media: Box<MediaInfo>,
}

/// The words an answer rests on, and what they are.
pub(super) struct Grounds {
    pub(super) evidence: Vec<Evidence>,
    pub(super) file: Option<FileEvidence>,
}

impl Actor {
    /// Runs `mark_todo_item` for turn `turn`. `verified`: a model already
    /// confirmed the value from its evidence ([`Marked::Verify`]).
    pub(in crate::engine::actor) fn mark_todo(
        &mut self,
        id: Uuid,
        turn: u64,
        call: ToolCall,
        verified: bool,
    ) -> Result<Marked, ToolError> {
        self.check_turn(id, turn)?;
        let ToolCall::MarkTodoItem { todo_id, status, answer, value, quote, media } = call else {
            unreachable!("only mark_todo_item is routed here")
        };
        let refused = |e: EngineError| ToolError(e.to_string());
        let instance = &self.convs[self.index(id).map_err(refused)?];
        let todo = todo_of(&instance.todos, &todo_id)?;
        let value = typed_value(todo, value, status)?;
        let answer = answer.map(|a| bounded_text("answer", a, limits::MAX_NOTE_CHARS)).transpose().map_err(refused)?;
        // An answer is what someone told relay: the contact, or the operator
        // answering a question. Without an answer a completed todo may be an
        // action done ("Tell them the parcel comes Friday"); a skipped
        // todo's words say why it was skipped, and are the model's own.
        let told =
            instance.last_contact_message.is_some() || instance.earlier_questions.iter().any(|q| q.answer.is_some());
        let learned = answer.as_ref().filter(|_| status != TodoStatus::Skipped);
        if (learned.is_some() || value.is_some()) && !told {
            return Err(ToolError(format!(
                "todo {todo_id} is not marked: the contact has not written yet, so there is no answer to record. \
                 Record only what they tell you"
            )));
        }
        let answered = self.answered(id);
        let file = media.map(|m| self.find_media(id, &todo_id, &m)).transpose()?;
        self.refuse_the_models_words(&todo_id, learned, quote.as_deref(), file.is_some(), &answered)?;
        let grounds = self.grounds(id, &todo_id, learned, &value, quote.as_deref(), file, &answered)?;
        // A quote backs the answer it comes with, not any answer.
        if let (Some(quote), Some(learned)) = (&quote, learned) {
            rests_on(learned, quote).map_err(|why| {
                ToolError(format!(
                    "todo {todo_id} is not marked: the answer {learned:?} says what the quote does not ({why}). \
                     Record as the answer what the contact told you, in their words"
                ))
            })?;
        }
        let check = match (&value, todo.answer_schema.as_ref()) {
            (Some(value), Some(schema)) => match self.ground(id, todo, schema, value, &grounds, verified)? {
                Ok(check) => Some(check),
                Err(verification) => return Ok(Marked::Verify(verification)),
            },
            _ => None,
        };
        let answered_ids: Vec<Uuid> = answered.iter().map(|m| m.message_id).collect();
        let mark = Mark { todo_id, status, answer, value, check, evidence: grounds.evidence, answered_ids };
        self.record_mark(id, turn, mark).map(Marked::Done)
    }

    /// The contact's messages the running turn answers, else their latest:
    /// what an answer rests on unless its quote is older.
    fn answered(&self, id: Uuid) -> Vec<Evidence> {
        let answering = self.turn.as_ref().map(|t| t.answering.clone()).unwrap_or_default();
        if !answering.is_empty() {
            return answering;
        }
        let latest = self.index(id).ok().and_then(|at| self.convs[at].last_contact_message.as_ref());
        latest
            .map(|m| Evidence {
                message_id: m.message_id,
                untrusted_contact_text: m.untrusted_contact_text.clone(),
                media: None,
                changed: None,
            })
            .into_iter()
            .collect()
    }

    /// Refuses an answer that is the model's own words: what this turn wrote
    /// to the contact (quoted or not), or a run of relay's instructions to
    /// the model that the quote does not hold. (The other order, recorded
    /// and then said, is taken back when it goes out: [`Actor::take_back_echoed`].)
    fn refuse_the_models_words(
        &self,
        todo_id: &str,
        learned: Option<&String>,
        quote: Option<&str>,
        file: bool,
        answered: &[Evidence],
    ) -> Result<(), ToolError> {
        let Some(answer) = learned else { return Ok(()) };
        let turn_said = self.turn.as_ref().map(|t| t.said.as_slice()).unwrap_or_default();
        if turn_said.iter().any(|m| repeats(m, answer)) {
            return Err(ToolError(format!(
                "todo {todo_id} is not marked: {answer:?} is what you wrote to the contact in this turn, not what \
                 they told you. Record as the answer the contact's own words{}",
                answer_from(answered)
            )));
        }
        // Without a quote or a file the answer must be found in the
        // contact's messages, which is check enough.
        let cited = quote.or(file.then_some(""));
        if let Some(run) = cited.and_then(|cited| copies_instructions(answer, cited)) {
            return Err(ToolError(format!(
                "todo {todo_id} is not marked: {answer:?} repeats relay's instructions to you (\"{run}\"), not what \
                 the contact said. Record as the answer the contact's own words{}",
                answer_from(answered)
            )));
        }
        Ok(())
    }

    /// What the answer rests on: the contact's file; or their words (the
    /// quote, else the answer or value itself, found in what they wrote);
    /// or the operator's answer to a question (no evidence). A value or an
    /// answer that rests on nobody's words is refused.
    #[allow(clippy::too_many_arguments)]
    fn grounds(
        &self,
        id: Uuid,
        todo_id: &str,
        learned: Option<&String>,
        value: &Option<Value>,
        quote: Option<&str>,
        file: Option<FileEvidence>,
        answered: &[Evidence],
    ) -> Result<Grounds, ToolError> {
        if let Some(file) = file {
            return Ok(Grounds { evidence: vec![file.evidence.clone()], file: Some(file) });
        }
        let words = |evidence: Vec<Evidence>| Ok(Grounds { evidence, file: None });
        // A yes or no is found only through its quote.
        let value_words = value.as_ref().and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        let own_words = learned.cloned().or(value_words);
        let ask_for_quote = |why: &str| {
            ToolError(format!(
                "todo {todo_id} is not marked: {why}: add quote, the contact's exact words (a few are enough). \
                 Record only what they wrote{}",
                answer_from(answered)
            ))
        };
        let instance = &self.convs[self.index(id).map_err(|e| ToolError(e.to_string()))?];
        let operator_said = |words: &str| {
            let wanted = crate::courtesy::normalise(words);
            let said = instance.earlier_questions.iter().filter_map(|q| q.answer.as_deref());
            !wanted.is_empty() && said.map(crate::courtesy::normalise).any(|said| contains_words(&said, &wanted))
        };
        match (quote, own_words.as_deref()) {
            (Some(quote), _) => match self.find_quote(id, todo_id, quote, answered) {
                Ok(found) => words(vec![found]),
                Err(_) if operator_said(quote) => words(Vec::new()),
                Err(refusal) => Err(refusal),
            },
            (None, Some(own)) if self.turn_wrote(own) => Err(ask_for_quote(
                "you wrote these words to the contact yourself in this turn, so they cannot show what the contact said",
            )),
            (None, Some(own)) => match self.find_quote(id, todo_id, own, answered) {
                Ok(found) => words(vec![found]),
                Err(_) if operator_said(own) => words(Vec::new()),
                Err(_) => Err(ask_for_quote("say which of the contact's words this answer rests on")),
            },
            (None, None) if value.is_some() => {
                Err(ask_for_quote("say which of the contact's words this value rests on"))
            }
            (None, None) => words(Vec::new()),
        }
    }
}

impl Actor {
    /// Writes a checked mark to the todo ([`conversation::todo_marked`]),
    /// and keeps the todo as it was before for [`Actor::take_back_echoed`].
    fn record_mark(&mut self, id: Uuid, turn: u64, mark: Mark) -> Result<String, ToolError> {
        let at = self.index(id).map_err(|e| ToolError(e.to_string()))?;
        let before = todo_of(&self.convs[at].todos, &mark.todo_id)?.clone();
        let (todo_id, status) = (mark.todo_id.clone(), mark.status);
        let learned_now = mark.answer.is_some() && status != TodoStatus::Skipped;
        let step = conversation::todo_marked(&self.convs[at], mark, crate::clock::now());
        self.run_step(id, step).map_err(|e| ToolError(e.to_string()))?;
        if let Some(running) = self.turn.as_mut().filter(|t| learned_now && t.number == turn)
            && !running.recorded.iter().any(|t| t.id == todo_id)
        {
            running.recorded.push(before);
        }
        Ok(format!("todo {todo_id} is now {}", status.as_str()))
    }
}

/// The todo `todo_id` of `todos`, or a refusal naming the ids there are.
fn todo_of<'a>(todos: &'a [TodoItem], todo_id: &str) -> Result<&'a TodoItem, ToolError> {
    todos.iter().find(|t| t.id == todo_id).ok_or_else(|| {
        let ids: Vec<&str> = todos.iter().map(|t| t.id.as_str()).collect();
        ToolError(format!("there is no todo '{todo_id}'; the todo ids are {}", ids.join(", ")))
    })
}

/// The value a mark may keep: one that fits the todo's answer schema, while
/// the contact is there to be asked again; none for a todo without one.
/// Completing a typed todo needs a value, unless it has one already.
fn typed_value(todo: &TodoItem, value: Option<Value>, status: TodoStatus) -> Result<Option<Value>, ToolError> {
    let todo_id = &todo.id;
    match (&todo.answer_schema, value) {
        (Some(schema), Some(value)) => {
            let value = schema.coerce(value);
            schema.admits(&value).map_err(|why| ToolError(typed_refusal(todo_id, schema, &why)))?;
            Ok(Some(value))
        }
        (Some(schema), None) if status == TodoStatus::Completed && todo.value.is_none() => Err(ToolError(format!(
            "todo {todo_id} is not marked: it needs its answer as value, {}. Work it out from the conversation \
             (relative days from the conversation's time), or ask the contact",
            schema.describe()
        ))),
        (None, _) | (Some(_), None) => Ok(None),
    }
}

/// [`their_words`] after an answer's refusal, with what to do with them.
pub(super) fn answer_from(answered: &[Evidence]) -> String {
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
    let days = matches!(schema.format, Some(AnswerFormat::Date | AnswerFormat::DateTime));
    let how = if days { " (relative days from the conversation's time)" } else { "" };
    format!(
        "todo {todo_id} is not marked: its value must be {}; {why}. Work it out from the conversation{how}, or ask \
         the contact",
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
        // A quote of no words (a reaction's 👍) is found as a whole message.
        let bare = quote.trim();
        let piece = |text: &str| match wanted.iter().all(|w| w.is_empty()) {
            true => (!bare.is_empty() && text.trim() == bare).then(|| bare.to_string()),
            false => quoted_piece(text, &wanted),
        };
        let found_in = |message_id: Uuid, text: &str| {
            piece(text).map(|piece| Evidence { message_id, untrusted_contact_text: piece, media: None, changed: None })
        };
        let recent = answered.iter().rev().find_map(|m| found_in(m.message_id, &m.untrusted_contact_text));
        let found = match recent {
            Some(found) => Some(found),
            None => {
                let transcript = self.shared.store.read_transcript(id).map_err(|e| ToolError(e.to_string()))?;
                // Words the contact took back (edited, deleted) back no answer.
                let theirs = transcript.iter().rev().filter(|m| m.role == Role::Contact && m.withdrawn.is_none());
                theirs.into_iter().find_map(|m| found_in(m.id, &m.content))
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
    fn find_media(&self, id: Uuid, todo_id: &str, reference: &str) -> Result<FileEvidence, ToolError> {
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
        let evidence = Evidence {
            message_id: message.id,
            untrusted_contact_text: file.caption.clone().unwrap_or_default(),
            media: Some(file.reference.clone()),
            changed: None,
        };
        Ok(FileEvidence { evidence, media: Box::new(file.clone()) })
    }
}

impl Actor {
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
    /// and the model is told why: what relay itself says is no answer of the
    /// contact's. A confirmation that repeats an answer ("Perfect: Friday
    /// around 3pm.") leaves it.
    pub(in crate::engine::actor) fn take_back_echoed(&mut self, id: Uuid, turn: u64, sent: &str) -> Option<String> {
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
            let (todo_id, status) = (before.id.clone(), before.status);
            self.shared.emit(id, EventData::todo(&before));
            notes.push(format!(
                "todo {todo_id} is {} again: {answer:?} is what you just wrote to the contact, not what they told \
                 you. Record as the answer the contact's own words, or leave it and ask",
                status.as_str()
            ));
        }
        (!notes.is_empty()).then(|| notes.join(". "))
    }
}
