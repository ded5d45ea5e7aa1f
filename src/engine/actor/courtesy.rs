//! The actor's side of [`crate::courtesy`]: what holds a first message
//! (quiet hours where the contact is), what an opt-out does (every
//! conversation of the contact ends, the number goes on the do-not-contact
//! list), and the list checked before every send. Follow-ups are moved out
//! of quiet hours where their deadline is set (`engine::heartbeat`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Actor;
use crate::api::{EndedBy, OptOutAdded, Outcome, WaitReason};
use crate::courtesy::first_contact::{Gate, Hold};
use crate::courtesy::{OptOut, OptOutSource};
use crate::engine::EngineError;
use crate::fsm::Event;
use crate::store::ConversationRecord;

/// What may happen to a conversation's first message now.
pub(super) enum FirstMessage {
    /// It may start; `first_contact` when it is a first contact (it counts
    /// towards the day's cap).
    Go { first_contact: bool },
    /// It waits, for this reason, until then (the timer looks again).
    Hold(WaitReason, DateTime<Utc>),
    /// WhatsApp must be asked first whether its reach-out lock is in force.
    Ask,
    /// The channel cannot even be asked: the conversation waits for it.
    Block(crate::channel::Blocked),
    /// A question to WhatsApp, or its catch-up, is under way; its end
    /// wakes the actor.
    Wait,
}

impl Actor {
    /// Whether `instance`'s first message may go out now: not before its
    /// start time, not in the contact's quiet hours (unless they just
    /// wrote), and for a new contact (a number relay has never reached nor
    /// heard from), not while WhatsApp's reach-out lock holds, nor past the
    /// day's cap on first contacts.
    pub(super) fn first_message(&self, instance: &ConversationRecord) -> FirstMessage {
        let now = crate::clock::now();
        // Asked to start later: nothing else is looked at (nor WhatsApp
        // asked, nor the cap counted) before then.
        if let Some(at) = instance.start_at.filter(|at| *at > now) {
            return FirstMessage::Hold(WaitReason::StartAt, at);
        }
        // Without a model the turn sends nothing: it hands over at once,
        // and the operator's own messages are theirs to send, at any hour,
        // but for WhatsApp's lock on first messages, which would refuse them.
        if self.shared.agent.ready().is_err() {
            return match self.shared.locked_for(&self.contact) {
                Some(until) => FirstMessage::Hold(WaitReason::ReachOutLock, until),
                None => FirstMessage::Go { first_contact: false },
            };
        }
        let open = instance.contact_time.as_ref().map_or(now, |t| t.open_at(now));
        // To someone who just wrote, the first message is a reply.
        if open > now && !self.shared.just_wrote(&self.contact) {
            return FirstMessage::Hold(WaitReason::QuietHours, open);
        }
        // The contact may have written while relay was away: it waits to see.
        if self.shared.channel.catching_up() && !self.shared.just_wrote(&self.contact) {
            return FirstMessage::Wait;
        }
        match self.shared.first_contact_gate(&self.contact) {
            None => FirstMessage::Go { first_contact: false },
            Some(Gate::Go) => FirstMessage::Go { first_contact: true },
            Some(Gate::Hold(Hold::Lock, until)) => FirstMessage::Hold(WaitReason::ReachOutLock, until),
            Some(Gate::Hold(Hold::Cap, until)) => FirstMessage::Hold(WaitReason::NewContactCap, until),
            Some(Gate::Ask) if self.shared.asking_reach_out() => FirstMessage::Wait,
            Some(Gate::Ask) => match self.shared.channel.ready() {
                Ok(()) => FirstMessage::Ask,
                Err(reason) => FirstMessage::Block(reason),
            },
        }
    }

    /// A catch-up cut short (see `channel::catch_up`): each conversation
    /// that was live during its span is marked, so its report says what it
    /// may lack. Once per span.
    pub(super) fn mark_missed_span(&mut self) {
        let Some(span) = self.shared.channel.missed_span() else { return };
        let marked: Vec<Uuid> = self
            .convs
            .iter()
            .filter(|c| !c.state.is_terminal() && c.created_at < span.to && c.messages_may_be_missing != Some(span))
            .map(|c| c.id)
            .collect();
        for id in marked {
            tracing::warn!(instance = %id, "messages of the contact may be missing: WhatsApp's catch-up did not finish");
            if let Err(error) = self.update(id, |i| i.messages_may_be_missing = Some(span)) {
                tracing::error!(instance = %id, %error, "cannot mark a conversation's missing messages");
            }
        }
    }

    /// Why a follow-up to `instance`'s contact may not go out yet: the
    /// contact is still new (nothing reached them) and WhatsApp's lock
    /// holds. Replies are never held: whoever wrote is not new.
    pub(super) fn follow_up_hold(&self) -> Option<(WaitReason, DateTime<Utc>)> {
        self.shared.locked_for(&self.contact).map(|until| (WaitReason::ReachOutLock, until))
    }

    /// WhatsApp refused a message of conversation `id` with error 463 (the
    /// account-wide lock is set where the update arrives, see
    /// `engine::delivery`): if nothing of this conversation has reached its
    /// contact, it starts again once the lock ends.
    pub(in crate::engine) fn first_message_refused(&mut self, id: Uuid) {
        let Ok(index) = self.index(id) else { return };
        let instance = &self.convs[index];
        let new = self.shared.first_contacts.read(|b| b.is_new(self.contact.as_str()));
        if new
            && !instance.reached_contact()
            && let Err(error) = self.update(id, |i| i.first_message_refused = true)
        {
            tracing::error!(instance = %id, %error, "cannot record a refused first message");
        }
    }

    /// The do-not-contact entry that forbids writing to this contact in
    /// conversation `id`, if any: a conversation created with
    /// `--override-opt-out` may write.
    pub(super) fn forbidden(&self, id: Uuid) -> Option<OptOut> {
        let overridden = self.index(id).ok().is_some_and(|i| self.convs[i].opt_out_override.is_some());
        self.shared.opt_outs.get(&self.contact).filter(|_| !overridden)
    }

    /// The contact asked not to be contacted (or the operator listed the
    /// number): it goes on the list, and every conversation with them ends,
    /// the live one and those queued. `asked_in` is the conversation in
    /// which the contact asked.
    pub(super) fn opt_out(
        &mut self,
        source: OptOutSource,
        asked_in: Option<Uuid>,
        reason: String,
    ) -> Result<OptOutAdded, EngineError> {
        let entry = OptOut::new(self.contact.to_string(), source, reason.clone(), asked_in);
        let (listed, added) = self.shared.opt_outs.add(entry)?;
        tracing::info!(contact = %self.contact, ?source, "the number is on the do-not-contact list");
        let (ended_by, summary) = match source {
            OptOutSource::Contact => {
                (EndedBy::Contact, "The contact asked not to be contacted; relay will not write to this number again.")
            }
            OptOutSource::Operator => (
                EndedBy::Operator,
                "The operator put the number on the do-not-contact list; relay will not write to it again.",
            ),
        };
        let ids: Vec<Uuid> = self.convs.iter().map(|c| c.id).collect();
        for id in ids {
            self.abort_turn_of(id);
            self.transition(id, Event::OptedOut, Some(reason.clone()), |i| {
                i.outcome = Some(Outcome::OptedOut);
                i.ended_by = Some(ended_by);
                i.summary = Some(summary.to_string());
            })?;
        }
        Ok(OptOutAdded { opt_out: listed, added })
    }
}
