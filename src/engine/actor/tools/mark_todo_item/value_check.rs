//! How a todo's value is checked against what it rests on, once
//! `mark_todo_item` has found its evidence ([`super`]): read from the
//! contact's words by rule ([`crate::grounding`]), from the operator's
//! answer, or, when relay cannot read it by rule, by a second look
//! (`agent::verify`), with a photo when the model may see it.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{Grounds, answer_from};
use crate::agent::{ToolError, TurnImage, Verification};
use crate::api::{AnswerSchema, Evidence, MediaInfo, MediaKind, Role, TodoItem, TranscriptMessage, ValueCheck};
use crate::engine::actor::Actor;
use crate::grounding::{self, Reading, Said};

impl Actor {
    /// How `value` rests on its grounds: the operator's answer; read from
    /// the contact's words by rule; confirmed by a model (`verified`); or
    /// not checked (`answers.verify` off). `Err` inside: a model must
    /// confirm it first. A value the words contradict, or that rests on a
    /// file the model was never shown, is refused.
    pub(super) fn ground(
        &self,
        id: Uuid,
        todo: &TodoItem,
        schema: &AnswerSchema,
        value: &Value,
        grounds: &Grounds,
        verified: bool,
    ) -> Result<Result<ValueCheck, Box<Verification>>, ToolError> {
        let Some(first) = grounds.evidence.first() else {
            return self.operator_value(id, todo, schema, value).map(Ok);
        };
        let todo_id = &todo.id;
        // Read by rule from their words alone; a second look also sees what a reaction answers.
        let words = match &grounds.file {
            Some(file) => file_words(&file.media),
            None => grounds.evidence.iter().map(|e| e.untrusted_contact_text.as_str()).collect::<Vec<_>>().join("\n"),
        };
        let zone = self.contact_zone(id);
        let on = self.written_at(id, first.message_id).with_timezone(&zone);
        let reading = grounding::read(schema, value, Said { words: &words, on: on.date_naive(), zone });
        match reading {
            Ok(Reading::Verbatim) => return Ok(Ok(ValueCheck::Verbatim)),
            Ok(Reading::Resolved) => return Ok(Ok(ValueCheck::Resolved)),
            _ if verified => return Ok(Ok(ValueCheck::Verified)),
            _ => {}
        }
        // Only now is the photo read from disk: a value its caption gives needs none.
        let photo = grounds.file.as_ref().filter(|f| f.media.kind == MediaKind::Photo);
        let shown = photo.and_then(|f| self.image_of(&f.media, f.evidence.message_id));
        let unseen = |reference: &str| {
            ToolError(format!(
                "todo {todo_id} is not marked: the value {value} rests on {reference}, which you were not shown \
                 (only its label): ask the contact to write it"
            ))
        };
        match reading {
            // What a photo shows is for a model that sees it to say.
            _ if photo.is_some() && shown.is_none() => return Err(unseen(&photo.expect("a photo").media.reference)),
            // A model must look: below (read by rule, it returned above).
            Ok(_) => {}
            Err(_) if shown.is_some() => {}
            Err(why) => {
                return Err(ToolError(format!(
                    "todo {todo_id} is not marked: the value {value} is not what their words say ({why}). Record \
                     the value their words give, or ask the contact{}",
                    answer_from(std::slice::from_ref(first))
                )));
            }
        }
        if !self.shared.settings.verify_answers {
            return Ok(Ok(ValueCheck::Unchecked));
        }
        Ok(Err(Box::new(Verification {
            todo: todo.text.clone(),
            expects: schema.describe(),
            value: value.clone(),
            words: match &grounds.file {
                Some(_) => words,
                None => self.evidence_words(id, &grounds.evidence),
            },
            written: on.format("%A %-d %B %Y, %H:%M").to_string(),
            image: shown,
        })))
    }

    /// The words of `evidence`, each with what it answers when it is a
    /// reaction or a reply ("👍 (their reaction to: "Is Friday OK?")"): a 👍
    /// says yes only to what it reacts to.
    fn evidence_words(&self, id: Uuid, evidence: &[Evidence]) -> String {
        let transcript = self.shared.store.read_transcript(id).unwrap_or_default();
        let message = |message_id: Uuid| transcript.iter().find(|m| m.id == message_id);
        let context = |e: &Evidence| {
            let act = message(e.message_id)?.act.as_ref()?;
            let target = message(act.message_id?)?;
            let how = match act.kind {
                crate::api::ActKind::Reaction => "their reaction to",
                crate::api::ActKind::Reply => "their reply to",
                _ => return None,
            };
            Some(format!(" ({how}: {:?})", target.content))
        };
        let said = evidence.iter().map(|e| format!("{}{}", e.untrusted_contact_text, context(e).unwrap_or_default()));
        said.collect::<Vec<_>>().join("\n")
    }

    /// A value resting on the operator's answers to the agent's questions:
    /// read from them by the same rules (a number they did not give is
    /// refused); what relay cannot read by rule is theirs to have said.
    fn operator_value(
        &self,
        id: Uuid,
        todo: &TodoItem,
        schema: &AnswerSchema,
        value: &Value,
    ) -> Result<ValueCheck, ToolError> {
        let at = self.index(id).map_err(|e| ToolError(e.to_string()))?;
        let answered: Vec<&crate::api::Question> =
            self.convs[at].earlier_questions.iter().filter(|q| q.answer.is_some()).collect();
        let said: Vec<&str> = answered.iter().filter_map(|q| q.answer.as_deref()).collect();
        let written = answered.last().and_then(|q| q.answered_at).unwrap_or_else(crate::clock::now);
        let on = written.with_timezone(&self.contact_zone(id)).date_naive();
        let zone = self.contact_zone(id);
        match grounding::read(schema, value, Said { words: &said.join("\n"), on, zone }) {
            Ok(_) => Ok(ValueCheck::Operator),
            Err(why) => Err(ToolError(format!(
                "todo {} is not marked: the value {value} is not what the operator's answer says ({}). Record the \
                 value their answer gives",
                todo.id,
                why.replace("their words", "the operator's words")
            ))),
        }
    }

    /// The contact's time zone (UTC when the conversation names none).
    fn contact_zone(&self, id: Uuid) -> chrono_tz::Tz {
        let zone = self.index(id).ok().and_then(|at| self.convs[at].contact_time.as_ref()?.time_zone.parse().ok());
        zone.unwrap_or(chrono_tz::UTC)
    }

    /// When the contact wrote message `message_id` (now, if it cannot be read).
    fn written_at(&self, id: Uuid, message_id: Uuid) -> DateTime<Utc> {
        let latest = self.index(id).ok().and_then(|at| self.convs[at].last_contact_message.as_ref());
        if let Some(latest) = latest.filter(|m| m.message_id == message_id) {
            return latest.at;
        }
        let transcript = self.shared.store.read_transcript(id).unwrap_or_default();
        let message = transcript.iter().find(|m| m.id == message_id);
        message.map_or_else(crate::clock::now, |m| m.written_at.unwrap_or(m.timestamp))
    }

    /// A contact's photo as the model would be shown it, when it may be
    /// (`model.vision`, a type and size it takes).
    fn image_of(&self, media: &MediaInfo, message_id: Uuid) -> Option<TurnImage> {
        if !self.shared.agent.sees_images() {
            return None;
        }
        let message = TranscriptMessage {
            media: Some(Box::new(media.clone())),
            ..TranscriptMessage::new(Uuid::nil(), Role::Contact, String::new())
        };
        let message = TranscriptMessage { id: message_id, ..message };
        crate::engine::actor::media::images_to_show(&self.shared, std::slice::from_ref(&message)).pop()
    }
}

/// What the model was given of a contact's file: its caption, and a voice
/// note's transcript.
fn file_words(media: &MediaInfo) -> String {
    [media.caption.as_deref(), media.transcript.as_deref()].into_iter().flatten().collect::<Vec<_>>().join("\n")
}
