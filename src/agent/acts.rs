//! How a contact's act reads to the model: a reaction with the message it
//! reacts to ("[reacted 👍 to your message "Is Friday OK?"]"), a reply with
//! what it quotes, an edit or a deletion with what it changed (and which
//! answer rested on it), a call; and a message the contact later took back.
//! The quoted words are shown, never stored in the contact's message: its
//! `content` keeps only what they wrote, so no answer can cite relay's own
//! words as theirs.

use std::collections::HashMap;

use uuid::Uuid;

use crate::api::{ActKind, Role, TodoItem, TranscriptMessage, Withdrawal};

/// The longest piece of a message an act quotes.
const QUOTED_CHARS: usize = 120;

/// The contact's message as the model reads it: its words, with what it
/// did to the chat before them and, if they took it back, a note after.
pub fn contact_message(
    message: &TranscriptMessage,
    words: &str,
    by_id: &HashMap<Uuid, &TranscriptMessage>,
    todos: &[TodoItem],
) -> String {
    let mut text = match &message.act {
        None => words.to_string(),
        Some(act) => {
            let target = act.message_id.and_then(|id| by_id.get(&id).copied());
            let what = target.map_or_else(|| "a message relay does not have".to_string(), quoted);
            let rested = act.message_id.map(|id| answers_resting_on(id, todos)).unwrap_or_default();
            match act.kind {
                ActKind::Reaction => format!("[reacted {words} to {what}]"),
                ActKind::ReactionRemoved => format!("[took back their reaction to {what}]"),
                ActKind::Reply => format!("[replying to {what}] {words}"),
                ActKind::Edit => format!("[edited {what}{rested}; it now reads:] {words}"),
                ActKind::Deletion => format!("[deleted {what}{rested}]"),
                ActKind::Call => "[called you; calls are not answered here: write to them]".to_string(),
            }
        }
    };
    match message.withdrawn {
        Some(Withdrawal::Edited) => text.push_str("\n[they later edited this message]"),
        Some(Withdrawal::Deleted) => text.push_str("\n[they later deleted this message]"),
        None => {}
    }
    text
}

/// "your message "..."" or "their message "..."", cut short.
fn quoted(target: &TranscriptMessage) -> String {
    let whose = match target.role {
        Role::Contact => "their",
        Role::Agent | Role::Manual | Role::System => "your",
    };
    let mut words: String = target.content.chars().take(QUOTED_CHARS).collect();
    if target.content.chars().count() > QUOTED_CHARS {
        words.push('…');
    }
    format!("{whose} message {words:?}")
}

/// ", which todo 1's answer rested on" when answers rest on message `id`.
fn answers_resting_on(id: Uuid, todos: &[TodoItem]) -> String {
    let ids: Vec<&str> =
        todos.iter().filter(|t| t.evidence.iter().any(|e| e.message_id == id)).map(|t| t.id.as_str()).collect();
    match ids.as_slice() {
        [] => String::new(),
        [one] => format!(", which todo {one}'s answer rested on: check it with them"),
        many => format!(", which the answers of todos {} rested on: check them with them", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ContactAct;

    fn message(role: Role, content: &str) -> TranscriptMessage {
        TranscriptMessage::new(Uuid::nil(), role, content.into())
    }

    fn acting(kind: ActKind, on: Option<&TranscriptMessage>, words: &str) -> TranscriptMessage {
        let act = ContactAct { kind, message_id: on.map(|m| m.id) };
        TranscriptMessage { act: Some(Box::new(act)), ..message(Role::Contact, words) }
    }

    #[test]
    fn each_act_reads_with_the_message_it_acts_on() {
        let asked = message(Role::Agent, "Is Friday OK?");
        let said = message(Role::Contact, "Friday works");
        let by_id: HashMap<Uuid, &TranscriptMessage> = [(asked.id, &asked), (said.id, &said)].into();
        let todo = TodoItem {
            id: "1".into(),
            text: "Ask the day".into(),
            status: crate::api::TodoStatus::Completed,
            answer: Some("Friday".into()),
            answer_message_ids: vec![said.id],
            answer_schema: None,
            value: None,
            evidence: vec![crate::api::Evidence {
                message_id: said.id,
                untrusted_contact_text: "Friday".into(),
                media: None,
                changed: Some(Withdrawal::Edited),
            }],
            check: None,
        };
        let read = |m: &TranscriptMessage| contact_message(m, &m.content, &by_id, std::slice::from_ref(&todo));
        assert_eq!(
            read(&acting(ActKind::Reaction, Some(&asked), "👍")),
            "[reacted 👍 to your message \"Is Friday OK?\"]"
        );
        assert_eq!(
            read(&acting(ActKind::Reply, Some(&asked), "Yes")),
            "[replying to your message \"Is Friday OK?\"] Yes"
        );
        assert_eq!(
            read(&acting(ActKind::Edit, Some(&said), "Saturday works")),
            "[edited their message \"Friday works\", which todo 1's answer rested on: check it with them; it now reads:] Saturday works"
        );
        assert_eq!(read(&acting(ActKind::Deletion, None, "")), "[deleted a message relay does not have]");
        let taken_back = TranscriptMessage { withdrawn: Some(Withdrawal::Deleted), ..said.clone() };
        assert_eq!(read(&taken_back), "Friday works\n[they later deleted this message]");
    }
}
