//! Sending to the contact: a message is recorded as pending, handed to the
//! channel in a task of its own, and settled (sent, or failed with why)
//! when the outcome comes back, for the agent's `send_message` and for
//! `relay send` alike.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use uuid::Uuid;

use super::{Actor, Msg, SendWaiter, ToolReply};
use crate::agent::ToolError;
use crate::api::limits;
use crate::api::{EventData, MediaInfo, MediaStatus, Role, SendStatus, TranscriptMessage};
use crate::channel::{Blocked, ChannelError, OutgoingMedia, Sent};
use crate::engine::{EngineError, bounded_text};
use crate::fsm::Event;

/// An agent's send, checked: its words, its file, and the two as a turn
/// compares them.
type CheckedSend = (Option<String>, Option<crate::api::Attachment>, String);

/// How long shutdown waits for sends already under way to report back.
const SEND_DRAIN: Duration = Duration::from_secs(10);

impl Actor {
    /// Records `message` as pending, then hands it to the channel in a task
    /// of its own, so a slow send (pacing, a reconnecting link) holds up none
    /// of this contact's other events. The outcome comes back as
    /// [`Msg::Sent`]. If the pending record cannot be written, nothing is sent.
    pub(super) fn start_send(&mut self, message: TranscriptMessage, waiter: SendWaiter) {
        // A channel that would not even try (not linked, banned) gets no record.
        if let Err(reason) = self.shared.channel.ready() {
            let error = ChannelError::Unavailable { channel: self.shared.channel.name(), reason };
            match waiter {
                SendWaiter::Tool { turn, reply } => {
                    let _ = reply.send(Err(self.agent_send_failed(message.instance_id, turn, error)));
                }
                operator => operator.refuse(EngineError::Channel(error)),
            }
            return;
        }
        // The do-not-contact list, checked before every send.
        if let Some(entry) = self.forbidden(message.instance_id) {
            tracing::warn!(instance = %message.instance_id, "not sent: the number is on the do-not-contact list");
            match waiter {
                SendWaiter::Tool { reply, .. } => {
                    let why = "not sent: the contact asked not to be contacted; send nothing more and stop";
                    let _ = reply.send(Err(ToolError(why.into())));
                }
                operator => operator.refuse(EngineError::OptedOut(Box::new(entry))),
            }
            return;
        }
        // WhatsApp's reach-out lock, while relay knows it holds: a first
        // message to a new contact would be refused (463), and each try
        // makes the lock worse. Not tried, whoever writes it.
        if let Some(until) = self.shared.locked_for(&self.contact) {
            let reason = Blocked::ReachOutLock { until };
            tracing::warn!(instance = %message.instance_id, "not sent: the reach-out lock holds first messages");
            match waiter {
                SendWaiter::Tool { reply, .. } => {
                    let _ = reply.send(Err(ToolError(format!("not sent: {reason}; end your turn"))));
                }
                operator => operator.refuse(EngineError::Channel(ChannelError::Unavailable {
                    channel: self.shared.channel.name(),
                    reason,
                })),
            }
            return;
        }
        if let Err(error) = self.shared.store.append_message(&message) {
            tracing::error!(instance = %message.instance_id, %error, "cannot record a message before sending it; not sent");
            waiter.refuse(EngineError::Store(error));
            return;
        }
        let (channel, contact, me) = (self.shared.channel.clone(), self.contact.clone(), self.me.clone());
        let shared = self.shared.clone();
        self.sending.push(message.instance_id);
        tokio::spawn(async move {
            let result = match message.media.as_deref() {
                None => channel.send(&contact, &message.content).await,
                // A file is read from the home here, off the actor's loop.
                Some(file) => match outgoing(&shared, file) {
                    Ok(media) => channel.send_media(&contact, &media).await,
                    Err(error) => Err(ChannelError::Rejected {
                        channel: channel.name(),
                        reason: format!("relay could not read the file to send: {error}"),
                    }),
                },
            };
            let _ = me.send(Box::new(Msg::Sent { message, result, waiter }));
        });
    }

    /// The agent's `send_message` or `send_attachment`: checked against
    /// the turn's rules and the guards, then sent as [`Actor::start_send`]
    /// sends.
    pub(super) fn start_agent_send(
        &mut self,
        id: Uuid,
        turn: u64,
        send: AgentSend,
        reply: ToolReply,
    ) -> Result<(), ToolError> {
        let (words, attachment, said) = match self.check_agent_send(id, turn, send) {
            Ok(checked) => checked,
            Err(error) => {
                let _ = reply.send(Err(error.clone()));
                return Err(error);
            }
        };
        if let Some(running) = self.turn.as_mut() {
            running.attempted += 1;
            running.may_send = false;
            running.said.push(said);
        }
        // relay's own line that an assistant writes, before the
        // conversation's first message (cleared once it went out); above a
        // file's caption when the first thing sent is a file.
        let disclosure = self.index(id).ok().and_then(|i| self.convs[i].pending_disclosure.clone());
        let words = match (disclosure, words) {
            (Some(line), Some(words)) => Some(format!("{line}\n\n{words}")),
            (Some(line), None) => Some(line),
            (None, words) => words,
        };
        let message = match attachment {
            Some(file) => file_message(id, Role::Agent, &file, words),
            None => TranscriptMessage::outgoing(id, Role::Agent, words.unwrap_or_default()),
        };
        self.start_send(message, SendWaiter::Tool { turn, reply });
        Ok(())
    }

    /// What an agent's send would say (its words, its file, and the two as
    /// compared), if the turn may send it and nothing in it must be held back.
    fn check_agent_send(&self, id: Uuid, turn: u64, send: AgentSend) -> Result<CheckedSend, ToolError> {
        self.check_turn(id, turn)?;
        self.turn_may_send()?;
        let instance = &self.convs[self.index(id).map_err(|e| ToolError(e.to_string()))?];
        // What the contact reads: the message, or the file's caption.
        let (words, attachment) = match send {
            AgentSend::Text(text) => {
                let text =
                    bounded_text("message", text, limits::MAX_MESSAGE_CHARS).map_err(|e| ToolError(e.to_string()))?;
                (Some(text), None)
            }
            AgentSend::Attachment { attachment_id, caption } => {
                let attachment = attachment_named(instance, &attachment_id)?;
                let caption = caption.filter(|c| !c.trim().is_empty());
                let caption = caption
                    .map(|c| bounded_text("caption", c, limits::MAX_CAPTION_CHARS))
                    .transpose()
                    .map_err(|e| ToolError(format!("not sent: {e}")))?;
                (caption, Some(attachment.clone()))
            }
        };
        let said = same_text(&match (&attachment, &words) {
            (Some(file), words) => format!("[{}] {}", file.id, words.as_deref().unwrap_or_default()),
            (None, words) => words.clone().unwrap_or_default(),
        });
        if self.turn.as_ref().is_some_and(|t| t.said.contains(&said)) {
            return Err(ToolError(
                "not sent: this turn already sent that same message; say something new, or end the turn".into(),
            ));
        }
        // What must never reach the contact, whatever the model does.
        if let Some(words) = &words {
            let sayable: Vec<&str> = std::iter::once(instance.objective.as_str())
                .chain(instance.todos.iter().map(|t| t.text.as_str()))
                .collect();
            let tag = crate::agent::prompt::note_tag(id);
            crate::agent::guard::check(words, &instance.private_context, &sayable.join("\n"), &tag)
                .map_err(ToolError)?;
        }
        Ok((words, attachment, said))
    }

    /// A turn sends at most a few messages, and one at a time: again only
    /// once it recorded what the contact said or they wrote again.
    fn turn_may_send(&self) -> Result<(), ToolError> {
        if self.turn.as_ref().is_some_and(|t| t.attempted >= limits::MAX_MESSAGES_PER_TURN) {
            return Err(ToolError(format!(
                "not sent: at most {} messages per turn; wait for the contact to answer",
                limits::MAX_MESSAGES_PER_TURN
            )));
        }
        if self.turn.as_ref().is_some_and(|t| !t.may_send) {
            return Err(ToolError(
                "not sent: this turn already wrote to the contact. One message a turn, unless you record what they \
                 told you (mark_todo_item) first or they write again: end the turn and wait for their answer"
                    .into(),
            ));
        }
        Ok(())
    }

    /// A send finished: its record is settled (sent, or failed with why),
    /// even if its turn or its conversation has ended meanwhile. An agent's
    /// send that went out is answered first and settled once the agent
    /// has run (see [`Actor::settle_sent`]), so its next model call does
    /// not wait for the writes; anything it asks next is read after them.
    pub(super) fn sent(&mut self, message: TranscriptMessage, result: Result<Sent, ChannelError>, waiter: SendWaiter) {
        let id = message.instance_id;
        if let Some(at) = self.sending.iter().position(|s| *s == id) {
            self.sending.remove(at);
            super::release_if_empty(&mut self.sending);
        }
        let went_out = result.is_ok();
        let settled = match &result {
            Ok(sent) => TranscriptMessage {
                send_status: Some(SendStatus::Sent),
                channel_message_id: sent.message_id.clone(),
                ..message
            },
            Err(error) => TranscriptMessage {
                send_status: Some(SendStatus::Failed),
                delivery_error: Some(error.to_string()),
                ..message
            },
        };
        if went_out && matches!(waiter, SendWaiter::Tool { .. }) {
            self.answer_send_waiter(id, settled.clone(), waiter, result);
            self.settling.push(settled);
            return;
        }
        self.settle(&settled, went_out);
        self.answer_send_waiter(id, settled, waiter, result);
    }

    /// Settles the agent's sends answered already ([`Actor::sent`]).
    pub(super) fn settle_sent(&mut self) {
        for settled in std::mem::take(&mut self.settling) {
            self.settle(&settled, true);
        }
    }

    /// The settled line of a send (`went_out` or not), and what follows it.
    fn settle(&mut self, settled: &TranscriptMessage, went_out: bool) {
        let id = settled.instance_id;
        match self.record_message(settled) {
            Ok(()) => {
                self.shared.emit(id, message_out(settled));
                self.after_recorded(settled);
            }
            // The contact has it (or not) all the same; on disk it stays
            // pending, and reads as unconfirmed after a restart.
            Err(error) => tracing::error!(instance = %id, %error, "cannot record what became of a message"),
        }
        // A channel without receipts cannot say the person has it; taken
        // is as much as it knows.
        if went_out && !self.shared.channel.reports_delivery() {
            self.shared.reached(&self.contact);
        }
        if went_out
            && settled.role == Role::Agent
            && self.index(id).is_ok_and(|i| self.convs[i].pending_disclosure.is_some())
            && let Err(error) = self.update(id, |i| i.pending_disclosure = None)
        {
            tracing::error!(instance = %id, %error, "cannot record that the disclosure went out");
        }
    }

    /// A message that went out and is recorded: its receipt is awaited, and
    /// its channel id indexed (with any news of it that came first).
    fn after_recorded(&mut self, settled: &TranscriptMessage) {
        let Some(channel_id) = &settled.channel_message_id else { return };
        if self.shared.channel.reports_delivery() {
            self.await_delivery(settled);
        }
        for update in self.shared.remember_sent(channel_id, settled.instance_id, settled.id) {
            self.sent_update(settled.instance_id, settled.id, update);
        }
    }

    /// Tells whoever waits for a send what became of it: the agent's tool
    /// call, or the operator's `relay send` once the conversation moved on.
    fn answer_send_waiter(
        &mut self,
        id: Uuid,
        settled: TranscriptMessage,
        waiter: SendWaiter,
        result: Result<Sent, ChannelError>,
    ) {
        match (waiter, result) {
            (SendWaiter::Tool { turn, reply }, Ok(_)) => {
                if let Some(running) = self.turn.as_mut().filter(|t| t.number == turn) {
                    running.sent += 1;
                }
                let taken_back = self.take_back_echoed(id, turn, &settled.content);
                let _ = reply.send(Ok(taken_back.map_or_else(|| "sent".to_string(), |why| format!("sent. {why}"))));
            }
            (SendWaiter::Tool { turn, reply }, Err(error)) => {
                // Nothing reached the contact: the turn may try again.
                if let Some(running) = self.turn.as_mut().filter(|t| t.number == turn) {
                    running.may_send = true;
                }
                let _ = reply.send(Err(self.agent_send_failed(id, turn, error)));
            }
            (SendWaiter::Operator { reply }, Ok(_)) => {
                if let Some(running) = self.turn.as_mut().filter(|t| t.instance == id) {
                    running.already_spoke = true;
                }
                // It went out: that is the answer, whatever else fails now
                // (the conversation may even have been cancelled meanwhile).
                if let Err(error) = self.after_manual_send(id) {
                    tracing::warn!(instance = %id, %error, "sent, but the conversation could not move on");
                }
                self.drive();
                let result = match self.shared.snapshot(id) {
                    Some(record) => Ok((record.instance.clone(), Some(settled))),
                    None => Err(EngineError::NotFound(id.to_string())),
                };
                let _ = reply.send(result);
            }
            (SendWaiter::Operator { reply }, Err(error)) => {
                self.drive();
                let _ = reply.send(Err(EngineError::Channel(error)));
            }
        }
    }

    /// What a failed `send_message` does to the conversation, and what the
    /// model is told.
    fn agent_send_failed(&mut self, id: Uuid, turn: u64, error: ChannelError) -> ToolError {
        let mine = self.is_running(id, turn);
        match &error {
            // Nothing is wrong with the conversation: it waits for the channel
            // and its turn runs again from the transcript.
            ChannelError::Unavailable { reason, .. } => {
                let reason = reason.to_string();
                if let Err(e) = self.update(id, |i| i.channel_blocked = Some(reason)) {
                    tracing::error!(instance = %id, error = %e, "cannot record why the conversation waits");
                }
                if mine {
                    self.abort_turn();
                }
            }
            // The design's error table: a send that fails after its retries fails the conversation.
            ChannelError::Failed { .. } => {
                let reason = error.to_string();
                let failed = self.transition(id, Event::UnrecoverableError, Some(reason.clone()), |i| {
                    i.failure_reason = Some(reason);
                });
                if let Err(e) = failed {
                    tracing::error!(instance = %id, error = %e, "cannot record a failed send");
                }
                if mine {
                    self.detach_turn();
                }
            }
            ChannelError::Rejected { .. } => {}
        }
        tracing::warn!(instance = %id, %error, "message not sent");
        ToolError(format!("not sent: {error}"))
    }

    /// On shutdown: let sends already under way report back (bounded), so
    /// what went out is recorded.
    pub(super) async fn drain_sends(&mut self, rx: &mut mpsc::UnboundedReceiver<Box<Msg>>) {
        let deadline = Instant::now() + SEND_DRAIN;
        while !self.sending.is_empty() {
            match tokio::time::timeout_at(deadline, rx.recv()).await.map(|msg| msg.map(|msg| *msg)) {
                Ok(Some(Msg::Sent { message, result, waiter })) => {
                    self.sent(message, result, waiter);
                    self.settle_sent();
                }
                Ok(Some(Msg::SentUpdate { instance, message, update, done })) => {
                    self.sent_update(instance, message, update);
                    let _ = done.send(());
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
}

/// What the agent asks to send.
pub(super) enum AgentSend {
    /// `send_message`.
    Text(String),
    /// `send_attachment`: one of the conversation's files, by its id.
    Attachment { attachment_id: String, caption: Option<String> },
}

/// Conversation `instance`'s attachment `id`, or why there is none, naming
/// those there are.
fn attachment_named<'a>(
    instance: &'a crate::store::ConversationRecord,
    id: &str,
) -> Result<&'a crate::api::Attachment, ToolError> {
    let wanted = id.trim().to_ascii_lowercase();
    if let Some(found) = instance.attachments.iter().find(|a| a.id == wanted) {
        return Ok(found);
    }
    let ids: Vec<&str> = instance.attachments.iter().map(|a| a.id.as_str()).collect();
    Err(ToolError(match ids.as_slice() {
        [] => format!("not sent: there is no attachment {id}; this conversation has no attachments"),
        ids => format!("not sent: there is no attachment {id}; this conversation's are {}", ids.join(", ")),
    }))
}

/// The transcript line of `file` sent to the contact, pending: what the
/// model reads of it is `[sent a1: invoice.pdf] caption`.
pub(super) fn file_message(
    id: Uuid,
    role: Role,
    file: &crate::api::Attachment,
    caption: Option<String>,
) -> TranscriptMessage {
    let content = match &caption {
        Some(caption) => format!("[sent {}: {}] {caption}", file.id, file.name),
        None => format!("[sent {}: {}]", file.id, file.name),
    };
    let media = MediaInfo {
        mime: Some(file.mime.clone()),
        bytes: Some(file.bytes),
        sha256: Some(file.sha256.clone()),
        path: Some(file.path.clone()),
        file_name: Some(file.name.clone()),
        caption,
        ..MediaInfo::new(file.kind, MediaStatus::Stored, file.id.clone())
    };
    TranscriptMessage { media: Some(Box::new(media)), ..TranscriptMessage::outgoing(id, role, content) }
}

/// The file a transcript line sends, read from the home.
fn outgoing(shared: &crate::engine::Shared, file: &MediaInfo) -> Result<OutgoingMedia, String> {
    let path = file.path.as_deref().ok_or("the message names no file")?;
    let bytes = shared.store.media().read(std::path::Path::new(path)).map_err(|e| e.to_string())?;
    Ok(OutgoingMedia {
        kind: file.kind,
        bytes,
        mime: file.mime.clone().unwrap_or_else(|| "application/octet-stream".into()),
        file_name: file.file_name.clone().unwrap_or_else(|| file.reference.clone()),
        caption: file.caption.clone(),
    })
}

/// A message as compared with the turn's others: the same words with other
/// spacing or case are the same message to the person who gets both.
pub(super) fn same_text(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The event of a message relay sent (or failed to).
pub(super) fn message_out(message: &TranscriptMessage) -> EventData {
    EventData::MessageOut {
        message_id: message.id,
        role: message.role,
        text: message.content.clone(),
        send_status: message.send_status.unwrap_or(SendStatus::Sent),
        delivery_error: message.delivery_error.clone(),
        outside_relay: message.outside_relay,
    }
}
