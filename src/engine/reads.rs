//! Reads: conversations, transcripts and files, from the shared view and
//! the store, without waiting for any actor.

use uuid::Uuid;

use super::{Engine, EngineError, message_ref, view};
use crate::api::limits;
use crate::api::paging::{Cursor, Page};
use crate::api::{ConversationInstance, State, TranscriptMessage};
use crate::contact::Contact;
use crate::store::ConversationRecord;

impl Engine {
    /// One page of the conversations in `states` (any, when empty) with
    /// `contact`, newest first, starting after `after`: at most `limit`.
    pub fn list(
        &self,
        states: &[State],
        contact: Option<&Contact>,
        after: Option<Cursor>,
        limit: usize,
    ) -> Result<Page<ConversationInstance>, EngineError> {
        let contact = contact.map(Contact::as_str);
        // A cursor is a conversation's position; conversations are never removed.
        if let Some(cursor) = after
            && !self.shared.read_view(|view| view.get(cursor.id()).is_some_and(|entry| entry.cursor() == cursor))
        {
            return Err(EngineError::Invalid(format!(
                "'{cursor}' is not a cursor relay gave: use the one the last page gave (its Link header, or `--cursor`)"
            )));
        }
        // Only the page's entries are copied, inside the lock.
        let page = self.shared.read_view(|view| view.page(states, contact, after, limit).map(view::Entry::clone));
        // Ended ones are read from their files, outside it.
        let mut items = Vec::with_capacity(page.items.len());
        for entry in &page.items {
            items.push(self.shared.whole(entry)?.instance.clone());
        }
        Ok(Page { items, next: page.next, remaining: page.remaining })
    }

    /// Conversation `id_or_prefix`, as a caller sees it.
    pub fn get(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        self.record(id_or_prefix).map(|record| record.instance)
    }

    /// The home's record of conversation `id_or_prefix`: the instance and
    /// relay's bookkeeping (for tests and diagnosis; callers use [`Engine::get`]).
    pub fn record(&self, id_or_prefix: &str) -> Result<ConversationRecord, EngineError> {
        let id = self.resolve(id_or_prefix)?;
        let record = self.shared.instance(id)?;
        record.map(|r| (*r).clone()).ok_or_else(|| EngineError::NotFound(id.to_string()))
    }

    /// Turns a full id or a unique prefix (at least 4 characters) into an id.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<Uuid, EngineError> {
        let wanted = id_or_prefix.trim().to_ascii_lowercase();
        if let Ok(id) = Uuid::parse_str(&wanted) {
            return match self.shared.read_view(|view| view.contains(id)) {
                true => Ok(id),
                false => Err(EngineError::NotFound(id_or_prefix.to_string())),
            };
        }
        if !limits::is_id_prefix(&wanted) {
            return Err(EngineError::Invalid(format!(
                "'{id_or_prefix}' is not a conversation id: give the full id or at least {} of its first characters",
                limits::MIN_ID_PREFIX
            )));
        }
        let matches: Vec<String> =
            self.shared.read_view(|view| view.ids_starting_with(&wanted).take(5).map(str::to_string).collect());
        match matches.as_slice() {
            [] => Err(EngineError::NotFound(id_or_prefix.to_string())),
            [one] => Ok(Uuid::parse_str(one).expect("view keys are ids")),
            _ => Err(EngineError::Ambiguous { prefix: id_or_prefix.to_string(), matches }),
        }
    }

    pub fn transcript(&self, id_or_prefix: &str) -> Result<Vec<TranscriptMessage>, EngineError> {
        let id = self.resolve(id_or_prefix)?;
        Ok(self.shared.store.read_transcript(id)?)
    }

    /// Message `message` (a transcript id, or a unique start of it of 4
    /// characters or more) in `contact`'s live conversation, with the
    /// channel's id: what a simulated contact's reaction, reply, edit or
    /// deletion names.
    pub fn message_in_live(
        &self,
        contact: &Contact,
        message: &str,
    ) -> Result<(TranscriptMessage, String), EngineError> {
        let live = self.shared.read_view(|view| view.live_of(contact.as_str()).next().map(|i| i.id));
        let Some(id) = live else {
            return Err(EngineError::Missing(format!("{contact} has no live conversation")));
        };
        let transcript = self.shared.store.read_transcript(id)?;
        let one = message_ref::find(&transcript, message).map_err(|unfound| match unfound {
            message_ref::Unfound::TooShort => EngineError::Invalid(format!(
                "{message:?} is too short: give 4 characters of the id or more, or its file's reference (m1)"
            )),
            message_ref::Unfound::NoSuch => EngineError::Missing(format!(
                "there is no message {message} in {contact}'s conversation: give an id `relay transcript --json` shows"
            )),
            message_ref::Unfound::Several(count) => {
                EngineError::AmbiguousMessage { prefix: message.trim().to_string(), count }
            }
        })?;
        match &one.channel_message_id {
            Some(channel_id) => Ok((one.clone(), channel_id.clone())),
            None => Err(EngineError::Invalid(format!(
                "message {message} has not reached WhatsApp (it has no id there yet)"
            ))),
        }
    }

    /// A page of the transcript, oldest first: the messages after the
    /// message `after`, at most `limit`.
    pub fn transcript_page(
        &self,
        id_or_prefix: &str,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<crate::api::paging::Page<TranscriptMessage, Uuid>, EngineError> {
        crate::api::paging::transcript_page(self.transcript(id_or_prefix)?, after, limit).map_err(EngineError::Invalid)
    }

    /// The file of `message` in a conversation (its file's reference, its
    /// id or a unique start of it: [`message_ref`]): what the transcript
    /// says of it, and its bytes.
    pub fn media_file(
        &self,
        id_or_prefix: &str,
        message: &str,
    ) -> Result<(crate::api::MediaInfo, Vec<u8>), EngineError> {
        let transcript = self.transcript(id_or_prefix)?;
        let message = message_ref::of_file(&transcript, message)?;
        let message_id = message.id;
        let media =
            message.media.clone().ok_or_else(|| EngineError::Missing(format!("message {message_id} has no file")))?;
        let path = match (&media.path, media.status) {
            (Some(path), crate::api::MediaStatus::Stored) => std::path::PathBuf::from(path),
            (_, status) => {
                return Err(EngineError::Missing(format!(
                    "message {message_id}'s file is not kept (it is {})",
                    status.as_str().replace('_', " ")
                )));
            }
        };
        let bytes = self.shared.store.media().read(&path)?;
        Ok((*media, bytes))
    }
}
