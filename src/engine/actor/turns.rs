//! The agent's turns: starting one (what it answers, whether it already
//! spoke), ending it (the rule on how a turn may end), and stopping it.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::tool_sink::ActorTools;
use super::{Actor, Msg};
use crate::agent::{AgentError, ConversationTools, Turn, TurnKind};
use crate::api::{ConversationInstance, Evidence, Role, SendStatus, State, TodoItem, TranscriptMessage};
use crate::channel::MessageRef;
use crate::engine::EngineError;
use crate::fsm::Event;
use crate::store::ConversationRecord;

pub(super) struct RunningTurn {
    pub(super) instance: Uuid,
    /// The turn's number (the actor counts them): a tool call from an
    /// earlier turn is refused, and its end ignored.
    pub(super) number: u64,
    pub(super) kind: TurnKind,
    /// A message went out to the contact in the conversation's current
    /// state before this turn (a re-run turn) or from the operator during it.
    pub(super) already_spoke: bool,
    /// The agent chose when to follow up (`schedule_next_heartbeat`).
    pub(super) scheduled: bool,
    /// Messages this turn delivered to the contact.
    pub(super) sent: u32,
    /// Messages this turn handed to the channel (sent or not).
    pub(super) attempted: u32,
    /// Whether the turn may write to the contact now: once at the start,
    /// and again only after it recorded what they said (`mark_todo_item`),
    /// after they wrote again, or after a send that failed: one message at a
    /// time, not two or three in a row.
    pub(super) may_send: bool,
    /// What those messages said, as compared (see `sends::same_text`): a
    /// turn does not send the same thing twice.
    pub(super) said: Vec<String>,
    /// The todos this turn recorded an answer on, each as it was before:
    /// an answer the turn then writes to the contact is taken back.
    pub(super) recorded: Vec<TodoItem>,
    /// The turn's `contact_opted_out` was refused once, as the contact's
    /// words did not ask to stop: a second call goes to a person.
    pub(super) opt_out_refused: bool,
    /// The contact's messages this turn answers: marked read when it ends well.
    pub(super) answers: Vec<MessageRef>,
    /// The same messages (transcript id and words): what a todo answered
    /// now rests on.
    pub(super) answering: Vec<Evidence>,
    /// The conversation's `usage.text_tool_calls` when the turn started:
    /// the turn's end says how many of its calls were read from text.
    pub(super) text_calls_before: u64,
    pub(super) task: JoinHandle<()>,
}

impl Actor {
    pub(super) fn start_turn(&mut self, id: Uuid, kind: TurnKind) -> Result<(), EngineError> {
        if let Err(error) = self.shared.agent.ready() {
            return self.agent_failed(id, error.to_string()).map(drop);
        }
        let index = self.index(id)?;
        if self.convs[index].unanswered_contact_messages > 0 || self.convs[index].channel_blocked.is_some() {
            self.update(id, |i| {
                i.unanswered_contact_messages = 0;
                i.channel_blocked = None;
            })?;
        }
        let index = self.index(id)?;
        let instance = self.convs[index].instance.clone();
        let text_calls_before = self.usage_of(index).text_tool_calls;
        let transcript = self.shared.store.read_transcript(id)?;
        // A first turn cut short after it spoke (stop, pause) goes on, not over.
        let spoke = transcript.iter().any(went_out);
        let kind = if kind == TurnKind::FirstMessage && spoke { TurnKind::Resume } else { kind };
        let already_spoke = spoke_in_current_state(&instance, &transcript);
        // The contact's messages since relay last spoke: what this turn answers.
        let mut answering: Vec<Evidence> = transcript
            .iter()
            .rev()
            .take_while(|m| !matches!(m.role, Role::Agent | Role::Manual))
            // Words they took back (edited, deleted) are no answer.
            .filter(|m| m.role == Role::Contact && m.withdrawn.is_none())
            .map(|m| Evidence {
                message_id: m.id,
                untrusted_contact_text: m.content.clone(),
                media: None,
                changed: None,
            })
            .collect();
        answering.reverse();
        self.turns_started += 1;
        let turn = self.turns_started;
        let tools = ConversationTools::new(ActorTools {
            actor: self.me.clone(),
            instance: id,
            turn,
            agent: self.shared.agent.clone(),
        });
        let (agent, me, shared) = (self.shared.agent.clone(), self.me.clone(), self.shared.clone());
        tracing::debug!(instance = %id, ?kind, "turn started");
        let task = tokio::spawn(async move {
            let run = async {
                let images =
                    if agent.sees_images() { super::media::images_to_show(&shared, &transcript) } else { Vec::new() };
                agent.run_turn(Turn { kind, instance, transcript, already_spoke, images }, tools).await
            };
            // A panic in the turn is a bug in relay. Uncaught, the turn
            // would never end and the conversation would wait in silence;
            // caught, the turn fails, and a person is asked, with the reason.
            let result = AssertUnwindSafe(run).catch_unwind().await.unwrap_or(Err(AgentError::Crashed));
            let _ = me.send(Box::new(Msg::TurnDone { id, turn, result }));
        });
        let answers = std::mem::take(&mut self.unread);
        self.turn = Some(RunningTurn {
            instance: id,
            number: turn,
            kind,
            already_spoke,
            scheduled: false,
            sent: 0,
            attempted: 0,
            may_send: true,
            said: Vec::new(),
            recorded: Vec::new(),
            opt_out_refused: false,
            answers,
            answering,
            text_calls_before,
            task,
        });
        Ok(())
    }

    pub(super) fn turn_done(&mut self, id: Uuid, turn: u64, result: Result<(), AgentError>) {
        let Some(finished) = self.turn.take_if(|t| t.number == turn) else {
            return; // a turn that was interrupted or detached
        };
        if result.is_ok() && !finished.answers.is_empty() {
            let channel = self.shared.channel.clone();
            tokio::spawn(async move { channel.mark_read(finished.answers).await });
        }
        let Ok(index) = self.index(id) else { return };
        let state = self.convs[index].state;
        // Recorded on the turn's end: the operator sees that the model
        // wrote its calls as text (`model.text_tool_calls`).
        let read = self.usage_of(index).text_tool_calls.saturating_sub(finished.text_calls_before);
        let note = (read > 0)
            .then(|| format!("{read} tool call{} read from the model's text", if read == 1 { "" } else { "s" }));
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
                self.agent_failed(id, error.to_string())
            }
            (State::Active, Ok(())) if spoke => self.transition(id, Event::MessageSent, note, |_| {}),
            (State::HeartbeatScheduled, Ok(())) if spoke => {
                self.transition(id, Event::FollowupSent, note, |i| i.follow_up_count += 1)
            }
            (State::Active | State::HeartbeatScheduled, Ok(())) => self.transition(id, Event::AgentWaits, note, |_| {}),
            _ => return,
        };
        if let Err(error) = outcome {
            tracing::error!(instance = %id, %error, "cannot record the end of a turn");
        }
    }

    /// Whether turn `turn` of conversation `id` is the one running now.
    pub(super) fn is_running(&self, id: Uuid, turn: u64) -> bool {
        self.turn.as_ref().is_some_and(|t| t.number == turn && t.instance == id)
    }

    /// The agent cannot go on (no model, or a turn that failed): the
    /// operator is asked to step in, told why.
    pub(super) fn agent_failed(&mut self, id: Uuid, reason: String) -> Result<ConversationRecord, EngineError> {
        self.transition(id, Event::AgentError, Some(reason.clone()), |i| i.intervention_reason = Some(reason))
    }

    pub(super) fn abort_turn(&mut self) {
        if let Some(turn) = self.turn.take() {
            turn.task.abort();
            // Not answered after all: the turn that runs again marks them read.
            self.unread.splice(0..0, turn.answers);
        }
    }

    /// The operator stopped conversation `id` (pause, cancel): stop its turn now.
    pub(super) fn abort_turn_of(&mut self, id: Uuid) {
        if self.turn.as_ref().is_some_and(|t| t.instance == id) {
            self.abort_turn();
        }
    }

    /// The agent ended its own turn (end_conversation, request_human_intervention):
    /// let it finish on its own; anything it still tries is refused.
    pub(super) fn detach_turn(&mut self) {
        self.turn = None;
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
    transcript.iter().any(|m| went_out(m) && m.timestamp >= entered)
}

/// Whether relay's message went out to the contact, or may have (sent, or
/// unconfirmed after a crash; not failed).
fn went_out(message: &TranscriptMessage) -> bool {
    matches!(message.role, Role::Agent | Role::Manual) && message.send_status != Some(SendStatus::Failed)
}
