//! A contact's message that acts on the chat: a reaction, a reply, an
//! edit or a deletion of an earlier message, a call. The message it acts on
//! is found by the channel's id, so the agent sees which of its messages
//! got the 👍; an edit or a deletion marks the message taken back, and any
//! answer that rests on it (`evidence[].changed`).

use uuid::Uuid;

use super::Actor;
use crate::api::{ActKind, ContactAct, EventData, Role, TranscriptMessage, Withdrawal};
use crate::channel::InboundAct;

impl Actor {
    /// `act` in conversation `id`, with the message it acts on as this
    /// transcript's id (none when relay does not have it).
    pub(super) fn contact_act(&self, id: Uuid, act: &InboundAct) -> ContactAct {
        let (kind, target) = match act {
            InboundAct::Reaction { to, removed: false } => (ActKind::Reaction, Some(to)),
            InboundAct::Reaction { to, removed: true } => (ActKind::ReactionRemoved, Some(to)),
            InboundAct::Reply { to } => (ActKind::Reply, Some(to)),
            InboundAct::Edit { of } => (ActKind::Edit, Some(of)),
            InboundAct::Deletion { of } => (ActKind::Deletion, Some(of)),
            InboundAct::Call => (ActKind::Call, None),
        };
        let found = target.and_then(|channel_id| self.message_by_channel_id(id, channel_id));
        // A contact edits and deletes only their own messages.
        let changes = matches!(kind, ActKind::Edit | ActKind::Deletion);
        let message_id = found.filter(|m| !changes || m.role == Role::Contact).map(|m| m.id);
        ContactAct { kind, message_id }
    }

    /// The message of conversation `id` the channel knows as `channel_id`.
    fn message_by_channel_id(&self, id: Uuid, channel_id: &str) -> Option<TranscriptMessage> {
        let transcript = self.shared.store.read_transcript(id).ok()?;
        transcript.into_iter().rev().find(|m| m.channel_message_id.as_deref() == Some(channel_id))
    }

    /// After an edit or a deletion (message `newest`) recorded in
    /// conversation `id`: the contact's message it changed, and its earlier
    /// edits, are marked taken back (their words back no answer any more),
    /// and so is every answer's evidence that rests on them.
    pub(super) fn withdraw(&mut self, id: Uuid, act: &ContactAct, newest: Uuid) {
        let how = match act.kind {
            ActKind::Edit => Withdrawal::Edited,
            ActKind::Deletion => Withdrawal::Deleted,
            _ => return,
        };
        let Some(target) = act.message_id else { return };
        let transcript = self.shared.store.read_transcript(id).unwrap_or_default();
        // Only the contact's own message, and a deleted one stays deleted.
        let theirs = |m: &&TranscriptMessage| m.id == target && m.role == Role::Contact;
        let Some(original) = transcript.iter().find(theirs) else { return };
        if original.withdrawn == Some(Withdrawal::Deleted) {
            return;
        }
        // WhatsApp names the original in every edit: the words of its earlier
        // edits are taken back too.
        let edits = transcript.iter().filter(|m| {
            m.id != newest
                && m.withdrawn != Some(Withdrawal::Deleted)
                && m.act.as_ref().is_some_and(|a| a.kind == ActKind::Edit && a.message_id == Some(target))
        });
        let taken_back: Vec<TranscriptMessage> = std::iter::once(original)
            .chain(edits)
            .map(|m| TranscriptMessage { withdrawn: Some(how), ..m.clone() })
            .collect();
        let ids: Vec<uuid::Uuid> = taken_back.iter().map(|m| m.id).collect();
        for marked in taken_back {
            if let Err(error) = self.shared.store.append_message(&marked) {
                tracing::error!(instance = %id, %error, "cannot mark a message the contact took back");
            }
        }
        // A turn under way no longer answers them: a mark resting on one is refused.
        if let Some(running) = self.turn.as_mut().filter(|t| t.instance == id) {
            running.answering.retain(|m| !ids.contains(&m.message_id));
        }
        let rests_on_it = |i: &crate::store::ConversationRecord| {
            i.todos.iter().any(|t| t.evidence.iter().any(|e| ids.contains(&e.message_id)))
        };
        let Ok(at) = self.index(id) else { return };
        if !rests_on_it(&self.convs[at]) {
            return;
        }
        let changed = self.update(id, |i| {
            let evidence = i.todos.iter_mut().flat_map(|t| t.evidence.iter_mut());
            evidence.filter(|e| ids.contains(&e.message_id)).for_each(|e| e.changed = Some(how));
        });
        if let Err(error) = changed {
            tracing::error!(instance = %id, %error, "cannot mark an answer's changed evidence");
            return;
        }
        let todos = self.convs[at].todos.iter().filter(|t| t.evidence.iter().any(|e| ids.contains(&e.message_id)));
        let events: Vec<EventData> = todos.map(EventData::todo).collect();
        events.into_iter().for_each(|event| self.shared.emit(id, event));
    }
}

/// Whether a contact's act asks for an answer: all but a reaction taken back.
pub(super) fn prompts_a_turn(act: Option<&ContactAct>) -> bool {
    act.is_none_or(|a| a.kind != ActKind::ReactionRemoved)
}
