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
//! - [`acts`]: a contact's reaction, reply, edit, deletion or call, with
//!   the message it acts on;
//! - [`transitions`]: every change, checked against the table and persisted;
//! - [`operator`]: pause, resume, cancel, answer, `relay send`;
//! - [`sends`]: messages to the contact, recorded then sent in the background;
//! - [`turns`]: the agent's turns, started, ended and stopped;
//! - [`tool_sink`]: a turn's tool calls, as messages to this actor;
//! - [`tools`]: what the agent's tools do, one file per tool
//!   (`mark_todo_item`: an answer recorded only on what someone said, and
//!   its value read from their words or confirmed by a model);
//! - [`budget`]: a conversation's turn and token budgets spent, and its
//!   deadline;
//! - [`media`]: contacts' files, fetched beside the conversation;
//! - [`courtesy`]: quiet hours that hold a first message, opt-outs, the
//!   do-not-contact list checked before every send;
//! - [`timer`]: the contact's one timer (a follow-up, a delivery timeout,
//!   a hold ending; the rules are in [`super::heartbeat`]);
//! - [`receipts`]: what became of a message sent, and the delivery
//!   timeout (the rules are in [`super::conversation`]).
//!
//! What an input does to a conversation is worked out by the conversation
//! core ([`super::conversation`]) where it has moved there; the actor
//! writes the [`super::conversation::Step`] and runs its effects
//! ([`transitions`]).

mod acts;
mod budget;
mod courtesy;
mod media;
mod operator;
mod queue;
mod receipts;
mod sends;
mod timer;
mod tool_sink;
mod tools;
mod transitions;
mod turns;

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use uuid::Uuid;

use super::{EngineError, Shared};
use crate::agent::{AgentError, ToolCall, ToolError};
use crate::api::{ConversationInstance, CreateInstanceResponse, Role, TokenUsage, TranscriptMessage};
use crate::channel::{ChannelError, InboundMessage, InboundOutcome, MessageRef, Sent, SentUpdate};
use crate::contact::Contact;
use crate::store::ConversationRecord;
use timer::Timer;
pub(crate) use tools::mark_todo_item::Marked;
use turns::RunningTurn;

type Reply<T> = oneshot::Sender<T>;
type OperatorReply = Reply<Result<(ConversationInstance, Option<TranscriptMessage>), EngineError>>;
type ToolReply = Reply<Result<String, ToolError>>;

pub(crate) enum Msg {
    Create {
        instance: Box<ConversationRecord>,
        reply: Reply<Result<CreateInstanceResponse, EngineError>>,
    },
    Operator {
        id: Uuid,
        op: Op,
        reply: OperatorReply,
    },
    Inbound {
        message: InboundMessage,
        reply: Reply<InboundOutcome>,
    },
    Tool {
        id: Uuid,
        turn: u64,
        call: ToolCall,
        reply: ToolReply,
    },
    /// `mark_todo_item`, with whether a model already confirmed its value.
    Mark {
        id: Uuid,
        turn: u64,
        call: ToolCall,
        verified: bool,
        reply: Reply<Result<Marked, ToolError>>,
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

impl Msg {
    /// The conversation the message is about, when it names one.
    fn conversation(&self) -> Option<Uuid> {
        match self {
            Msg::Create { instance, .. } => Some(instance.id),
            Msg::Operator { id, .. }
            | Msg::Tool { id, .. }
            | Msg::Mark { id, .. }
            | Msg::Usage { id, .. }
            | Msg::TurnDone { id, .. } => Some(*id),
            Msg::Sent { message, .. } => Some(message.instance_id),
            Msg::SentUpdate { instance, .. } => Some(*instance),
            Msg::MediaDone { message } => Some(message.instance_id),
            Msg::Inbound { .. } | Msg::ChannelChanged | Msg::OptOut { .. } => None,
        }
    }
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
    me: mpsc::UnboundedSender<Box<Msg>>,
    /// This contact's non-terminal conversations (the live one and those
    /// queued), oldest first, shared with the engine's view (a change
    /// replaces the whole instance in both).
    pub(super) convs: Vec<Arc<ConversationRecord>>,
    turn: Option<RunningTurn>,
    turns_started: u64,
    timer: Option<Timer>,
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
    /// The conversations a panic was caught in (see `Actor::supervised`),
    /// once each: the second goes to a person.
    panics: Vec<Uuid>,
    /// Token usage of model calls not yet on disk, by conversation: written
    /// with the conversation's next change (see `Actor::record_usage`).
    unsaved_usage: Vec<(Uuid, TokenUsage)>,
    /// Agent sends that went out, whose outcome the agent has heard but
    /// which are not settled on disk yet: settled before the actor reads
    /// its next message (see `Actor::sent`).
    settling: Vec<TranscriptMessage>,
}

/// Gives an emptied list's buffer back: an idle actor keeps none of what
/// its busiest moment needed (10,000 idle actors, a few hundred bytes each).
fn release_if_empty<T>(list: &mut Vec<T>) {
    if list.is_empty() {
        *list = Vec::new();
    }
}

pub(crate) async fn run(
    shared: Arc<Shared>,
    contact: Contact,
    convs: Vec<Arc<ConversationRecord>>,
    me: mpsc::UnboundedSender<Box<Msg>>,
    mut rx: mpsc::UnboundedReceiver<Box<Msg>>,
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
        panics: Vec::new(),
        unsaved_usage: Vec::new(),
        settling: Vec::new(),
    };
    let stop = actor.shared.stop.clone();
    actor.supervised(None, Actor::drive);
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
                Some(msg) => {
                    actor.supervised(msg.conversation(), |actor| actor.handle(*msg));
                    if !actor.settling.is_empty() {
                        // The agent, woken on this thread, runs first.
                        tokio::task::yield_now().await;
                        actor.supervised(None, Actor::settle_sent);
                    }
                }
            },
            _ = stop.cancelled() => {
                // Asked before the engine stopped: answered (`ask` refuses
                // what comes later).
                while let Ok(msg) = rx.try_recv() {
                    actor.supervised(msg.conversation(), |actor| actor.handle(*msg));
                    actor.supervised(None, Actor::settle_sent);
                }
                break;
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                actor.supervised(None, Actor::timer_fired);
            }
            _ = tokio::time::sleep_until(reply_due.unwrap_or_else(Instant::now)), if reply_due.is_some() => {
                actor.reply_due = None;
            }
            // A conversation's deadline: `drive` below ends it.
            _ = tokio::time::sleep_until(expiry.unwrap_or_else(Instant::now)), if expiry.is_some() => {}
        }
        actor.supervised(None, Actor::drive);
    }
    actor.settle_sent();
    actor.abort_turn();
    actor.drain_sends(&mut rx).await;
    actor.save_usage();
    actor.sending.len()
}

impl Actor {
    /// Runs one step (an event handled, [`Actor::drive`], the timer) and
    /// catches a panic in it: a bug in relay must not leave a contact's
    /// conversations silent with nothing said. What memory held may be half
    /// changed, so the running turn is stopped and the conversations are
    /// read back from disk, where every change is whole; the event log says
    /// what happened (`recovered`), and the conversation goes on. A second
    /// panic in the same conversation hands it to a person with the reason.
    /// `about` is the conversation the step was for, if it names one; else
    /// the contact's live conversation is the one reported.
    fn supervised(&mut self, about: Option<Uuid>, step: impl FnOnce(&mut Actor)) {
        let caught = |actor: &mut Actor, step: &mut dyn FnMut(&mut Actor)| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step(actor))).is_err()
        };
        let mut step = Some(step);
        if !caught(self, &mut |actor| (step.take().expect("run once"))(actor)) {
            return;
        }
        // Restored, the conversations must move on by themselves (nothing
        // else may come to wake them), which may panic again: a conversation
        // panics twice at most before a person has it, so this ends.
        let mut about = about;
        for _ in 0..=2 * self.convs.len() {
            // The panic's own text went to stderr through the panic hook; it
            // may hold a contact's words, so the log does not repeat it.
            tracing::error!(contact = %self.contact, "a bug in relay: a panic, caught; restoring from disk");
            if caught(self, &mut |actor| actor.recover(about)) {
                break;
            }
            if !caught(self, &mut Actor::drive) {
                return;
            }
            about = None;
        }
        // Restoring itself failed, or kept failing: these conversations
        // cannot be trusted in memory. They stay on disk as they were, and
        // a restart brings them back.
        tracing::error!(contact = %self.contact, "cannot restore after a panic; the conversations wait for a restart");
        self.abort_turn();
        self.convs.clear();
    }

    fn recover(&mut self, about: Option<Uuid>) {
        self.abort_turn();
        self.reply_due = None;
        let mut restored = Vec::with_capacity(self.convs.len());
        for conv in std::mem::take(&mut self.convs) {
            match self.shared.store.load_instance(conv.id) {
                Ok(instance) => {
                    let instance = Arc::new(instance);
                    self.shared.publish(&instance);
                    if !instance.state.is_terminal() {
                        restored.push(instance);
                    }
                }
                Err(error) => tracing::error!(instance = %conv.id, %error, "cannot read the conversation back"),
            }
        }
        self.convs = restored;
        let Some(id) = about.filter(|id| self.index(*id).is_ok()).or_else(|| self.convs.first().map(|c| c.id)) else {
            return;
        };
        let again = self.panics.contains(&id);
        let reason = match again {
            false => "relay hit an internal error (a bug) and restored this conversation from disk; it goes on",
            true => "relay hit an internal error (a bug) twice in this conversation: a person should look at it",
        };
        self.shared.emit(id, crate::api::EventData::Recovered { reason: reason.to_string() });
        if !again {
            self.panics.push(id);
            return;
        }
        // To a person where the table allows it (a turn was due or under
        // way), else paused with the reason: either way it waits for someone.
        let handed = self.agent_failed(id, reason.to_string()).map(drop);
        let held = handed
            .or_else(|_| self.transition(id, crate::fsm::Event::Pause, Some(reason.to_string()), |_| {}).map(drop));
        if let Err(error) = held {
            // Neither (queued, say): out of memory, as it is on disk, until a
            // restart brings it back.
            tracing::error!(instance = %id, %error, "cannot hand the conversation to a person");
            self.convs.retain(|c| c.id != id);
        }
    }

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
                // Let the conversation move on first, so the caller sees where
                // it went; what the command did stands, whatever that does.
                self.supervised(None, Actor::drive);
                let result = result.map(|(instance, message)| (self.current(instance).instance, message));
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
            Msg::Mark { id, turn, call, verified, reply } => {
                let result = self.mark_todo(id, turn, call, verified);
                // Having recorded what the contact said, the turn may answer it.
                if matches!(result, Ok(Marked::Done(_)))
                    && let Some(running) = self.turn.as_mut().filter(|t| t.number == turn)
                {
                    running.may_send = true;
                }
                let _ = reply.send(result);
            }
            Msg::Tool { id, turn, call, reply } => {
                let _ = reply.send(self.tool(id, turn, call));
            }
            Msg::Sent { message, result, waiter } => self.sent(message, result, waiter),
            Msg::SentUpdate { instance, message, update, done } => {
                self.sent_update(instance, message, update);
                let _ = done.send(());
            }
            Msg::ChannelChanged => self.mark_missed_span(),
            Msg::Usage { id, usage } => self.record_usage(id, usage),
            Msg::TurnDone { id, turn, result } => self.turn_done(id, turn, result),
            Msg::MediaDone { message } => self.media_done(*message),
            Msg::OptOut { reason, reply } => {
                let _ = reply.send(self.opt_out(crate::courtesy::OptOutSource::Operator, None, reason));
            }
        }
    }
}
