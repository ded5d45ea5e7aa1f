//! One task per contact with live conversations. It owns those conversations
//! (the live one and the ones queued behind it, oldest first) and handles
//! every event for them one at a time: creation, operator commands, contact
//! messages, heartbeat expiry, tool calls and finished agent turns.
//!
//! Each change is written to disk (and published to the engine's view)
//! before its side effects run. After every event, [`Actor::drive`] moves the
//! conversations as far as they can go on their own: promote the next queued
//! conversation, start the agent's turn, answer waiting contact messages.
//! The same function recovers conversations after a restart.
//!
//! This file holds the actor's state, its messages and its loop; each kind
//! of event is handled in a file of its own:
//! - [`queue`]: creation, the FIFO queue, `drive`, contact messages;
//! - [`transitions`]: every change, checked against the table and persisted;
//! - [`operator`]: pause, resume, cancel, answer, `relay send`;
//! - [`sends`]: messages to the contact, recorded then sent in the background;
//! - [`turns`]: the agent's turns, started, ended and stopped;
//! - [`tool_effects`]: what the agent's tools do;
//! - [`budget`]: a conversation's turn and token budgets spent, and its
//!   deadline;
//! - [`media`]: contacts' files, fetched beside the conversation;
//! - [`courtesy`]: quiet hours that hold a first message, opt-outs, the
//!   do-not-contact list checked before every send;
//! - the heartbeat timer is in [`super::heartbeat`], receipts and the
//!   delivery timeout in [`super::delivery`].

mod budget;
mod courtesy;
mod media;
mod operator;
mod queue;
mod sends;
mod tool_effects;
mod transitions;
mod turns;

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use uuid::Uuid;

use super::heartbeat::Timer;
use super::{EngineError, Shared};
use crate::agent::{AgentError, ToolCall, ToolError};
use crate::api::{ConversationInstance, CreateInstanceResponse, Role, TokenUsage, TranscriptMessage};
use crate::channel::{ChannelError, Delivery, InboundMessage, MessageRef, Sent, SentUpdate};
use crate::contact::Contact;
use turns::RunningTurn;

type Reply<T> = oneshot::Sender<T>;
type OperatorReply = Reply<Result<(ConversationInstance, Option<TranscriptMessage>), EngineError>>;
type ToolReply = Reply<Result<String, ToolError>>;

pub(crate) enum Msg {
    Create {
        instance: Box<ConversationInstance>,
        reply: Reply<Result<CreateInstanceResponse, EngineError>>,
    },
    Operator {
        id: Uuid,
        op: Op,
        reply: OperatorReply,
    },
    Inbound {
        message: InboundMessage,
        reply: Reply<Delivery>,
    },
    Tool {
        id: Uuid,
        turn: u64,
        call: ToolCall,
        reply: ToolReply,
    },
    Usage {
        id: Uuid,
        usage: TokenUsage,
    },
    TurnDone {
        id: Uuid,
        turn: u64,
        result: Result<(), AgentError>,
    },
    /// A send this actor started has finished (see [`Actor::start_send`]).
    Sent {
        message: TranscriptMessage,
        result: Result<Sent, ChannelError>,
        waiter: SendWaiter,
    },
    /// News of a message the channel took: a receipt, or a late refusal.
    SentUpdate {
        instance: Uuid,
        message: Uuid,
        update: SentUpdate,
        /// Told once the update is on disk (the channel waits for it).
        done: Reply<()>,
    },
    /// The channel may have become ready (or stopped being): move on.
    ChannelChanged,
    /// A contact's file has been fetched and stored, or has failed: the
    /// message as it now reads (same id, new `media` and label).
    MediaDone {
        message: Box<TranscriptMessage>,
    },
    /// The operator put the contact's number on the do-not-contact list.
    OptOut {
        reason: String,
        reply: Reply<Result<crate::api::OptOutAdded, EngineError>>,
    },
}

/// Who waits for a send: the agent's `send_message`, or `relay send`.
pub(crate) enum SendWaiter {
    Tool { turn: u64, reply: ToolReply },
    Operator { reply: OperatorReply },
}

impl SendWaiter {
    /// Nothing was sent, because of `error`.
    fn refuse(self, error: EngineError) {
        match self {
            SendWaiter::Tool { reply, .. } => {
                let _ = reply.send(Err(ToolError(format!("not sent: {error}"))));
            }
            SendWaiter::Operator { reply } => {
                let _ = reply.send(Err(error));
            }
        }
    }
}

/// Operator commands.
pub(crate) enum Op {
    Pause,
    Resume,
    Cancel,
    /// `relay send`: the message gets `message_id` (an idempotent retry reuses it).
    Send {
        text: String,
        message_id: Uuid,
    },
    /// `relay send --file`: the staged upload becomes the conversation's
    /// next attachment and goes to the contact.
    SendFile {
        upload_id: Uuid,
        name: Option<String>,
        caption: Option<String>,
        message_id: Uuid,
    },
    /// `relay answer`: the operator answers the agent, not the contact.
    Answer {
        text: String,
    },
}

pub(super) struct Actor {
    pub(super) shared: Arc<Shared>,
    pub(super) contact: Contact,
    me: mpsc::UnboundedSender<Msg>,
    /// This contact's non-terminal conversations (the live one and those
    /// queued), oldest first, shared with the engine's view (a change
    /// replaces the whole instance in both).
    pub(super) convs: Vec<Arc<ConversationInstance>>,
    turn: Option<RunningTurn>,
    turns_started: u64,
    pub(super) timer: Option<Timer>,
    /// While the contact is still typing: the reply turn waits until this
    /// instant, which each new message pushes back (see `Settings::reply_window`).
    reply_due: Option<Instant>,
    /// Contact messages not yet answered by a turn (to mark read later).
    unread: Vec<MessageRef>,
    /// The conversation of each send started and not yet finished. Their
    /// turns wait for them (so nothing is sent twice), and so does shutdown.
    sending: Vec<Uuid>,
    /// Contact messages whose file is being fetched, by conversation and
    /// message id: the reply waits for them (see `queue::inbound`).
    fetching: Vec<(Uuid, Uuid)>,
}

pub(crate) async fn run(
    shared: Arc<Shared>,
    contact: Contact,
    convs: Vec<Arc<ConversationInstance>>,
    me: mpsc::UnboundedSender<Msg>,
    mut rx: mpsc::UnboundedReceiver<Msg>,
) -> usize {
    let mut actor = Actor {
        shared,
        contact,
        me,
        convs,
        turn: None,
        turns_started: 0,
        timer: None,
        reply_due: None,
        unread: Vec::new(),
        sending: Vec::new(),
        fetching: Vec::new(),
    };
    let stop = actor.shared.stop.clone();
    actor.drive();
    loop {
        // Not while a send or a fetch is under way: what it sends or
        // fetches must still be recorded.
        let idle = actor.convs.is_empty() && actor.sending.is_empty() && actor.fetching.is_empty();
        if idle && actor.shared.retire(&actor.contact, &rx) {
            break;
        }
        let deadline = actor.sync_timer();
        let reply_due = actor.reply_due;
        let expiry = actor.next_expiry();
        tokio::select! {
            msg = rx.recv() => match msg {
                None => break,
                Some(msg) => actor.handle(msg),
            },
            _ = stop.cancelled() => {
                // Asked before the engine stopped: answered (`ask` refuses
                // what comes later).
                while let Ok(msg) = rx.try_recv() {
                    actor.handle(msg);
                }
                break;
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                actor.timer_fired();
            }
            _ = tokio::time::sleep_until(reply_due.unwrap_or_else(Instant::now)), if reply_due.is_some() => {
                actor.reply_due = None;
            }
            // A conversation's deadline: `drive` below ends it.
            _ = tokio::time::sleep_until(expiry.unwrap_or_else(Instant::now)), if expiry.is_some() => {}
        }
        actor.drive();
    }
    actor.abort_turn();
    actor.drain_sends(&mut rx).await;
    actor.sending.len()
}

impl Actor {
    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Create { instance, reply } => {
                let _ = reply.send(self.create(*instance));
            }
            Msg::Operator { id, op: Op::Send { text, message_id }, reply } => {
                let message =
                    TranscriptMessage { id: message_id, ..TranscriptMessage::outgoing(id, Role::Manual, text) };
                self.start_manual_send(message, reply)
            }
            Msg::Operator { id, op: Op::SendFile { upload_id, name, caption, message_id }, reply } => {
                match self.attach_to_send(id, upload_id, name) {
                    Ok(attachment) => {
                        let message = sends::file_message(id, Role::Manual, &attachment, caption);
                        self.start_manual_send(TranscriptMessage { id: message_id, ..message }, reply)
                    }
                    Err(error) => {
                        let _ = reply.send(Err(error));
                    }
                }
            }
            Msg::Operator { id, op, reply } => {
                let result = self.operate(id, op);
                // Let the conversation move on first, so the caller sees where it went.
                self.drive();
                let result = result.map(|(instance, message)| (self.current(instance), message));
                let _ = reply.send(result);
            }
            Msg::Inbound { message, reply } => {
                let _ = reply.send(self.inbound(message));
            }
            Msg::Tool { id, turn, call: ToolCall::SendMessage { text }, reply } => {
                if let Err(error) = self.start_agent_send(id, turn, sends::AgentSend::Text(text), reply) {
                    tracing::debug!(instance = %id, %error, "send refused");
                }
            }
            Msg::Tool { id, turn, call: ToolCall::SendAttachment { attachment_id, caption }, reply } => {
                let send = sends::AgentSend::Attachment { attachment_id, caption };
                if let Err(error) = self.start_agent_send(id, turn, send, reply) {
                    tracing::debug!(instance = %id, %error, "attachment not sent");
                }
            }
            Msg::Tool { id, turn, call, reply } => {
                let records = matches!(call, ToolCall::MarkTodoItem { .. });
                let result = self.tool(id, turn, call);
                // Having recorded what the contact said, the turn may answer it.
                if records
                    && result.is_ok()
                    && let Some(running) = self.turn.as_mut().filter(|t| t.number == turn)
                {
                    running.may_send = true;
                }
                let _ = reply.send(result);
            }
            Msg::Sent { message, result, waiter } => self.sent(message, result, waiter),
            Msg::SentUpdate { instance, message, update, done } => {
                self.sent_update(instance, message, update);
                let _ = done.send(());
            }
            Msg::ChannelChanged => {}
            Msg::Usage { id, usage } => {
                if let Err(error) = self.update(id, |i| i.usage += usage) {
                    tracing::warn!(instance = %id, %error, "cannot record token usage");
                }
            }
            Msg::TurnDone { id, turn, result } => self.turn_done(id, turn, result),
            Msg::MediaDone { message } => self.media_done(*message),
            Msg::OptOut { reason, reply } => {
                let _ = reply.send(self.opt_out(crate::courtesy::OptOutSource::Operator, None, reason));
            }
        }
    }
}
