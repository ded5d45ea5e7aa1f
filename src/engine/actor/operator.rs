//! Operator commands: pause, resume, cancel, `relay answer` and `relay send`
//! (whose delivery is in [`super::sends`]).

use uuid::Uuid;

use super::transitions::{allowed, refused};
use super::{Actor, Op, OperatorReply, SendWaiter};
use crate::api::{Role, SendStatus, State, TranscriptMessage};
use crate::channel::{InboundMessage, InboundOutcome};
use crate::engine::conversation::operator;
use crate::engine::{EngineError, heartbeat};
use crate::fsm::Event;
use crate::store::ConversationRecord;

impl Actor {
    pub(super) fn operate(
        &mut self,
        id: Uuid,
        op: Op,
    ) -> Result<(ConversationRecord, Option<TranscriptMessage>), EngineError> {
        let (current, now) = (&self.convs[self.index(id)?], crate::clock::now());
        let step = match op {
            Op::Pause => operator::pause(current, now),
            Op::Resume => operator::resume(current, now),
            Op::Cancel => operator::cancel(current, now),
            Op::Answer { text } => operator::answer(current, text, now),
            Op::Send { .. } | Op::SendFile { .. } => unreachable!("handled by start_manual_send"),
        };
        let step = step.map_err(|error| match error {
            EngineError::Transition { id, source } => refused(id, source),
            other => other,
        })?;
        Ok((self.run_step(id, step)?, None))
    }

    /// The operator wrote to the contact on their own WhatsApp (the phone,
    /// WhatsApp Desktop): recorded in the live conversation as theirs, and
    /// the conversation is theirs (PAUSED) until they resume it, so the agent
    /// does not write over them. Without a live conversation it is not routed.
    pub(super) fn operator_wrote(&mut self, message: InboundMessage) -> InboundOutcome {
        let Some(id) = self.holder().map(|live| live.id) else { return InboundOutcome::NoConversation };
        let text = match &message.media {
            // Not fetched: the operator has the file on their phone.
            Some(media) => crate::media::label::unrouted(media.kind, media.caption.as_deref()),
            None => message.text,
        };
        let recorded = TranscriptMessage {
            channel_message_id: message.reference.map(|r| r.id),
            send_status: Some(SendStatus::Sent),
            outside_relay: true,
            ..TranscriptMessage::new(id, Role::Manual, text)
        };
        if let Err(error) = self.shared.store.append_message(&recorded) {
            tracing::error!(instance = %id, %error, "cannot record the operator's message");
            return InboundOutcome::NotRecorded(error.to_string());
        }
        tracing::info!(instance = %id, "the operator wrote from their own WhatsApp; the conversation is theirs");
        self.shared.emit(id, super::sends::message_out(&recorded));
        self.abort_turn_of(id);
        let reason = "the operator wrote to the contact from their own WhatsApp".to_string();
        if let Err(error) = self.transition(id, Event::OperatorWrites, Some(reason), |_| {}) {
            tracing::info!(instance = %id, %error, "the operator's message is recorded; the state stays");
        }
        InboundOutcome::Delivered(id)
    }

    /// `relay send`: checked against the table now, delivered in the
    /// background, then recorded and applied (see [`Actor::sent`]).
    pub(super) fn start_manual_send(&mut self, message: TranscriptMessage, reply: OperatorReply) {
        let id = message.instance_id;
        let allowed = self.index(id).and_then(|index| {
            let (state, previous) = (self.convs[index].state, self.convs[index].previous_state);
            allowed(id, state, Event::ManualSend, previous)
        });
        match allowed {
            Ok(_) => self.start_send(message, SendWaiter::Operator { reply }),
            Err(error) => {
                let _ = reply.send(Err(error));
            }
        }
    }

    /// `relay send --file`: staged upload `upload_id` stored as conversation
    /// `id`'s next attachment (file first, then the conversation naming
    /// it), if the conversation may be written to now; otherwise the upload
    /// stays staged.
    pub(super) fn attach_to_send(
        &mut self,
        id: Uuid,
        upload_id: Uuid,
        name: Option<String>,
    ) -> Result<crate::api::Attachment, EngineError> {
        let index = self.index(id)?;
        let (state, previous) = (self.convs[index].state, self.convs[index].previous_state);
        allowed(id, state, Event::ManualSend, previous)?;
        let media = self.shared.store.media();
        let missing = || crate::engine::attachments::no_upload(upload_id);
        let bytes = media.take_upload(upload_id)?.ok_or_else(missing)?;
        let attachment = crate::engine::attachments::store(media, &self.convs[index], &bytes, name.as_deref())?;
        self.update(id, |i| i.attachments.push(attachment.clone()))?;
        Ok(attachment)
    }

    /// After `relay send` went out: the conversation waits for the reply
    /// (from NEEDS_HUMAN_INTERVENTION: ACTIVE, then WAITING_FOR_REPLY with
    /// its heartbeat armed; from WAITING_FOR_REPLY: the heartbeat restarts).
    /// A PAUSED conversation stays paused (the operator took over); if it
    /// was waiting for a reply, the wait it resumes to starts afresh.
    pub(super) fn after_manual_send(&mut self, id: Uuid) -> Result<(), EngineError> {
        let index = self.index(id)?;
        match self.convs[index].state {
            State::NeedsHumanIntervention => {
                // The operator has answered whatever the contact said meanwhile.
                self.transition(id, Event::ManualSend, None, |i| i.unanswered_contact_messages = 0)?;
                self.transition(id, Event::MessageSent, None, |_| {}).map(drop)
            }
            State::WaitingForReply => self.update(id, |i| heartbeat::rearm(i, crate::clock::now())),
            State::Paused if self.convs[index].previous_state == Some(State::WaitingForReply) => {
                self.update(id, |i| i.paused_heartbeat_remaining_ms = Some(i.heartbeat_config.interval_ms))
            }
            _ => Ok(()),
        }
    }
}

impl Op {
    /// The table's event for this command.
    pub(in crate::engine) fn event(&self) -> Event {
        match self {
            Op::Pause => Event::Pause,
            Op::Resume => Event::Resume,
            Op::Cancel => Event::Cancel,
            Op::Send { .. } | Op::SendFile { .. } => Event::ManualSend,
            Op::Answer { .. } => Event::OperatorAnswers,
        }
    }
}
