//! The actor's side of [`crate::courtesy`]: what holds a first message
//! (quiet hours where the contact is), what an opt-out does (every
//! conversation of the contact ends, the number goes on the do-not-contact
//! list), and the list checked before every send. Follow-ups are moved out
//! of quiet hours where their deadline is set (`engine::heartbeat`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Actor;
use crate::api::{ConversationInstance, EndedBy, Outcome, WaitReason};
use crate::courtesy::{OptOut, OptOutSource};
use crate::engine::EngineError;
use crate::fsm::Event;

impl Actor {
    /// Why `instance`'s first message may not go out yet, and until when.
    pub(super) fn first_message_hold(&self, instance: &ConversationInstance) -> Option<(WaitReason, DateTime<Utc>)> {
        let now = crate::clock::now();
        let open = instance.contact_time.as_ref().map_or(now, |t| t.open_at(now));
        (open > now).then_some((WaitReason::QuietHours, open))
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
    ) -> Result<OptOut, EngineError> {
        let entry = OptOut {
            contact: self.contact.to_string(),
            since: crate::clock::now(),
            source,
            reason: reason.clone(),
            instance_id: asked_in,
            overrides: Vec::new(),
        };
        let listed = self.shared.opt_outs.add(entry)?;
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
        Ok(listed)
    }
}
