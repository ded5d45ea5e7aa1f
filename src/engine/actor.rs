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

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use uuid::Uuid;

use super::tools::ActorTools;
use super::{EngineError, Shared, bounded_text, heartbeat, limits, report};
use crate::agent::{AgentError, Turn, TurnKind};
use crate::agent::{ConversationTools, ToolCall, ToolError};
use crate::api::{
    ContactText, ConversationInstance, CreateInstanceResponse, EventData, Question, Role, SendStatus, State,
    StateTransition, TokenUsage, TranscriptMessage,
};
use crate::channel::{ChannelError, Delivery, InboundMessage, MessageRef, Sent};
use crate::contact::Contact;
use crate::fsm::{self, Event, Target};

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
    /// The channel refused a message after taking it.
    DeliveryFailed {
        instance: Uuid,
        message: Uuid,
        error: String,
    },
    /// The channel may have become ready (or stopped being): move on.
    ChannelChanged,
    Shutdown,
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
    /// `relay answer`: the operator answers the agent, not the contact.
    Answer {
        text: String,
    },
}

struct RunningTurn {
    instance: Uuid,
    id: u64,
    kind: TurnKind,
    /// A message went out to the contact in the conversation's current
    /// state before this turn (a re-run turn) or from the operator during it.
    already_spoke: bool,
    /// The agent chose when to follow up (`schedule_next_heartbeat`).
    scheduled: bool,
    /// Messages this turn delivered to the contact.
    sent: u32,
    /// Messages this turn handed to the channel (sent or not).
    attempted: u32,
    /// The contact's messages this turn answers: marked read when it ends well.
    answers: Vec<MessageRef>,
    /// The same messages' transcript ids: what a todo answered now rests on.
    answering: Vec<Uuid>,
    task: JoinHandle<()>,
}

/// The armed heartbeat: the persisted wall-clock deadline and the monotonic
/// instant it maps to (computed once, so other events do not shift it).
struct Timer {
    instance: Uuid,
    at: DateTime<Utc>,
    deadline: Instant,
}

struct Actor {
    shared: Arc<Shared>,
    contact: Contact,
    me: mpsc::UnboundedSender<Msg>,
    /// This contact's non-terminal conversations, oldest first.
    /// The contact's live conversations, oldest first, shared with the
    /// engine's view (a change replaces the whole instance in both).
    convs: Vec<Arc<ConversationInstance>>,
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
}

/// What `drive` does next.
enum Step {
    Promote(Uuid),
    Transition(Uuid, Event),
    RunTurn(Uuid, TurnKind),
    Abandon(Uuid),
    /// The channel cannot send: say why on the conversation, and wait.
    Block(Uuid, String),
}

/// How long shutdown waits for sends already under way to report back.
const SEND_DRAIN: Duration = Duration::from_secs(10);

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
    };
    actor.drive();
    loop {
        // Not while a send is under way: what it sends must still be recorded.
        if actor.convs.is_empty() && actor.sending.is_empty() && actor.shared.retire(&actor.contact, &rx) {
            break;
        }
        let deadline = actor.sync_timer();
        let reply_due = actor.reply_due;
        tokio::select! {
            msg = rx.recv() => match msg {
                None | Some(Msg::Shutdown) => break,
                Some(msg) => actor.handle(msg),
            },
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                actor.heartbeat_fired();
            }
            _ = tokio::time::sleep_until(reply_due.unwrap_or_else(Instant::now)), if reply_due.is_some() => {
                actor.reply_due = None;
            }
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
                if let Err(error) = self.start_agent_send(id, turn, text, reply) {
                    tracing::debug!(instance = %id, %error, "send refused");
                }
            }
            Msg::Tool { id, turn, call, reply } => {
                let _ = reply.send(self.tool(id, turn, call));
            }
            Msg::Sent { message, result, waiter } => self.sent(message, result, waiter),
            Msg::DeliveryFailed { instance, message, error } => self.delivery_failed(instance, message, error),
            Msg::ChannelChanged => {}
            Msg::Usage { id, usage } => {
                if let Err(error) = self.update(id, |i| i.usage += usage) {
                    tracing::warn!(instance = %id, %error, "cannot record token usage");
                }
            }
            Msg::TurnDone { id, turn, result } => self.turn_done(id, turn, result),
            Msg::Shutdown => unreachable!("handled by the loop"),
        }
    }

    // ---- creation and the queue --------------------------------------------

    fn create(&mut self, mut instance: ConversationInstance) -> Result<CreateInstanceResponse, EngineError> {
        if self.convs.iter().any(|c| c.holds_contact()) {
            let event = Event::ContactHasActiveInstance;
            let target = fsm::next(instance.state, event, None)
                .map_err(|source| EngineError::Transition { id: instance.id, source })?;
            let to = fsm::resolve(instance.state, target, None);
            instance.history.push(entry(instance.state, to, event, None, instance.created_at));
            instance.state = to;
        }
        self.shared.store.save_instance(&instance)?;
        let instance = Arc::new(instance);
        self.shared.publish(&instance);
        tracing::info!(instance = %instance.id, state = %instance.state, "conversation created");
        let created = EventData::Created { state: instance.state, target_contact: instance.target_contact.clone() };
        self.shared.emit(instance.id, created);
        let response = CreateInstanceResponse { id: instance.id, state: instance.state };
        self.convs.push(instance);
        Ok(response)
    }

    /// Moves the conversations as far as they go on their own. Idempotent.
    fn drive(&mut self) {
        if self.shared.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return; // nothing new starts during shutdown; the next start drives
        }
        while let Some(step) = self.next_step() {
            let done = match step {
                Step::Promote(id) => self.transition(id, Event::PriorInstanceTerminal, None, |_| {}).map(drop),
                Step::Transition(id, event) => {
                    self.transition(id, event, None, |i| i.unanswered_contact_messages = 0).map(drop)
                }
                Step::Abandon(id) => {
                    let reason = self.index(id).map(|index| report::no_response(&self.convs[index]));
                    reason
                        .and_then(|reason| self.transition(id, Event::MaxFollowupsExceeded, Some(reason), |_| {}))
                        .map(drop)
                }
                Step::RunTurn(id, kind) => self.start_turn(id, kind),
                Step::Block(id, reason) => {
                    tracing::info!(instance = %id, %reason, "waiting for the channel");
                    self.update(id, |i| i.channel_blocked = Some(reason))
                }
            };
            if let Err(error) = done {
                tracing::error!(contact = %self.contact, %error, "cannot move the conversation on");
                break;
            }
        }
    }

    fn next_step(&self) -> Option<Step> {
        if self.turn.is_some() {
            return None;
        }
        let Some(live) = self.convs.iter().find(|c| c.holds_contact()) else {
            // FIFO: the oldest conversation still waiting in the queue.
            return self.convs.iter().find(|c| c.state == State::Queued).map(|c| Step::Promote(c.id));
        };
        let id = live.id;
        match live.state {
            State::Created => Some(Step::Transition(id, Event::AgentSendsFirstMessage)),
            State::WaitingForAgent if self.reply_due.is_some_and(|due| due > Instant::now()) => None,
            State::WaitingForAgent => Some(Step::Transition(id, Event::AgentProcessesReply)),
            State::WaitingForReply if live.unanswered_contact_messages > 0 => {
                Some(Step::Transition(id, Event::ContactReplies))
            }
            // `follow_up_count` counts the follow-ups sent: the last one allowed is out.
            State::HeartbeatScheduled if live.follow_up_count >= live.heartbeat_config.max_followups => {
                Some(Step::Abandon(id))
            }
            // A turn cut short while it was sending waits for the outcome, and
            // sees it in the transcript: it never sends the same thing blindly.
            State::Active | State::HeartbeatScheduled if self.sending.contains(&id) => None,
            State::Active | State::HeartbeatScheduled => self.turn_or_block(live),
            _ => None,
        }
    }

    /// A turn, unless the channel cannot send (then the conversation waits,
    /// saying why). Without a model the turn runs anyway: it hands over to
    /// the operator at once, and that needs no channel.
    fn turn_or_block(&self, live: &ConversationInstance) -> Option<Step> {
        if let (Err(reason), Ok(())) = (self.shared.channel.ready(), self.shared.agent.ready()) {
            return (live.channel_blocked.as_ref() != Some(&reason)).then_some(Step::Block(live.id, reason));
        }
        let kind = match live.state {
            State::HeartbeatScheduled => {
                TurnKind::FollowUp { number: live.follow_up_count + 1, max: live.heartbeat_config.max_followups }
            }
            _ => self.turn_kind(live),
        };
        Some(Step::RunTurn(live.id, kind))
    }

    /// Why an ACTIVE conversation needs a turn, from its last transition.
    fn turn_kind(&self, instance: &ConversationInstance) -> TurnKind {
        match instance.history.last().map(|t| t.trigger.as_str()) {
            Some("agent_sends_first_message") => TurnKind::FirstMessage,
            Some("agent_processes_reply") => TurnKind::Reply,
            Some("operator_answers") => TurnKind::Answered,
            _ => TurnKind::Resume,
        }
    }

    // ---- transitions -------------------------------------------------------

    /// Applies `event` to conversation `id` if the table allows it: the new
    /// state, `previous_state`, heartbeat fields, `change`, and a history
    /// entry, all written to disk before this returns.
    fn transition(
        &mut self,
        id: Uuid,
        event: Event,
        reason: Option<String>,
        change: impl FnOnce(&mut ConversationInstance),
    ) -> Result<ConversationInstance, EngineError> {
        let index = self.index(id)?;
        let current = &self.convs[index];
        let (from, previous) = (current.state, current.previous_state);
        let target = fsm::next(from, event, previous).map_err(|source| {
            tracing::warn!(instance = %id, state = %from, event = %event, "invalid transition refused");
            EngineError::Transition { id, source }
        })?;
        let to = fsm::resolve(from, target, previous);
        let now = Utc::now();
        let mut next = (**current).clone();
        next.state = to;
        if to == State::Paused {
            next.previous_state = Some(from);
        } else if from == State::Paused {
            next.previous_state = None;
        }
        heartbeat::on_transition(&mut next, from, to, now);
        if !matches!(to, State::NeedsHumanIntervention | State::Paused) {
            // Why a person was needed holds only while one is (and while
            // paused from there); the history keeps it.
            next.intervention_reason = None;
        }
        change(&mut next);
        if from == State::NeedsHumanIntervention && to != State::Paused {
            // Not answered (the operator resumed or wrote to the contact).
            set_question_aside(&mut next);
        }
        if to.is_terminal() {
            report::on_end(&mut next, event, reason.as_deref());
        }
        if target != Target::Stay {
            next.history.push(entry(from, to, event, reason.clone(), now));
            tracing::info!(instance = %id, from = %from, to = %to, trigger = %event, "transition");
        }
        next.updated_at = now;
        let committed = self.commit(index, next)?;
        if target != Target::Stay {
            let trigger = event.as_str().to_string();
            self.shared.emit(id, EventData::Transition { from, to, trigger, reason });
        }
        Ok(committed)
    }

    /// Changes conversation `id` without a transition (todos, counters).
    fn update(&mut self, id: Uuid, change: impl FnOnce(&mut ConversationInstance)) -> Result<(), EngineError> {
        let index = self.index(id)?;
        let mut next = (*self.convs[index]).clone();
        change(&mut next);
        next.updated_at = Utc::now();
        self.commit(index, next).map(drop)
    }

    fn commit(&mut self, index: usize, next: ConversationInstance) -> Result<ConversationInstance, EngineError> {
        self.shared.store.save_instance(&next)?;
        let next = Arc::new(next);
        self.shared.publish(&next);
        if next.state.is_terminal() {
            self.convs.remove(index);
        } else {
            self.convs[index] = next.clone();
        }
        Ok(Arc::unwrap_or_clone(next))
    }

    fn index(&self, id: Uuid) -> Result<usize, EngineError> {
        self.convs.iter().position(|c| c.id == id).ok_or_else(|| EngineError::NotFound(id.to_string()))
    }

    /// The latest persisted form of `instance` (it may have moved on).
    fn current(&self, instance: ConversationInstance) -> ConversationInstance {
        self.shared.snapshot(instance.id).map(|i| (*i).clone()).unwrap_or(instance)
    }

    fn record(&self, id: Uuid, role: Role, content: String) -> Result<TranscriptMessage, EngineError> {
        let message = TranscriptMessage::new(id, role, content);
        self.record_message(&message)?;
        Ok(message)
    }

    fn record_message(&self, message: &TranscriptMessage) -> Result<(), EngineError> {
        self.shared.store.append_message(message)?;
        if let Some(channel_id) = &message.channel_message_id {
            self.shared.remember_sent(channel_id, message.instance_id, message.id);
        }
        Ok(())
    }

    // ---- operator commands -------------------------------------------------

    fn operate(&mut self, id: Uuid, op: Op) -> Result<(ConversationInstance, Option<TranscriptMessage>), EngineError> {
        match op {
            Op::Pause => {
                let instance = self.transition(id, Event::Pause, None, |_| {})?;
                // The turn re-runs from disk on resume.
                self.abort_turn_of(id);
                Ok((instance, None))
            }
            Op::Resume => Ok((self.transition(id, Event::Resume, None, |_| {})?, None)),
            Op::Cancel => {
                let reason = "cancelled".to_string();
                let instance = self.transition(id, Event::Cancel, Some(reason.clone()), |i| {
                    i.failure_reason = Some(reason);
                })?;
                self.abort_turn_of(id);
                Ok((instance, None))
            }
            Op::Answer { text } => self.answer(id, text).map(|instance| (instance, None)),
            Op::Send { .. } => unreachable!("handled by start_manual_send"),
        }
    }

    /// `relay answer`: the agent's pending question gets the operator's
    /// answer, and the agent takes a turn with it. Nothing goes to the
    /// contact. With no question pending there is nothing to answer: the
    /// operator resumes the agent or writes to the contact instead.
    fn answer(&mut self, id: Uuid, text: String) -> Result<ConversationInstance, EngineError> {
        let current = &self.convs[self.index(id)?];
        if current.state == State::NeedsHumanIntervention && current.pending_question.is_none() {
            let reason = current.intervention_reason.clone().unwrap_or_else(|| "no reason was recorded".into());
            return Err(EngineError::NoQuestion { id, reason });
        }
        let now = Utc::now();
        let mut answered = None;
        let instance = self.transition(id, Event::OperatorAnswers, None, |i| {
            let Some(mut question) = i.pending_question.take() else { return };
            question.answer = Some(text.clone());
            question.answered_at = Some(now);
            answered = Some(question.id.clone());
            i.earlier_questions.push(question);
        })?;
        let question_id = answered.expect("set by the transition");
        let note = format!("The operator answered the agent ({question_id}): {text}");
        if let Err(error) = self.record(id, Role::System, note) {
            tracing::warn!(instance = %id, %error, "cannot note the answer in the transcript");
        }
        self.shared.emit(id, EventData::Answer { question_id, answer: text });
        Ok(instance)
    }

    /// `relay send`: checked against the table now, delivered in the
    /// background, then recorded and applied (see [`Actor::sent`]).
    fn start_manual_send(&mut self, message: TranscriptMessage, reply: OperatorReply) {
        let id = message.instance_id;
        let allowed = self.index(id).and_then(|index| {
            let (state, previous) = (self.convs[index].state, self.convs[index].previous_state);
            fsm::next(state, Event::ManualSend, previous).map_err(|source| {
                tracing::warn!(instance = %id, state = %state, event = %Event::ManualSend, "invalid transition refused");
                EngineError::Transition { id, source }
            })
        });
        match allowed {
            Ok(_) => self.start_send(message, SendWaiter::Operator { reply }),
            Err(error) => {
                let _ = reply.send(Err(error));
            }
        }
    }

    /// After `relay send` went out: the conversation waits for the reply
    /// (from NEEDS_HUMAN_INTERVENTION: ACTIVE, then WAITING_FOR_REPLY with
    /// its heartbeat armed; from WAITING_FOR_REPLY: the heartbeat restarts).
    /// A PAUSED conversation stays paused (the operator took over); if it
    /// was waiting for a reply, the wait it resumes to starts afresh.
    fn after_manual_send(&mut self, id: Uuid) -> Result<(), EngineError> {
        let index = self.index(id)?;
        match self.convs[index].state {
            State::NeedsHumanIntervention => {
                // The operator has answered whatever the contact said meanwhile.
                self.transition(id, Event::ManualSend, None, |i| i.unanswered_contact_messages = 0)?;
                self.transition(id, Event::MessageSent, None, |_| {}).map(drop)
            }
            State::WaitingForReply => self.update(id, |i| heartbeat::rearm(i, Utc::now())),
            State::Paused if self.convs[index].previous_state == Some(State::WaitingForReply) => {
                self.update(id, |i| i.paused_heartbeat_remaining_ms = Some(i.heartbeat_config.interval_ms))
            }
            _ => Ok(()),
        }
    }

    // ---- sending -----------------------------------------------------------

    /// Records `message` as pending, then hands it to the channel in a task
    /// of its own, so a slow send (pacing, a reconnecting link) holds up none
    /// of this contact's other events. The outcome comes back as
    /// [`Msg::Sent`]. If the pending record cannot be written, nothing is sent.
    fn start_send(&mut self, message: TranscriptMessage, waiter: SendWaiter) {
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
        if let Err(error) = self.shared.store.append_message(&message) {
            tracing::error!(instance = %message.instance_id, %error, "cannot record a message before sending it; not sent");
            waiter.refuse(EngineError::Store(error));
            return;
        }
        let (channel, contact, me) = (self.shared.channel.clone(), self.contact.clone(), self.me.clone());
        self.sending.push(message.instance_id);
        tokio::spawn(async move {
            let result = channel.send(&contact, &message.content).await;
            let _ = me.send(Msg::Sent { message, result, waiter });
        });
    }

    fn start_agent_send(&mut self, id: Uuid, turn: u64, text: String, reply: ToolReply) -> Result<(), ToolError> {
        let checked = self.check_turn(id, turn).and_then(|()| {
            if self.turn.as_ref().is_some_and(|t| t.attempted >= limits::MAX_MESSAGES_PER_TURN) {
                return Err(ToolError(format!(
                    "not sent: at most {} messages per turn; wait for the contact to answer",
                    limits::MAX_MESSAGES_PER_TURN
                )));
            }
            bounded_text("message", text, limits::MAX_MESSAGE_CHARS).map_err(|e| ToolError(e.to_string()))
        });
        match checked {
            Ok(text) => {
                if let Some(running) = self.turn.as_mut() {
                    running.attempted += 1;
                }
                let message = TranscriptMessage::outgoing(id, Role::Agent, text);
                self.start_send(message, SendWaiter::Tool { turn, reply });
                Ok(())
            }
            Err(error) => {
                let _ = reply.send(Err(error.clone()));
                Err(error)
            }
        }
    }

    /// A send finished: its record is settled (sent, or failed with why),
    /// even if its turn or its conversation has ended meanwhile.
    fn sent(&mut self, message: TranscriptMessage, result: Result<Sent, ChannelError>, waiter: SendWaiter) {
        let id = message.instance_id;
        if let Some(at) = self.sending.iter().position(|s| *s == id) {
            self.sending.remove(at);
        }
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
        match self.record_message(&settled) {
            Ok(()) => self.shared.emit(id, message_out(&settled)),
            // The contact has it (or not) all the same; on disk it stays
            // pending, and reads as unconfirmed after a restart.
            Err(error) => tracing::error!(instance = %id, %error, "cannot record what became of a message"),
        }
        match (waiter, result) {
            (SendWaiter::Tool { turn, reply }, Ok(_)) => {
                if let Some(running) = self.turn.as_mut().filter(|t| t.id == turn) {
                    running.sent += 1;
                }
                let _ = reply.send(Ok("sent".to_string()));
            }
            (SendWaiter::Tool { turn, reply }, Err(error)) => {
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
                    Some(instance) => Ok(((*instance).clone(), Some(settled))),
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
        let mine = self.turn.as_ref().is_some_and(|t| t.id == turn && t.instance == id);
        match &error {
            // Nothing is wrong with the conversation: it waits for the channel
            // and its turn runs again from the transcript.
            ChannelError::Unavailable { reason, .. } => {
                let reason = reason.clone();
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

    /// WhatsApp refused a message after taking it: the transcript says so.
    fn delivery_failed(&mut self, instance: Uuid, message: Uuid, error: String) {
        if let Err(e) = self.shared.mark_undelivered(instance, message, error) {
            tracing::error!(%instance, error = %e, "cannot record a refused message");
        }
    }

    /// On shutdown: let sends already under way report back (bounded), so
    /// what went out is recorded.
    async fn drain_sends(&mut self, rx: &mut mpsc::UnboundedReceiver<Msg>) {
        let deadline = Instant::now() + SEND_DRAIN;
        while !self.sending.is_empty() {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(Msg::Sent { message, result, waiter })) => self.sent(message, result, waiter),
                Ok(Some(Msg::DeliveryFailed { instance, message, error })) => {
                    self.delivery_failed(instance, message, error)
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }

    // ---- contact messages and heartbeats -----------------------------------

    fn inbound(&mut self, message: InboundMessage) -> Delivery {
        let Some(live) = self.convs.iter().find(|c| c.holds_contact()) else {
            self.shared.keep_unrouted(message.from, message.text);
            return Delivery::NoConversation;
        };
        let (id, state) = (live.id, live.state);
        let reference = message.reference.clone();
        let recorded = TranscriptMessage {
            channel_message_id: message.reference.map(|r| r.id),
            ..TranscriptMessage::new(id, Role::Contact, message.text)
        };
        // Recorded first: whatever happens next, the message is not lost.
        if let Err(error) = self.shared.store.append_message(&recorded) {
            tracing::error!(instance = %id, %error, "cannot record a contact message");
            return Delivery::NotRecorded(error.to_string());
        }
        self.unread.extend(reference);
        tracing::info!(instance = %id, state = %state, "contact message received");
        let event = EventData::MessageIn { message_id: recorded.id, untrusted_contact_text: recorded.content.clone() };
        self.shared.emit(id, event);
        let last = ContactText {
            message_id: recorded.id,
            at: recorded.timestamp,
            untrusted_contact_text: recorded.content.clone(),
        };
        let count = |i: &mut ConversationInstance| {
            i.unanswered_contact_messages += 1;
            i.follow_up_count = 0;
            i.last_contact_message = Some(last);
        };
        let saved = match state {
            State::WaitingForReply => self.transition(id, Event::ContactReplies, None, count).map(drop),
            _ => self.update(id, count),
        };
        if matches!(state, State::WaitingForReply | State::WaitingForAgent) {
            // Several messages in quick succession get one answer.
            self.reply_due = Some(Instant::now() + self.shared.settings.reply_window);
        }
        if let Err(error) = saved {
            tracing::error!(instance = %id, %error, "cannot save a contact message's effect");
        }
        Delivery::Delivered(id)
    }

    /// Keeps the timer in step with the live conversation's persisted deadline.
    fn sync_timer(&mut self) -> Option<Instant> {
        let armed = self
            .convs
            .iter()
            .find(|c| c.state == State::WaitingForReply)
            .and_then(|c| c.next_heartbeat_at.map(|at| (c.id, at)));
        let Some((instance, at)) = armed else {
            self.timer = None;
            return None;
        };
        if let Some(timer) = self.timer.as_ref().filter(|t| t.instance == instance && t.at == at) {
            return Some(timer.deadline);
        }
        let wait = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
        let deadline = Instant::now() + wait;
        self.timer = Some(Timer { instance, at, deadline });
        Some(deadline)
    }

    fn heartbeat_fired(&mut self) {
        let Some(timer) = self.timer.take() else { return };
        let id = timer.instance;
        let lateness_ms = (Utc::now() - timer.at).num_milliseconds();
        tracing::debug!(instance = %id, lateness_ms, "heartbeat fired");
        match self.transition(id, Event::HeartbeatFires, None, |_| {}) {
            // drive() writes the follow-up, or abandons once max_followups were sent.
            Ok(instance) => tracing::info!(instance = %id, follow_ups_sent = instance.follow_up_count, "heartbeat"),
            Err(error @ EngineError::Store(_)) => {
                // Try again in a second rather than spin on a failing disk.
                tracing::error!(instance = %id, %error, "cannot record the heartbeat; retrying in 1s");
                self.timer = Some(Timer { deadline: Instant::now() + Duration::from_secs(1), ..timer });
            }
            Err(error) => tracing::warn!(instance = %id, %error, "heartbeat discarded"),
        }
    }

    // ---- agent turns -------------------------------------------------------

    fn start_turn(&mut self, id: Uuid, kind: TurnKind) -> Result<(), EngineError> {
        if let Err(error) = self.shared.agent.ready() {
            let reason = error.to_string();
            return self
                .transition(id, Event::AgentError, Some(reason.clone()), |i| i.intervention_reason = Some(reason))
                .map(drop);
        }
        let index = self.index(id)?;
        if self.convs[index].unanswered_contact_messages > 0 || self.convs[index].channel_blocked.is_some() {
            self.update(id, |i| {
                i.unanswered_contact_messages = 0;
                i.channel_blocked = None;
            })?;
        }
        let instance = (*self.convs[self.index(id)?]).clone();
        let transcript = self.shared.store.read_transcript(id)?;
        // A first turn cut short after it spoke (stop, pause) goes on, not over.
        let spoke = transcript
            .iter()
            .any(|m| matches!(m.role, Role::Agent | Role::Manual) && m.send_status != Some(SendStatus::Failed));
        let kind = if kind == TurnKind::FirstMessage && spoke { TurnKind::Resume } else { kind };
        let already_spoke = spoke_in_current_state(&instance, &transcript);
        // The contact's messages since relay last spoke: what this turn answers.
        let mut answering: Vec<Uuid> = transcript
            .iter()
            .rev()
            .take_while(|m| !matches!(m.role, Role::Agent | Role::Manual))
            .filter(|m| m.role == Role::Contact)
            .map(|m| m.id)
            .collect();
        answering.reverse();
        self.turns_started += 1;
        let turn = self.turns_started;
        let tools = ConversationTools::new(ActorTools { actor: self.me.clone(), instance: id, turn });
        let (agent, me) = (self.shared.agent.clone(), self.me.clone());
        tracing::debug!(instance = %id, ?kind, "turn started");
        let task = tokio::spawn(async move {
            let result = agent.run_turn(Turn { kind, instance, transcript, already_spoke }, tools).await;
            let _ = me.send(Msg::TurnDone { id, turn, result });
        });
        let answers = std::mem::take(&mut self.unread);
        self.turn = Some(RunningTurn {
            instance: id,
            id: turn,
            kind,
            already_spoke,
            scheduled: false,
            sent: 0,
            attempted: 0,
            answers,
            answering,
            task,
        });
        Ok(())
    }

    fn turn_done(&mut self, id: Uuid, turn: u64, result: Result<(), AgentError>) {
        let Some(finished) = self.turn.take_if(|t| t.id == turn) else {
            return; // a turn that was interrupted or detached
        };
        if result.is_ok() && !finished.answers.is_empty() {
            let channel = self.shared.channel.clone();
            tokio::spawn(async move { channel.mark_read(finished.answers).await });
        }
        let Ok(index) = self.index(id) else { return };
        let state = self.convs[index].state;
        let spoke = finished.sent > 0 || finished.already_spoke;
        // The rule on how a turn may end (see `may_end_without_sending`),
        // for any agent: a conversation never waits for a reply to a message
        // that was not sent.
        let result = match result {
            Ok(()) if !spoke && !crate::agent::may_end_without_sending(finished.kind, finished.scheduled) => {
                Err(if finished.attempted > 0 { AgentError::NotSent } else { AgentError::Silent })
            }
            other => other,
        };
        let outcome = match (state, result) {
            (State::Active | State::HeartbeatScheduled, Err(error)) => {
                tracing::warn!(instance = %id, %error, "the agent could not take its turn");
                let reason = error.to_string();
                self.transition(id, Event::AgentError, Some(reason.clone()), |i| i.intervention_reason = Some(reason))
            }
            (State::Active, Ok(())) if spoke => self.transition(id, Event::MessageSent, None, |_| {}),
            (State::HeartbeatScheduled, Ok(())) if spoke => {
                self.transition(id, Event::FollowupSent, None, |i| i.follow_up_count += 1)
            }
            (State::Active | State::HeartbeatScheduled, Ok(())) => self.transition(id, Event::AgentWaits, None, |_| {}),
            _ => return,
        };
        if let Err(error) = outcome {
            tracing::error!(instance = %id, %error, "cannot record the end of a turn");
        }
    }

    fn abort_turn(&mut self) {
        if let Some(turn) = self.turn.take() {
            turn.task.abort();
            // Not answered after all: the turn that runs again marks them read.
            self.unread.splice(0..0, turn.answers);
        }
    }

    /// The operator stopped conversation `id` (pause, cancel): stop its turn now.
    fn abort_turn_of(&mut self, id: Uuid) {
        if self.turn.as_ref().is_some_and(|t| t.instance == id) {
            self.abort_turn();
        }
    }

    /// The agent ended its own turn (end_conversation, request_human_intervention):
    /// let it finish on its own; anything it still tries is refused.
    fn detach_turn(&mut self) {
        self.turn = None;
    }

    // ---- the six tools -----------------------------------------------------

    /// Tools may only act for the turn that is running now.
    fn check_turn(&self, id: Uuid, turn: u64) -> Result<(), ToolError> {
        let mine = self.turn.as_ref().is_some_and(|t| t.id == turn && t.instance == id);
        if !mine || self.index(id).is_err() {
            return Err(ToolError(
                "this turn is over (the conversation was paused, cancelled or ended): do nothing more".into(),
            ));
        }
        Ok(())
    }

    /// Every tool but `send_message` (see [`Actor::start_agent_send`]).
    fn tool(&mut self, id: Uuid, turn: u64, call: ToolCall) -> Result<String, ToolError> {
        self.check_turn(id, turn)?;
        let refused = |e: EngineError| ToolError(e.to_string());
        tracing::debug!(instance = %id, tool = call.name(), "tool call");
        match call {
            ToolCall::SendMessage { .. } => unreachable!("handled by start_agent_send"),
            ToolCall::MarkTodoItem { todo_id, status, answer } => {
                let instance = &self.convs[self.index(id).map_err(refused)?];
                if !instance.todos.iter().any(|t| t.id == todo_id) {
                    let ids: Vec<&str> = instance.todos.iter().map(|t| t.id.as_str()).collect();
                    return Err(ToolError(format!(
                        "there is no todo '{todo_id}'; the todo ids are {}",
                        ids.join(", ")
                    )));
                }
                let answer =
                    answer.map(|a| bounded_text("answer", a, limits::MAX_NOTE_CHARS)).transpose().map_err(refused)?;
                // What the answer rests on: the messages this turn answers,
                // else the contact's latest.
                let mut rests_on = self.turn.as_ref().map(|t| t.answering.clone()).unwrap_or_default();
                if rests_on.is_empty() {
                    rests_on.extend(instance.last_contact_message.as_ref().map(|m| m.message_id));
                }
                let recorded = answer.clone();
                self.update(id, |i| {
                    let todo = i.todos.iter_mut().find(|t| t.id == todo_id).expect("checked above");
                    todo.status = status;
                    if answer.is_some() {
                        todo.answer = answer;
                        todo.answer_message_ids = rests_on;
                    }
                })
                .map_err(refused)?;
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
                let judged = report::judged_outcome(&self.convs[self.index(id).map_err(refused)?].todos);
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
                let asked = self
                    .transition(id, Event::RequestIntervention, Some(reason.clone()), |i| {
                        i.intervention_reason = Some(reason.clone());
                        i.pending_question = Some(Question {
                            id: format!("q{}", i.earlier_questions.len() + 1),
                            reason,
                            question,
                            asked_at: Utc::now(),
                            answer: None,
                            answered_at: None,
                        });
                    })
                    .map_err(refused)?;
                if let Some(question) = asked.pending_question {
                    self.shared.emit(id, EventData::Question { question });
                }
                self.detach_turn();
                Ok("a human operator has been asked to step in; stop here. Their answer, if they give one, \
                    comes in your next turn."
                    .into())
            }
        }
    }
}

/// Whether a message went out to the contact (or may have: one unconfirmed
/// after a crash counts) since `instance` entered its current state, not
/// counting a pause and resume in between.
fn spoke_in_current_state(instance: &ConversationInstance, transcript: &[TranscriptMessage]) -> bool {
    let Some(entered) = instance
        .history
        .iter()
        .rev()
        .find(|t| t.to_state == instance.state && t.from_state != Some(State::Paused))
        .map(|t| t.timestamp)
    else {
        return false;
    };
    transcript.iter().any(|m| {
        matches!(m.role, Role::Agent | Role::Manual)
            && m.send_status != Some(SendStatus::Failed)
            && m.timestamp >= entered
    })
}

/// Leaving NEEDS_HUMAN_INTERVENTION other than by an answer (resume, send):
/// the question stays on record, unanswered.
fn set_question_aside(instance: &mut ConversationInstance) {
    if let Some(question) = instance.pending_question.take() {
        instance.earlier_questions.push(question);
    }
}

/// The event of a message relay sent (or failed to).
pub(crate) fn message_out(message: &TranscriptMessage) -> EventData {
    EventData::MessageOut {
        message_id: message.id,
        role: message.role,
        text: message.content.clone(),
        send_status: message.send_status.unwrap_or(SendStatus::Sent),
        delivery_error: message.delivery_error.clone(),
    }
}

fn entry(from: State, to: State, event: Event, reason: Option<String>, at: DateTime<Utc>) -> StateTransition {
    StateTransition { from_state: Some(from), to_state: to, trigger: event.as_str().into(), timestamp: at, reason }
}
