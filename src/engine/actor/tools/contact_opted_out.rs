//! `contact_opted_out`: the contact asked not to be written to again. The
//! model's word alone does not silence a number for good: the contact's own
//! words must ask to stop, or a person decides.

use uuid::Uuid;

use super::{refused, their_words};
use crate::agent::ToolError;
use crate::api::limits;
use crate::courtesy::OptOutSource;
use crate::engine::actor::Actor;
use crate::engine::bounded_text;

/// What an opt-out call comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OptOut {
    /// The contact's words ask to stop: the number is silenced.
    Taken,
    /// Unbacked, the first time in the turn: refused, and the turn goes on.
    RefusedOnce,
    /// Unbacked, and the model insists: a person decides.
    ToAPerson,
}

/// The rule: backed by the contact's words, taken; else refused once, then
/// handed to a person (nothing more is sent in this turn).
pub(super) fn decide(contact_asked_to_stop: bool, refused_before: bool) -> OptOut {
    match (contact_asked_to_stop, refused_before) {
        (true, _) => OptOut::Taken,
        (false, false) => OptOut::RefusedOnce,
        (false, true) => OptOut::ToAPerson,
    }
}

impl Actor {
    pub(super) fn contact_opted_out(&mut self, id: Uuid, reason: String) -> Result<String, ToolError> {
        let reason = bounded_text("reason", reason, limits::MAX_REASON_CHARS).map_err(refused)?;
        let refused_before = self.turn.as_ref().is_some_and(|t| t.opt_out_refused);
        match decide(self.contact_asked_to_stop(id), refused_before) {
            OptOut::RefusedOnce => {
                if let Some(running) = self.turn.as_mut() {
                    running.opt_out_refused = true;
                }
                let answered = self.turn.as_ref().map(|t| t.answering.clone()).unwrap_or_default();
                let theirs = their_words(&answered).map_or_else(String::new, |w| format!(" (they wrote {w})"));
                Err(ToolError(format!(
                    "not recorded: the contact's words do not ask to stop{theirs}. Go on with the objective. Only if \
                     they did ask not to be written to, call contact_opted_out again and a person will decide"
                )))
            }
            OptOut::ToAPerson => {
                tracing::info!(instance = %id, "the agent's opt-out has no backing in the contact's words; a person decides");
                let why = "the agent says the contact asked not to be written to again, but their words do not say \
                           so plainly: if they did, add the number with `relay optout add`; if not, answer or resume";
                self.hand_to_a_person(id, why.into(), Some(reason)).map_err(refused)?;
                Ok("the contact's words do not plainly ask to stop, so a person will decide; send nothing more and \
                    stop here."
                    .into())
            }
            OptOut::Taken => {
                // Its turn ends here; the opt-out ends the conversation.
                self.detach_turn();
                self.opt_out(OptOutSource::Contact, Some(id), reason).map_err(refused)?;
                Ok("the contact will not be written to again; the conversation is ended. Stop here.".into())
            }
        }
    }

    /// Whether the contact's messages this turn answers (else their latest)
    /// ask relay to stop writing ([`crate::courtesy::asks_to_stop`]).
    fn contact_asked_to_stop(&self, id: Uuid) -> bool {
        let words = &self.shared.settings.courtesy.opt_out_words;
        let answering = self.turn.as_ref().map(|t| t.answering.as_slice()).unwrap_or_default();
        let latest = self.index(id).ok().and_then(|at| self.convs[at].last_contact_message.as_ref());
        let said: Vec<&str> = if answering.is_empty() {
            latest.map(|m| m.untrusted_contact_text.as_str()).into_iter().collect()
        } else {
            answering.iter().map(|m| m.untrusted_contact_text.as_str()).collect()
        };
        said.iter().any(|text| crate::courtesy::asks_to_stop(text, words))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opt_out_is_taken_on_the_contacts_words_else_refused_once_then_a_person_decides() {
        assert_eq!(decide(true, false), OptOut::Taken);
        assert_eq!(decide(true, true), OptOut::Taken);
        assert_eq!(decide(false, false), OptOut::RefusedOnce);
        assert_eq!(decide(false, true), OptOut::ToAPerson);
    }
}
