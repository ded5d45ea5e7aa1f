//! What a WhatsApp message does to the chat besides writing: a reaction
//! (with the message it reacts to), an edit or a deletion of an earlier
//! message (WhatsApp sends them as protocol messages naming the message by
//! its key), and a reply that quotes a message (its `context_info`).

use whatsapp_rust::prelude::*;

use crate::channel::InboundAct;

/// A reaction, an edit or a deletion, with the words the message carries
/// then (the emoji, the new text; none for a deletion); `None` for anything
/// else (a reply is [`replied_to`]).
pub fn act_of(message: &wa::Message) -> Option<(InboundAct, String)> {
    use wa::message::protocol_message::Type;
    let base = message.get_base_message();
    if let Some(reaction) = base.reaction_message.as_option() {
        let to = reaction.key.as_option()?.id.clone()?;
        let emoji = reaction.text.clone().unwrap_or_default();
        return Some((InboundAct::Reaction { to, removed: emoji.is_empty() }, emoji));
    }
    let protocol = base.protocol_message.as_option()?;
    let of = protocol.key.as_option()?.id.clone()?;
    match protocol.r#type {
        Some(Type::MESSAGE_EDIT) => {
            let edited = protocol.edited_message.as_option();
            let text = edited.and_then(|m| m.text_content().map(str::to_string).or_else(|| caption_of(m)));
            Some((InboundAct::Edit { of }, text.unwrap_or_default()))
        }
        Some(Type::REVOKE) => Some((InboundAct::Deletion { of }, String::new())),
        _ => None,
    }
}

/// An edited file's new caption.
fn caption_of(message: &wa::Message) -> Option<String> {
    let base = message.get_base_message();
    let image = base.image_message.as_option().and_then(|m| m.caption.clone());
    let video = || base.video_message.as_option().and_then(|m| m.caption.clone());
    let document = || base.document_message.as_option().and_then(|m| m.caption.clone());
    image.or_else(video).or_else(document)
}

/// A contact's call: who called (their number when WhatsApp gives it beside
/// a LID) and the call's id; `None` for anything but the offer of a 1:1
/// call, or one the operator's own account made.
pub fn call_from(event: &Event) -> Option<(Jid, String)> {
    use whatsapp_rust::types::call::CallAction;
    match event {
        Event::IncomingCall(call) => match &call.action {
            CallAction::Offer { call_id, caller_pn, group_jid: None, .. } if call.group.is_none() => {
                Some((caller_pn.clone().unwrap_or_else(|| call.from.clone()), call_id.clone()))
            }
            _ => None,
        },
        Event::MissedCall(missed) => Some((missed.from.clone(), missed.call_id.clone())),
        _ => None,
    }
}

/// The id of the message a message quotes, when it is a reply.
pub fn replied_to(message: &wa::Message) -> Option<String> {
    let base = message.get_base_message();
    let context = base
        .extended_text_message
        .as_option()
        .and_then(|m| m.context_info.as_option())
        .or_else(|| base.image_message.as_option().and_then(|m| m.context_info.as_option()))
        .or_else(|| base.video_message.as_option().and_then(|m| m.context_info.as_option()))
        .or_else(|| base.audio_message.as_option().and_then(|m| m.context_info.as_option()))
        .or_else(|| base.document_message.as_option().and_then(|m| m.context_info.as_option()));
    context?.stanza_id.clone().filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use whatsapp_rust::buffa::MessageField;

    fn key(id: &str) -> MessageField<wa::MessageKey> {
        MessageField::some(wa::MessageKey { id: Some(id.into()), ..Default::default() })
    }

    /// As a phone sends them: a reaction names the message by its key, and
    /// an empty reaction takes it back.
    #[test]
    fn a_reaction_names_the_message_it_reacts_to() {
        let reaction = |text: &str| wa::Message {
            reaction_message: MessageField::some(wa::message::ReactionMessage {
                key: key("3EB0RELAY1"),
                text: Some(text.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            act_of(&reaction("👍")),
            Some((InboundAct::Reaction { to: "3EB0RELAY1".into(), removed: false }, "👍".into()))
        );
        assert_eq!(
            act_of(&reaction("")),
            Some((InboundAct::Reaction { to: "3EB0RELAY1".into(), removed: true }, "".into()))
        );
    }

    /// An edit carries the new text and the key of the message it edits; a
    /// deletion only the key.
    #[test]
    fn edits_and_deletions_name_the_message_they_change() {
        use wa::message::protocol_message::Type;
        let protocol = |kind: Type, edited: Option<wa::Message>| wa::Message {
            protocol_message: MessageField::some(wa::message::ProtocolMessage {
                key: key("3EB0THEIRS"),
                r#type: Some(kind),
                edited_message: edited.map_or_else(MessageField::none, MessageField::some),
                ..Default::default()
            }),
            ..Default::default()
        };
        let edit = protocol(Type::MESSAGE_EDIT, Some(wa::Message::text("Saturday works")));
        assert_eq!(act_of(&edit), Some((InboundAct::Edit { of: "3EB0THEIRS".into() }, "Saturday works".into())));
        let deletion = protocol(Type::REVOKE, None);
        assert_eq!(act_of(&deletion), Some((InboundAct::Deletion { of: "3EB0THEIRS".into() }, String::new())));
        assert_eq!(act_of(&protocol(Type::EPHEMERAL_SETTING, None)), None, "other protocol messages are no act");
        assert_eq!(act_of(&wa::Message::text("hi")), None);
    }

    /// A 1:1 call's offer, or one missed while relay was offline, names the
    /// caller (their number when given beside a LID); a group call does not.
    #[test]
    fn a_call_names_the_caller() {
        use whatsapp_rust::types::call::{CallAction, IncomingCall, MissedCall, MissedReason};
        let offer = |group_jid: Option<Jid>| {
            let action = CallAction::Offer {
                call_id: "CALL1".into(),
                call_creator: Jid::lid("1234"),
                caller_pn: Some(Jid::pn("56912345678")),
                caller_country_code: None,
                device_class: None,
                joinable: false,
                is_video: false,
                audio: Vec::new(),
                group_jid,
            };
            let call = IncomingCall::builder()
                .from(Jid::lid("1234"))
                .stanza_id("S1".into())
                .timestamp(chrono::Utc::now())
                .offline(false)
                .action(action)
                .build();
            Event::IncomingCall(call)
        };
        assert_eq!(call_from(&offer(None)), Some((Jid::pn("56912345678"), "CALL1".into())));
        assert_eq!(call_from(&offer(Some("120363025246125888@g.us".parse().unwrap()))), None, "a group call");
        let missed = MissedCall::new(Jid::pn("56912345678"), "CALL2".into(), chrono::Utc::now(), MissedReason::Offline);
        assert_eq!(call_from(&Event::MissedCall(missed)), Some((Jid::pn("56912345678"), "CALL2".into())));
    }

    /// A reply quotes a message by its id in `context_info`.
    #[test]
    fn a_reply_names_the_message_it_quotes() {
        let reply = wa::Message {
            extended_text_message: MessageField::some(wa::message::ExtendedTextMessage {
                text: Some("Yes".into()),
                context_info: MessageField::some(wa::ContextInfo {
                    stanza_id: Some("3EB0RELAY2".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(replied_to(&reply), Some("3EB0RELAY2".into()));
        assert_eq!(replied_to(&wa::Message::text("Yes")), None);
    }
}
