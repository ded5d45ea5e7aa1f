//! What relay takes from WhatsApp's incoming messages, and what it ignores.
//!
//! relay talks 1:1 with the contacts of its conversations, so it ignores
//! its own messages (sent from the phone or another linked device), groups,
//! status updates, broadcast lists and newsletters. Media without text
//! becomes a short placeholder (`[image]`, `[voice note] caption`), so the
//! agent knows something arrived. Contact text is data, never instructions:
//! it is passed on as it is, and the agent's prompt treats it as such.

use whatsapp_rust::prelude::*;
use whatsapp_rust::wacore_binary::jid::JidExt;

use super::jid;
use crate::contact::Contact;

/// Who wrote: a phone number, or a LID still to be looked up.
#[derive(Debug, Clone, PartialEq)]
pub enum Sender {
    Phone(Contact),
    Lid(Jid),
}

/// An incoming message relay takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    pub sender: Sender,
    pub text: String,
    /// WhatsApp's id of the message, and its chat (for the read receipt).
    pub id: String,
    pub chat: Jid,
}

/// What relay does with one incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Routed {
    Take(Incoming),
    /// Not for relay; the reason is logged.
    Ignore(&'static str),
}

pub fn route(message: &wa::Message, info: &MessageInfo) -> Routed {
    let source = &info.source;
    if source.is_from_me {
        return Routed::Ignore("sent by this account");
    }
    if source.is_group || source.chat.is_group() {
        return Routed::Ignore("group message");
    }
    if source.chat.is_status_broadcast() {
        return Routed::Ignore("status update");
    }
    if source.chat.is_broadcast_list() {
        return Routed::Ignore("broadcast list");
    }
    if source.chat.is_newsletter() {
        return Routed::Ignore("newsletter");
    }
    let Some(text) = text_of(message) else {
        return Routed::Ignore("no text and no media relay knows (a protocol message, an edit, a call...)");
    };
    let Some(sender) = sender_of(source) else {
        return Routed::Ignore("the sender is neither a phone number nor a LID");
    };
    Routed::Take(Incoming { sender, text, id: info.id.to_string(), chat: source.chat.clone() })
}

/// The sender as a phone number when the message says which: the sender
/// itself, or its alternate address (`sender_alt`, WhatsApp's `sender_pn`).
fn sender_of(source: &whatsapp_rust::types::message::MessageSource) -> Option<Sender> {
    if let Some(contact) = jid::contact_of(&source.sender) {
        return Some(Sender::Phone(contact));
    }
    if let Some(contact) = source.sender_alt.as_ref().and_then(jid::contact_of) {
        return Some(Sender::Phone(contact));
    }
    source.sender.is_lid().then(|| Sender::Lid(source.sender.to_non_ad()))
}

/// The text of a message, or a placeholder for media (with its caption).
pub fn text_of(message: &wa::Message) -> Option<String> {
    if let Some(text) = message.text_content().filter(|t| !t.trim().is_empty()) {
        return Some(text.to_string());
    }
    let base = message.get_base_message();
    let caption = message.get_caption().filter(|c| !c.trim().is_empty());
    let placeholder = if base.image_message.as_option().is_some() {
        "[image]".to_string()
    } else if base.video_message.as_option().is_some() || base.ptv_message.as_option().is_some() {
        "[video]".to_string()
    } else if let Some(audio) = base.audio_message.as_option() {
        if audio.ptt == Some(true) { "[voice note]" } else { "[audio]" }.to_string()
    } else if let Some(document) = base.document_message.as_option() {
        match document.file_name.as_deref() {
            Some(name) => format!("[document: {name}]"),
            None => "[document]".to_string(),
        }
    } else if base.sticker_message.as_option().is_some() {
        "[sticker]".to_string()
    } else if base.location_message.as_option().is_some() || base.live_location_message.as_option().is_some() {
        "[location]".to_string()
    } else if base.contact_message.as_option().is_some() || base.contacts_array_message.as_option().is_some() {
        "[contact card]".to_string()
    } else if let Some(reaction) = base.reaction_message.as_option() {
        match reaction.text.as_deref().filter(|t| !t.is_empty()) {
            Some(emoji) => format!("[reaction: {emoji}]"),
            None => return None, // a reaction taken back
        }
    } else {
        return None;
    };
    Some(match caption {
        Some(caption) => format!("{placeholder} {caption}"),
        None => placeholder,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use whatsapp_rust::types::message::MessageSource;

    pub(crate) const NUMBER: &str = "56912345678";
    pub(crate) const LID: &str = "184467440737095";

    pub(crate) fn info(sender: Jid, sender_alt: Option<Jid>) -> MessageInfo {
        MessageInfo {
            source: MessageSource { chat: sender.to_non_ad(), sender, sender_alt, ..Default::default() },
            id: "3EB0C0FFEE".into(),
            ..Default::default()
        }
    }

    /// An incoming batch as whatsapp-rust delivers it.
    pub(crate) fn batch(message: wa::Message, info: MessageInfo) -> Event {
        let inbound = InboundMessage::builder().message(Arc::new(message)).info(Arc::new(info)).build();
        Event::Messages(MessageBatch::builder().messages(Arc::from(vec![inbound])).origin(BatchOrigin::Live).build())
    }

    fn taken(routed: Routed) -> Incoming {
        match routed {
            Routed::Take(incoming) => incoming,
            Routed::Ignore(why) => panic!("ignored: {why}"),
        }
    }

    fn contact() -> Contact {
        Contact::parse(&format!("+{NUMBER}")).unwrap()
    }

    #[test]
    fn plain_text_from_a_phone_number() {
        let incoming = taken(route(&wa::Message::text("hola"), &info(Jid::pn(NUMBER), None)));
        assert_eq!(incoming.sender, Sender::Phone(contact()));
        assert_eq!(incoming.text, "hola");
        assert_eq!(incoming.id, "3EB0C0FFEE");
        assert_eq!(incoming.chat, Jid::pn(NUMBER));
    }

    #[test]
    fn extended_text_is_text() {
        let message = wa::Message {
            extended_text_message: MessageField::some(wa::message::ExtendedTextMessage {
                text: Some("see https://example.com".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(taken(route(&message, &info(Jid::pn(NUMBER), None))).text, "see https://example.com");
    }

    #[test]
    fn a_lid_sender_with_its_phone_number_alongside_is_that_contact() {
        let incoming = taken(route(&wa::Message::text("hi"), &info(Jid::lid(LID), Some(Jid::pn(NUMBER)))));
        assert_eq!(incoming.sender, Sender::Phone(contact()));
        assert_eq!(incoming.chat, Jid::lid(LID), "the read receipt goes to the chat as addressed");
    }

    #[test]
    fn a_lid_sender_alone_is_left_for_the_lookup() {
        let incoming = taken(route(&wa::Message::text("hi"), &info(Jid::lid(LID), None)));
        assert_eq!(incoming.sender, Sender::Lid(Jid::lid(LID)));
    }

    #[test]
    fn own_group_status_broadcast_and_newsletter_messages_are_ignored() {
        let text = wa::Message::text("hi");
        let mut own = info(Jid::pn(NUMBER), None);
        own.source.is_from_me = true;
        assert_eq!(route(&text, &own), Routed::Ignore("sent by this account"));

        let mut group = info(Jid::pn(NUMBER), None);
        group.source.chat = "120363025246125888@g.us".parse().unwrap();
        group.source.is_group = true;
        assert_eq!(route(&text, &group), Routed::Ignore("group message"));

        let mut status = info(Jid::pn(NUMBER), None);
        status.source.chat = "status@broadcast".parse().unwrap();
        assert_eq!(route(&text, &status), Routed::Ignore("status update"));

        let mut newsletter = info(Jid::pn(NUMBER), None);
        newsletter.source.chat = "120363144038483540@newsletter".parse().unwrap();
        assert_eq!(route(&text, &newsletter), Routed::Ignore("newsletter"));
    }

    #[test]
    fn media_becomes_a_placeholder_with_its_caption() {
        let image = wa::Message {
            image_message: MessageField::some(wa::message::ImageMessage {
                caption: Some("the box".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(text_of(&image).unwrap(), "[image] the box");

        let voice = wa::Message {
            audio_message: MessageField::some(wa::message::AudioMessage { ptt: Some(true), ..Default::default() }),
            ..Default::default()
        };
        assert_eq!(text_of(&voice).unwrap(), "[voice note]");

        let document = wa::Message {
            document_message: MessageField::some(wa::message::DocumentMessage {
                file_name: Some("invoice.pdf".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(text_of(&document).unwrap(), "[document: invoice.pdf]");

        let sticker = wa::Message {
            sticker_message: MessageField::some(wa::message::StickerMessage::default()),
            ..Default::default()
        };
        assert_eq!(taken(route(&sticker, &info(Jid::pn(NUMBER), None))).text, "[sticker]");
    }

    #[test]
    fn a_message_with_nothing_to_read_is_ignored() {
        assert!(matches!(route(&wa::Message::default(), &info(Jid::pn(NUMBER), None)), Routed::Ignore(_)));
    }
}
