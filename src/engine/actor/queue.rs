//! Which conversation holds the contact, and the FIFO queue behind it.
//!
//! A contact has at most one live conversation (see
//! `ConversationRecord::holds_contact`); the others wait, oldest first.
//! Here: creating a conversation (queued if the contact is taken),
//! [`Actor::drive`] (promote the next queued conversation, start the turn
//! the live one needs) and a contact's message (recorded on the live
//! conversation, else kept as unrouted).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use uuid::Uuid;

use super::Actor;
use super::courtesy::FirstMessage;
use crate::agent::TurnKind;
use crate::api::{
    BudgetLimit, ContactText, CreateInstanceResponse, EventData, Role, State, TranscriptMessage, WaitReason,
};
use crate::channel::{InboundMessage, InboundOutcome};
use crate::engine::conversation::{self, ContactMessage, entry};
use crate::engine::{EngineError, report};
use crate::fsm::{self, Event, Trigger};
use crate::store::ConversationRecord;

/// What `drive` does next.
enum Step {
    Promote(Uuid),
    Transition(Uuid, Event),
    RunTurn(Uuid, TurnKind),
    Abandon(Uuid),
    /// The channel cannot send: say why on the conversation, and wait.
    Block(Uuid, crate::channel::Blocked),
    /// The next message may not go out yet (quiet hours, WhatsApp's
    /// reach-out lock, the day's cap on first contacts): say why and until
    /// when on the conversation, and wait (the timer wakes it).
    Hold(Uuid, WaitReason, DateTime<Utc>),
    /// What held the next message is over (the follow-up goes).
    Release(Uuid),
    /// Ask WhatsApp whether its reach-out lock is in force (the answer
    /// wakes every actor).
    AskReachOut,
    /// A first contact starts: counted towards the day's cap, then the
    /// first turn.
    FirstContact(Uuid),
    /// WhatsApp refused the first message (463): back to CREATED, to wait
    /// for the lock's end like any first message.
    Restart(Uuid),
    /// A budget forbids the turn the conversation needs next: end it.
    Spent(Uuid, BudgetLimit, String),
}

/// Whether `live` does not say yet that it waits for the channel for `reason`.
fn blocked_anew(live: &ConversationRecord, reason: &crate::channel::Blocked) -> bool {
    live.channel_blocked.as_deref() != Some(reason.to_string().as_str())
}

/// Holds `live` for `reason` until `until`, unless it says so already.
fn hold(live: &ConversationRecord, reason: WaitReason, until: DateTime<Utc>) -> Option<Step> {
    (live.waiting_for != Some(reason) || live.next_send_at != Some(until)).then_some(Step::Hold(live.id, reason, until))
}

impl Actor {
    /// The conversation that holds the contact now, if any: the one a
    /// contact's message goes to. The rest are queued behind it.
    pub(super) fn holder(&self) -> Option<&Arc<ConversationRecord>> {
        self.convs.iter().find(|c| c.holds_contact())
    }

    pub(super) fn create(&mut self, mut instance: ConversationRecord) -> Result<CreateInstanceResponse, EngineError> {
        // Checked here, where the contact's events are taken one at a time:
        // an opt-out that arrives just before is seen.
        let listed = self.shared.opt_outs.get(&self.contact);
        match (&listed, instance.opt_out_override.as_deref()) {
            (Some(entry), None) => return Err(EngineError::OptedOut(Box::new(entry.clone()))),
            (Some(_), Some(reason)) => {
                self.shared.opt_outs.record_override(&self.contact, instance.id, reason)?;
                tracing::warn!(instance = %instance.id, "created for a number on the do-not-contact list (override)");
            }
            // Nothing to override.
            (None, _) => instance.opt_out_override = None,
        }
        if self.holder().is_some() {
            let event = Event::ContactHasActiveInstance;
            let target = fsm::next(instance.state, event, None)
                .map_err(|source| EngineError::Transition { id: instance.id, source })?;
            let to = fsm::resolve(instance.state, target, None);
            let (from, created_at) = (instance.state, instance.created_at);
            instance.history.push(entry(from, to, event, None, created_at));
            instance.state = to;
        }
        self.shared.store.save_instance(&instance)?;
        let instance = Arc::new(instance);
        self.shared.publish(&instance);
        tracing::info!(instance = %instance.id, state = %instance.state, "conversation created");
        let created = EventData::Created { state: instance.state, target_contact: instance.target_contact.clone() };
        self.shared.emit(instance.id, created);
        let response = CreateInstanceResponse::of(&instance);
        self.convs.push(instance);
        Ok(response)
    }

    /// Moves the conversations as far as they go on their own. Idempotent.
    pub(super) fn drive(&mut self) {
        if self.shared.stop.is_cancelled() {
            return; // nothing new starts during shutdown; the next start drives
        }
        self.expire_overdue();
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
                    self.update(id, |i| i.channel_blocked = Some(reason.to_string()))
                }
                Step::Hold(id, reason, until) => {
                    tracing::info!(instance = %id, reason = reason.as_str(), %until, "the next message waits");
                    self.update(id, |i| {
                        i.waiting_for = Some(reason);
                        i.next_send_at = Some(until);
                    })
                }
                Step::Release(id) => self.update(id, |i| {
                    i.waiting_for = None;
                    i.next_send_at = None;
                }),
                Step::AskReachOut => {
                    self.shared.ask_reach_out();
                    Ok(())
                }
                // Another contact's actor may have taken the last place
                // meanwhile: then the next step holds this one.
                Step::FirstContact(id) => match self.shared.start_first_contact() {
                    Ok(true) => self.transition(id, Event::AgentSendsFirstMessage, None, |_| {}).map(drop),
                    Ok(false) => Ok(()),
                    Err(error) => Err(EngineError::Store(error)),
                },
                Step::Restart(id) => {
                    let disclosure = self.shared.settings.courtesy.disclosure_line();
                    let reason = "WhatsApp refused the first message (error 463): it goes out again when WhatsApp \
                                  allows first messages";
                    self.transition(id, Event::FirstMessageRefused, Some(reason.into()), |i| {
                        i.first_message_refused = false;
                        i.awaiting_delivery = None;
                        i.follow_up_count = 0;
                        // Nothing reached the contact: the next first message says it again.
                        if i.pending_disclosure.is_none() {
                            i.pending_disclosure = disclosure;
                        }
                    })
                    .map(drop)
                }
                Step::Spent(id, limit, reason) => self.end_for_budget(id, limit, reason).map(drop),
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
        let Some(live) = self.holder() else {
            // FIFO: the oldest conversation still waiting in the queue.
            return self.convs.iter().find(|c| c.state == State::Queued).map(|c| Step::Promote(c.id));
        };
        let id = live.id;
        match live.state {
            State::Created => match self.first_message(live) {
                FirstMessage::Hold(reason, until) => hold(live, reason, until),
                FirstMessage::Go { first_contact: true } => Some(Step::FirstContact(id)),
                FirstMessage::Go { first_contact: false } => Some(Step::Transition(id, Event::AgentSendsFirstMessage)),
                FirstMessage::Ask => Some(Step::AskReachOut),
                FirstMessage::Block(reason) => blocked_anew(live, &reason).then_some(Step::Block(id, reason)),
                FirstMessage::Wait => None,
            },
            State::WaitingForReply if live.first_message_refused => Some(Step::Restart(id)),
            State::WaitingForAgent if self.reply_due.is_some_and(|due| due > Instant::now()) => None,
            // The reply answers the file too, once it is in.
            State::WaitingForAgent if self.fetching_for(id) => None,
            // Checked before the reply's turn is counted: no turn past the budget.
            State::WaitingForAgent => match crate::engine::budget::spent(live, false) {
                Some((limit, reason)) => Some(Step::Spent(id, limit, reason)),
                None => Some(Step::Transition(id, Event::AgentProcessesReply)),
            },
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
            // The contact may have written while relay was away: the catch-up's
            // end wakes it. Once they have written, it answers them.
            State::HeartbeatScheduled if live.unanswered_contact_messages == 0 && self.shared.channel.catching_up() => {
                None
            }
            State::HeartbeatScheduled if let Some((reason, until)) = self.follow_up_hold() => hold(live, reason, until),
            // The lock that held the follow-up is over: it goes now.
            State::HeartbeatScheduled if live.waiting_for.is_some() => Some(Step::Release(id)),
            // A turn the operator started (answer, resume), or one re-run
            // after a restart, is counted already: it runs only within the budget.
            State::Active | State::HeartbeatScheduled => match crate::engine::budget::spent(live, true) {
                Some((limit, reason)) => Some(Step::Spent(id, limit, reason)),
                None => self.turn_or_block(live),
            },
            _ => None,
        }
    }

    /// A turn, unless the channel cannot send (then the conversation waits,
    /// saying why). Without a model the turn runs anyway: it hands over to
    /// the operator at once, and that needs no channel.
    fn turn_or_block(&self, live: &ConversationRecord) -> Option<Step> {
        if let (Err(reason), Ok(())) = (self.shared.channel.ready(), self.shared.agent.ready()) {
            return blocked_anew(live, &reason).then_some(Step::Block(live.id, reason));
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
    fn turn_kind(&self, instance: &ConversationRecord) -> TurnKind {
        match instance.history.last().map(|t| t.trigger) {
            Some(Trigger::Event(Event::AgentSendsFirstMessage)) => TurnKind::FirstMessage,
            Some(Trigger::Event(Event::AgentProcessesReply)) => TurnKind::Reply,
            Some(Trigger::Event(Event::OperatorAnswers)) => TurnKind::Answered,
            _ => TurnKind::Resume,
        }
    }

    pub(super) fn inbound(&mut self, message: InboundMessage) -> InboundOutcome {
        if message.by_operator {
            return self.operator_wrote(message);
        }
        let Some(live) = self.holder() else {
            // An opt-out word ends the conversations queued for them too.
            if self.shared.keep_unrouted(message) {
                let reason = "the contact's message was an opt-out word".to_string();
                if let Err(error) = self.opt_out(crate::courtesy::OptOutSource::Contact, None, reason) {
                    tracing::error!(%error, "cannot record an opt-out");
                }
            }
            return InboundOutcome::NoConversation;
        };
        let (id, state) = (live.id, live.state);
        let reference = message.reference.clone();
        let act = message.act.as_ref().map(|act| Box::new(self.contact_act(id, act)));
        // A file is recorded at once as being fetched, under the next of
        // the conversation's references (m1, m2…), and its label is what
        // the model will read.
        let media = message.media.map(|media| {
            let record = media.pending(format!("m{}", live.media_received + 1));
            (media, record)
        });
        let text = match &media {
            Some((_, record)) => {
                crate::media::label::label(record, &crate::engine::media_label_context(&self.shared.settings))
            }
            None => message.text,
        };
        let recorded = TranscriptMessage {
            channel_message_id: message.reference.map(|r| r.id),
            media: media.as_ref().map(|(_, record)| Box::new(record.clone())),
            act: act.clone(),
            written_at: late(message.written_at),
            ..TranscriptMessage::new(id, Role::Contact, text)
        };
        // Recorded first: whatever happens next, the message is not lost.
        if let Err(error) = self.shared.store.append_message(&recorded) {
            tracing::error!(instance = %id, %error, "cannot record a contact message");
            return InboundOutcome::NotRecorded(error.to_string());
        }
        if let Some(act) = &act {
            self.withdraw(id, act, recorded.id);
        }
        self.unread.extend(reference);
        // They wrote again: a turn under way may answer that too.
        if let Some(running) = self.turn.as_mut().filter(|t| t.instance == id) {
            running.may_send = true;
        }
        tracing::info!(instance = %id, state = %state, "contact message received");
        let event = EventData::MessageIn {
            message_id: recorded.id,
            untrusted_contact_text: recorded.content.clone(),
            media: recorded.media.clone(),
            act: recorded.act.clone(),
        };
        self.shared.emit(id, event);
        // A reaction taken back is noted; it asks nothing of the agent.
        if !super::acts::prompts_a_turn(act.as_deref()) {
            return InboundOutcome::Delivered(id);
        }
        self.count_contact_message(id, state, &recorded, media.is_some());
        if let Some((media, record)) = media {
            self.fetch(recorded.clone(), media, record);
        }
        // A message that is only "STOP" (or another opt-out word) ends it
        // here, whatever the model would make of it.
        if crate::courtesy::is_opt_out(&recorded.content, &self.shared.settings.courtesy.opt_out_words) {
            let reason = "the contact's message was an opt-out word".to_string();
            if let Err(error) = self.opt_out(crate::courtesy::OptOutSource::Contact, Some(id), reason) {
                tracing::error!(instance = %id, %error, "cannot record an opt-out");
            }
        }
        InboundOutcome::Delivered(id)
    }

    /// A contact's message of conversation `id`, in `state`, counts
    /// ([`conversation::contact_wrote`]), and a reply to relay is answered
    /// after the reply window.
    fn count_contact_message(&mut self, id: Uuid, state: State, recorded: &TranscriptMessage, has_media: bool) {
        let message = ContactMessage {
            last: ContactText {
                message_id: recorded.id,
                at: recorded.written_at.unwrap_or(recorded.timestamp),
                untrusted_contact_text: recorded.content.clone(),
            },
            has_media,
            opts_out: crate::courtesy::is_opt_out(&recorded.content, &self.shared.settings.courtesy.opt_out_words),
            turn_may_start: self.shared.settings.reply_window.is_zero()
                && !self.fetching_for(id)
                && self.turn.is_none()
                && !self.shared.stop.is_cancelled(),
        };
        let saved = self.index(id).and_then(|index| {
            let step = conversation::contact_wrote(&self.convs[index], message, crate::clock::now())
                .map_err(|source| super::transitions::refused(id, source))?;
            self.run_step(id, step)
        });
        if matches!(state, State::WaitingForReply | State::WaitingForAgent) {
            // Several messages in quick succession get one answer.
            self.reply_due = Some(Instant::now() + self.shared.settings.reply_window);
        }
        if let Err(error) = saved {
            tracing::error!(instance = %id, %error, "cannot save a contact message's effect");
        }
    }
}

/// When a message was written, if it reached relay late (more than a
/// minute after: WhatsApp held it while relay was away).
fn late(written_at: Option<chrono::DateTime<chrono::Utc>>) -> Option<chrono::DateTime<chrono::Utc>> {
    let now = crate::clock::now();
    written_at.filter(|at| now - *at > chrono::Duration::minutes(1))
}
