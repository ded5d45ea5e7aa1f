//! The operator's commands (pause, resume, cancel, answer, `relay send`,
//! the do-not-contact list), each handed to the actor of the conversation's
//! contact and answered once it has acted.

use uuid::Uuid;

use super::actor::{Msg, Op};
use super::registry::contact_of;
use super::{Engine, EngineError, Idempotent, attachments, bounded_text, idempotency};
use crate::api::limits;
use crate::api::{ConversationInstance, SendFile, SendStatus, TranscriptMessage};
use crate::contact::Contact;
use crate::fsm::InvalidTransition;

impl Engine {
    pub async fn pause(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        self.operate(id_or_prefix, Op::Pause).await.map(|(i, _)| i)
    }

    pub async fn resume(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        self.operate(id_or_prefix, Op::Resume).await.map(|(i, _)| i)
    }

    pub async fn cancel(&self, id_or_prefix: &str) -> Result<ConversationInstance, EngineError> {
        self.operate(id_or_prefix, Op::Cancel).await.map(|(i, _)| i)
    }

    /// The operator answers the agent's question (`relay answer`); the
    /// agent goes on with it. Nothing is sent to the contact.
    pub async fn answer(&self, id_or_prefix: &str, text: String) -> Result<ConversationInstance, EngineError> {
        let text = bounded_text("answer", text, limits::MAX_REASON_CHARS)?;
        self.operate(id_or_prefix, Op::Answer { text }).await.map(|(i, _)| i)
    }

    /// The operator speaks to the contact (`relay send`).
    pub async fn send(&self, id_or_prefix: &str, text: String) -> Result<TranscriptMessage, EngineError> {
        let text = bounded_text("message", text, limits::MAX_MESSAGE_CHARS)?;
        self.send_as(id_or_prefix, text, Uuid::new_v4()).await
    }

    /// `send`, at most once per idempotency `key`. A message that went out,
    /// or may have (unconfirmed), is returned as it is; one that failed is
    /// tried again under the same id.
    pub async fn send_once(
        &self,
        key: &str,
        id_or_prefix: &str,
        text: String,
    ) -> Result<Idempotent<TranscriptMessage>, EngineError> {
        let text = bounded_text("message", text, limits::MAX_MESSAGE_CHARS)?;
        let id = self.resolve(id_or_prefix)?;
        let fingerprint = idempotency::fingerprint(&[id.as_bytes(), text.as_bytes()]);
        let claim = self.shared.keys.claim(key, "send", fingerprint)?;
        if claim.retried {
            let earlier = self.shared.store.read_transcript(id)?.into_iter().find(|m| m.id == claim.target);
            if let Some(message) = earlier.filter(|m| m.send_status != Some(SendStatus::Failed)) {
                return Ok(Idempotent { value: message, replayed: true });
            }
        }
        let value = self.send_as(&id.to_string(), text, claim.target).await?;
        Ok(Idempotent { value, replayed: false })
    }

    /// The operator sends a file staged with `POST /media` (`relay send
    /// --file`): it becomes the conversation's next attachment, and goes to
    /// the contact as `send` sends a message.
    pub async fn send_file(&self, id_or_prefix: &str, file: SendFile) -> Result<TranscriptMessage, EngineError> {
        self.send_file_as(id_or_prefix, file, Uuid::new_v4()).await
    }

    /// `send_file`, at most once per idempotency `key` (as `send_once`).
    pub async fn send_file_once(
        &self,
        key: &str,
        id_or_prefix: &str,
        file: SendFile,
    ) -> Result<Idempotent<TranscriptMessage>, EngineError> {
        let id = self.resolve(id_or_prefix)?;
        // The file by what it holds, not by its upload id: a retry gives
        // the same file again, under a new id.
        let held = self.shared.store.media().upload_sha256(file.upload_id)?.unwrap_or_default();
        let asked = serde_json::to_vec(&(&held, &file.name, &file.caption)).expect("requests serialise");
        let fingerprint = idempotency::fingerprint(&[id.as_bytes(), b"file", &asked]);
        let claim = self.shared.keys.claim(key, "send", fingerprint)?;
        if claim.retried {
            let earlier = self.shared.store.read_transcript(id)?.into_iter().find(|m| m.id == claim.target);
            if let Some(message) = earlier.filter(|m| m.send_status != Some(SendStatus::Failed)) {
                return Ok(Idempotent { value: message, replayed: true });
            }
        }
        let value = self.send_file_as(&id.to_string(), file, claim.target).await?;
        Ok(Idempotent { value, replayed: false })
    }

    async fn send_file_as(
        &self,
        id_or_prefix: &str,
        file: SendFile,
        message_id: Uuid,
    ) -> Result<TranscriptMessage, EngineError> {
        let caption = file.caption.filter(|c| !c.trim().is_empty());
        let caption = caption.map(|c| bounded_text("caption", c, limits::MAX_CAPTION_CHARS)).transpose()?;
        self.resolve(id_or_prefix)?;
        if !self.shared.store.media().has_upload(file.upload_id) {
            return Err(attachments::no_upload(file.upload_id));
        }
        // Taken by the actor once the conversation may be written to: a
        // refused send leaves the file staged for another try.
        let op = Op::SendFile { upload_id: file.upload_id, name: file.name, caption, message_id };
        let (_, message) = self.operate(id_or_prefix, op).await?;
        Ok(message.expect("a send returns its message"))
    }

    async fn send_as(
        &self,
        id_or_prefix: &str,
        text: String,
        message_id: Uuid,
    ) -> Result<TranscriptMessage, EngineError> {
        let (_, message) = self.operate(id_or_prefix, Op::Send { text, message_id }).await?;
        Ok(message.expect("a send returns its message"))
    }

    async fn operate(
        &self,
        id_or_prefix: &str,
        op: Op,
    ) -> Result<(ConversationInstance, Option<TranscriptMessage>), EngineError> {
        let id = self.resolve(id_or_prefix)?;
        let instance = self.shared.snapshot(id).ok_or_else(|| EngineError::NotFound(id.to_string()))?;
        if instance.state.is_terminal() {
            // Terminal conversations have no actor; the table refuses anyway.
            let event = op.event();
            tracing::warn!(instance = %id, state = %instance.state, event = %event, "invalid transition refused");
            return Err(EngineError::Transition { id, source: InvalidTransition { state: instance.state, event } });
        }
        let contact = contact_of(&instance);
        let event = op.event();
        match self.shared.ask(&contact, |reply| Msg::Operator { id, op, reply }).await? {
            // It ended meanwhile (and left its actor): refuse naming its state.
            Err(EngineError::NotFound(_)) => match self.shared.snapshot(id) {
                Some(now) => Err(EngineError::Transition { id, source: InvalidTransition { state: now.state, event } }),
                None => Err(EngineError::NotFound(id.to_string())),
            },
            other => other,
        }
    }

    /// The do-not-contact list, by number.
    pub fn opt_outs(&self) -> Vec<crate::courtesy::OptOut> {
        self.shared.opt_outs.all()
    }

    /// The operator puts `contact` on the do-not-contact list: its
    /// conversations end, and nothing more is sent to it. A number already
    /// listed stays as it was listed.
    pub async fn opt_out(&self, contact: &str, reason: String) -> Result<crate::api::OptOutAdded, EngineError> {
        let contact = Contact::parse(contact).map_err(|e| EngineError::Invalid(e.to_string()))?;
        let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS)?;
        self.shared.ask(&contact, |reply| Msg::OptOut { reason, reply }).await?
    }

    /// Takes `contact` off the do-not-contact list; returns its entry.
    pub fn opt_in(&self, contact: &str) -> Result<crate::courtesy::OptOut, EngineError> {
        let parsed = Contact::parse(contact).map_err(|e| EngineError::Invalid(e.to_string()))?;
        self.shared.opt_outs.remove(&parsed)?.ok_or_else(|| EngineError::NotListed(parsed.to_string()))
    }
}
