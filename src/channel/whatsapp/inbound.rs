//! What relay takes from WhatsApp's incoming messages, and what it ignores.
//!
//! relay talks 1:1 with the contacts of its conversations, so it ignores
//! groups, status updates, broadcast lists and newsletters. relay is one
//! linked device of the operator's number: what the operator writes to a
//! contact on another of its devices (the phone, WhatsApp Desktop) comes
//! here too, and is taken as the operator's (`by_operator`), with the
//! contact the chat is with; a note to self is ignored. A photo, voice note,
//! video or file comes with what its message says of it and how to fetch it
//! ([`media_of`]); the engine fetches it later. A location, contact card or
//! reaction becomes a short placeholder (`[location]`), so the agent knows
//! something arrived. Contact text (captions and file names too) is data,
//! never instructions: it is passed on as it is, and the engine labels it.

use whatsapp_rust::download::{Downloadable, MediaType};
use whatsapp_rust::prelude::*;
use whatsapp_rust::wacore_binary::jid::JidExt;

use super::jid;
use crate::api::MediaKind;
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
    /// The text; for media, its caption (or nothing).
    pub text: String,
    /// Boxed: most messages are text.
    pub media: Option<Box<Media>>,
    /// WhatsApp's id of the message, and its chat (for the read receipt).
    pub id: String,
    pub chat: Jid,
    /// The operator wrote it on another device of the account, to `sender`.
    pub by_operator: bool,
    /// A reaction, a reply, an edit or a deletion ([`super::acts`]).
    pub act: Option<crate::channel::InboundAct>,
    /// When it was written, as WhatsApp says (it may reach relay later).
    pub written_at: Option<chrono::DateTime<chrono::Utc>>,
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
    // The account's own message to someone else: the operator writing on another device.
    let by_operator = source.is_from_me;
    if by_operator && source.recipient.is_none() {
        return Routed::Ignore("sent by this account to itself");
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
    let sender = if by_operator { contact_of_chat(info) } else { sender_of(source) };
    let Some(sender) = sender else {
        return Routed::Ignore("the sender is neither a phone number nor a LID");
    };
    let (id, chat, written_at) = (info.id.to_string(), source.chat.clone(), Some(info.timestamp));
    if let Some((act, text)) = super::acts::act_of(message) {
        // The operator's reactions and edits on their phone are not writing to the contact.
        if by_operator {
            return Routed::Ignore("the operator's own reaction, edit or deletion");
        }
        let act = Some(act);
        return Routed::Take(Incoming { sender, text, media: None, id, chat, by_operator, act, written_at });
    }
    let media = media_of(message).map(Box::new);
    let text = match &media {
        Some(media) => Some(media.declared.caption.clone().unwrap_or_default()),
        None => text_of(message),
    };
    let Some(text) = text else {
        return Routed::Ignore("no text and no media relay knows (a protocol message, a poll...)");
    };
    let act = super::acts::replied_to(message).map(|to| crate::channel::InboundAct::Reply { to });
    Routed::Take(Incoming { sender, text, media, id, chat, by_operator, act, written_at })
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

/// Whom the operator wrote to: the contact the 1:1 chat is with (its phone
/// number, the one the envelope names beside a LID, or the LID to look up).
fn contact_of_chat(info: &MessageInfo) -> Option<Sender> {
    let chat = &info.source.chat;
    if let Some(contact) = jid::contact_of(chat).or_else(|| info.peer_recipient_pn.as_ref().and_then(jid::contact_of)) {
        return Some(Sender::Phone(contact));
    }
    chat.is_lid().then(|| Sender::Lid(chat.to_non_ad()))
}

/// The text of a message, or a placeholder for what relay does not fetch
/// (a location, a contact card). Media is [`media_of`]'s.
pub fn text_of(message: &wa::Message) -> Option<String> {
    if let Some(text) = message.text_content().filter(|t| !t.trim().is_empty()) {
        return Some(text.to_string());
    }
    let base = message.get_base_message();
    if base.location_message.as_option().is_some() || base.live_location_message.as_option().is_some() {
        Some("[location]".to_string())
    } else if base.contact_message.as_option().is_some() || base.contacts_array_message.as_option().is_some() {
        Some("[contact card]".to_string())
    } else {
        None
    }
}

/// A photo, voice note, video or file in a message: what it is, what the
/// message says of it, and how to fetch it.
#[derive(Debug, Clone, PartialEq)]
pub struct Media {
    pub kind: MediaKind,
    pub declared: Declared,
    pub source: MediaRef,
}

/// What a message says of its file. All of it is the sender's (or their
/// phone's): data for the engine to check and label, not to trust.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declared {
    pub mime: Option<String>,
    pub bytes: Option<u64>,
    /// SHA-256 of the plain file (WhatsApp's `file_sha256`), when it is one.
    pub sha256: Option<[u8; 32]>,
    pub seconds: Option<u32>,
    pub file_name: Option<String>,
    pub caption: Option<String>,
}

/// Where WhatsApp keeps a file and the key to open it: what a download
/// needs, owned, so it can be fetched after the message is handed on.
#[derive(Clone, PartialEq)]
pub struct MediaRef {
    pub direct_path: Option<String>,
    pub media_key: Option<Vec<u8>>,
    pub file_sha256: Option<Vec<u8>>,
    /// SHA-256 of the encrypted file; WhatsApp's CDN wants it as a token.
    pub file_enc_sha256: Option<Vec<u8>>,
    pub file_length: Option<u64>,
    /// Which keys the media key derives (whatsapp-rust's `MediaType`).
    pub media_type: MediaType,
}

/// The key opens the file: it is never logged.
impl std::fmt::Debug for MediaRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaRef")
            .field("direct_path", &self.direct_path)
            .field("media_key", &self.media_key.as_ref().map(|_| "<secret>"))
            .field("file_length", &self.file_length)
            .field("media_type", &self.media_type)
            .finish_non_exhaustive()
    }
}

impl MediaRef {
    fn of(file: &dyn Downloadable) -> MediaRef {
        MediaRef {
            direct_path: file.direct_path().map(str::to_string),
            media_key: file.media_key().map(<[u8]>::to_vec),
            file_sha256: file.file_sha256().map(<[u8]>::to_vec),
            file_enc_sha256: file.file_enc_sha256().map(<[u8]>::to_vec),
            file_length: file.file_length(),
            media_type: file.app_info(),
        }
    }
}

/// whatsapp-rust downloads a [`MediaRef`] as it would the message's own
/// media. No static URL: that is for newsletters, which relay ignores.
impl Downloadable for MediaRef {
    fn direct_path(&self) -> Option<&str> {
        self.direct_path.as_deref()
    }
    fn media_key(&self) -> Option<&[u8]> {
        self.media_key.as_deref()
    }
    fn file_enc_sha256(&self) -> Option<&[u8]> {
        self.file_enc_sha256.as_deref()
    }
    fn file_sha256(&self) -> Option<&[u8]> {
        self.file_sha256.as_deref()
    }
    fn file_length(&self) -> Option<u64> {
        self.file_length
    }
    fn app_info(&self) -> MediaType {
        self.media_type
    }
}

/// The media in a message (also inside a view-once wrapper or a captioned
/// document), or `None` if it has none relay fetches.
pub fn media_of(message: &wa::Message) -> Option<Media> {
    let base = message.get_base_message();
    let declared = |mime: &Option<String>, bytes, sha256: &Option<Vec<u8>>| Declared {
        mime: mime.clone(),
        bytes,
        sha256: sha256.as_deref().and_then(|s| <[u8; 32]>::try_from(s).ok()),
        ..Declared::default()
    };
    let (kind, declared, source) = if let Some(image) = base.image_message.as_option() {
        let declared = Declared {
            caption: image.caption.clone(),
            ..declared(&image.mimetype, image.file_length, &image.file_sha256)
        };
        (MediaKind::Photo, declared, MediaRef::of(image))
    } else if let Some(audio) = base.audio_message.as_option() {
        let kind = if audio.ptt == Some(true) { MediaKind::VoiceNote } else { MediaKind::Audio };
        let declared =
            Declared { seconds: audio.seconds, ..declared(&audio.mimetype, audio.file_length, &audio.file_sha256) };
        (kind, declared, MediaRef::of(audio))
    } else if let Some((kind, video)) = base
        .video_message
        .as_option()
        .map(|v| (MediaKind::Video, v))
        .or_else(|| base.ptv_message.as_option().map(|v| (MediaKind::VideoNote, v)))
    {
        let declared = Declared {
            seconds: video.seconds,
            caption: video.caption.clone(),
            ..declared(&video.mimetype, video.file_length, &video.file_sha256)
        };
        (kind, declared, MediaRef::of(video))
    } else if let Some(document) = base.document_message.as_option() {
        let declared = Declared {
            file_name: document.file_name.clone(),
            caption: document.caption.clone(),
            ..declared(&document.mimetype, document.file_length, &document.file_sha256)
        };
        (MediaKind::Document, declared, MediaRef::of(document))
    } else if let Some(sticker) = base.sticker_message.as_option() {
        (
            MediaKind::Sticker,
            declared(&sticker.mimetype, sticker.file_length, &sticker.file_sha256),
            MediaRef::of(sticker),
        )
    } else {
        return None;
    };
    Some(Media { kind, declared, source })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::channel::InboundAct;
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
    fn the_operator_writing_to_a_contact_on_another_device_is_the_operators() {
        const OPERATOR: &str = "56900000001";
        // As whatsapp-rust parses it: from the account's phone (device 0),
        // to the contact; the chat is the contact's.
        let mut phone = info(Jid::pn(OPERATOR), None);
        phone.source.is_from_me = true;
        phone.source.recipient = Some(Jid::pn(NUMBER));
        phone.source.chat = Jid::pn(NUMBER);
        let incoming = taken(route(&wa::Message::text("Ana here: Friday is fine"), &phone));
        assert!(incoming.by_operator);
        assert_eq!(incoming.sender, Sender::Phone(Contact::parse(&format!("+{NUMBER}")).unwrap()));
        assert_eq!(incoming.text, "Ana here: Friday is fine");
        // A chat addressed by LID: the envelope names the contact's number.
        let mut lid = phone.clone();
        lid.source.recipient = Some(Jid::lid(LID));
        lid.source.chat = Jid::lid(LID);
        lid.peer_recipient_pn = Some(Jid::pn(NUMBER));
        assert_eq!(taken(route(&wa::Message::text("hi"), &lid)).sender, incoming.sender);
        lid.peer_recipient_pn = None;
        assert_eq!(taken(route(&wa::Message::text("hi"), &lid)).sender, Sender::Lid(Jid::lid(LID)));
        // The contact's own message is never the operator's.
        assert!(!taken(route(&wa::Message::text("hi"), &info(Jid::pn(NUMBER), None))).by_operator);
        // Nor is one of the operator's to a group.
        let mut group = phone.clone();
        group.source.chat = "120363025246125888@g.us".parse().unwrap();
        group.source.is_group = true;
        assert_eq!(route(&wa::Message::text("hi"), &group), Routed::Ignore("group message"));
    }

    #[test]
    fn own_group_status_broadcast_and_newsletter_messages_are_ignored() {
        let text = wa::Message::text("hi");
        let mut own = info(Jid::pn(NUMBER), None);
        own.source.is_from_me = true;
        assert_eq!(route(&text, &own), Routed::Ignore("sent by this account to itself"));

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

    /// An image as a phone sends it: every field relay reads, set.
    pub(crate) fn image(caption: Option<&str>) -> wa::message::ImageMessage {
        wa::message::ImageMessage {
            mimetype: Some("image/jpeg".into()),
            file_length: Some(48_213),
            file_sha256: Some(vec![0xAB; 32]),
            file_enc_sha256: Some(vec![0xCD; 32]),
            media_key: Some(vec![0x11; 32]),
            direct_path: Some("/v/t62.7118-24/11_22_33.enc".into()),
            caption: caption.map(Into::into),
            ..Default::default()
        }
    }

    fn media(message: &wa::Message) -> Media {
        let incoming = taken(route(message, &info(Jid::pn(NUMBER), None)));
        let media = *incoming.media.expect("media");
        assert_eq!(incoming.text, media.declared.caption.clone().unwrap_or_default(), "the text is the caption");
        media
    }

    #[test]
    fn a_photo_carries_what_its_message_declared_and_where_to_fetch_it() {
        let message = wa::Message { image_message: MessageField::some(image(Some("the box"))), ..Default::default() };
        let found = media(&message);
        assert_eq!(found.kind, MediaKind::Photo);
        assert_eq!(
            found.declared,
            Declared {
                mime: Some("image/jpeg".into()),
                bytes: Some(48_213),
                sha256: Some([0xAB; 32]),
                caption: Some("the box".into()),
                ..Declared::default()
            }
        );
        assert_eq!(
            found.source,
            MediaRef {
                direct_path: Some("/v/t62.7118-24/11_22_33.enc".into()),
                media_key: Some(vec![0x11; 32]),
                file_sha256: Some(vec![0xAB; 32]),
                file_enc_sha256: Some(vec![0xCD; 32]),
                file_length: Some(48_213),
                media_type: MediaType::Image,
            }
        );
        assert!(!format!("{:?}", found.source).contains("17, 17"), "the key is not logged");

        // A hash that is not SHA-256's length is not one.
        let odd = wa::Message {
            image_message: MessageField::some(wa::message::ImageMessage {
                file_sha256: Some(vec![1; 20]),
                ..image(None)
            }),
            ..Default::default()
        };
        let found = media(&odd);
        assert_eq!((found.declared.sha256, found.declared.caption), (None, None));
    }

    #[test]
    fn a_view_once_photo_is_a_photo() {
        let inner = wa::Message { image_message: MessageField::some(image(Some("once"))), ..Default::default() };
        let wrapped = |field: &dyn Fn(wa::message::FutureProofMessage) -> wa::Message| {
            field(wa::message::FutureProofMessage { message: MessageField::some(inner.clone()) })
        };
        for message in [
            wrapped(&|w| wa::Message { view_once_message: MessageField::some(w), ..Default::default() }),
            wrapped(&|w| wa::Message { view_once_message_v2: MessageField::some(w), ..Default::default() }),
        ] {
            let found = media(&message);
            assert_eq!((found.kind, found.declared.caption.as_deref()), (MediaKind::Photo, Some("once")));
            assert_eq!(found.source.direct_path.as_deref(), Some("/v/t62.7118-24/11_22_33.enc"));
        }
    }

    #[test]
    fn audio_is_a_voice_note_when_recorded_as_one() {
        let audio = |ptt| wa::Message {
            audio_message: MessageField::some(wa::message::AudioMessage {
                ptt,
                mimetype: Some("audio/ogg; codecs=opus".into()),
                seconds: Some(12),
                file_length: Some(9_000),
                direct_path: Some("/v/audio.enc".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let voice = media(&audio(Some(true)));
        assert_eq!((voice.kind, voice.declared.seconds), (MediaKind::VoiceNote, Some(12)));
        assert_eq!(voice.declared.mime.as_deref(), Some("audio/ogg; codecs=opus"));
        assert_eq!((voice.source.media_type, voice.source.file_length), (MediaType::Audio, Some(9_000)));
        assert_eq!(media(&audio(Some(false))).kind, MediaKind::Audio);
        assert_eq!(media(&audio(None)).kind, MediaKind::Audio);
    }

    #[test]
    fn videos_and_video_notes_keep_their_length_and_caption() {
        let video = wa::message::VideoMessage {
            mimetype: Some("video/mp4".into()),
            seconds: Some(31),
            caption: Some("the leak".into()),
            ..Default::default()
        };
        let found = media(&wa::Message { video_message: MessageField::some(video.clone()), ..Default::default() });
        assert_eq!((found.kind, found.declared.seconds), (MediaKind::Video, Some(31)));
        assert_eq!((found.declared.caption.as_deref(), found.source.media_type), (Some("the leak"), MediaType::Video));
        let note = wa::message::VideoMessage { caption: None, ..video };
        let found = media(&wa::Message { ptv_message: MessageField::some(note), ..Default::default() });
        assert_eq!((found.kind, found.declared.seconds), (MediaKind::VideoNote, Some(31)));
    }

    #[test]
    fn documents_keep_their_name_and_a_caption_in_its_wrapper() {
        let document = wa::message::DocumentMessage {
            mimetype: Some("application/pdf".into()),
            file_name: Some("invoice.pdf".into()),
            file_length: Some(120_000),
            ..Default::default()
        };
        let plain = wa::Message { document_message: MessageField::some(document.clone()), ..Default::default() };
        let found = media(&plain);
        assert_eq!((found.kind, found.source.media_type), (MediaKind::Document, MediaType::Document));
        assert_eq!(found.declared.file_name.as_deref(), Some("invoice.pdf"));
        assert_eq!((found.declared.bytes, found.declared.caption.as_deref()), (Some(120_000), None));

        let captioned = wa::Message {
            document_with_caption_message: MessageField::some(wa::message::FutureProofMessage {
                message: MessageField::some(wa::Message {
                    document_message: MessageField::some(wa::message::DocumentMessage {
                        caption: Some("March, as asked".into()),
                        ..document
                    }),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        };
        let found = media(&captioned);
        assert_eq!(found.kind, MediaKind::Document);
        assert_eq!(found.declared.file_name.as_deref(), Some("invoice.pdf"));
        assert_eq!(found.declared.caption.as_deref(), Some("March, as asked"));
    }

    #[test]
    fn a_sticker_is_a_sticker() {
        let sticker = wa::Message {
            sticker_message: MessageField::some(wa::message::StickerMessage {
                mimetype: Some("image/webp".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let found = media(&sticker);
        assert_eq!((found.kind, found.source.media_type), (MediaKind::Sticker, MediaType::Sticker));
        assert_eq!(taken(route(&sticker, &info(Jid::pn(NUMBER), None))).text, "");
    }

    #[test]
    fn a_location_or_contact_card_stays_a_placeholder_and_a_reaction_names_its_message() {
        let location = wa::Message {
            location_message: MessageField::some(wa::message::LocationMessage::default()),
            ..Default::default()
        };
        let card = wa::Message {
            contact_message: MessageField::some(wa::message::ContactMessage::default()),
            ..Default::default()
        };
        let reaction = |text: &str| wa::Message {
            reaction_message: MessageField::some(wa::message::ReactionMessage {
                key: MessageField::some(wa::MessageKey { id: Some("3EB0RELAY".into()), ..Default::default() }),
                text: Some(text.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        for (message, text) in [(location, "[location]"), (card, "[contact card]")] {
            let incoming = taken(route(&message, &info(Jid::pn(NUMBER), None)));
            assert_eq!((incoming.text.as_str(), incoming.media, incoming.act), (text, None, None));
        }
        let reacted = taken(route(&reaction("👍"), &info(Jid::pn(NUMBER), None)));
        let to = "3EB0RELAY".to_string();
        assert_eq!(
            (reacted.text.as_str(), reacted.act),
            ("👍", Some(InboundAct::Reaction { to: to.clone(), removed: false }))
        );
        let taken_back = taken(route(&reaction(""), &info(Jid::pn(NUMBER), None)));
        assert_eq!(taken_back.act, Some(InboundAct::Reaction { to, removed: true }));
    }

    #[test]
    fn a_message_with_nothing_to_read_is_ignored() {
        assert!(matches!(route(&wa::Message::default(), &info(Jid::pn(NUMBER), None)), Routed::Ignore(_)));
    }
}
