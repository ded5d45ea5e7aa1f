//! The contact messages WhatsApp handed over that the engine may not have
//! yet, so a daemon stopped between WhatsApp's acknowledgement and the
//! engine's write loses none.
//!
//! whatsapp-rust acknowledges a message (and the server forgets it) only
//! once relay's durability hook returns `Ok`
//! (`whatsapp-rust-0.7.0/src/message/commit_batch.rs` 800-864). The hook
//! ([`Hook`]) writes what relay needs of each message it takes to
//! `whatsapp-inbox.jsonl`, durably, and returns: it waits on nothing of the
//! engine's, as whatsapp-rust holds the sender's lock meanwhile. A write
//! that fails returns `Err`: WhatsApp keeps the message and delivers it
//! again. The engine then gets the message as before; once it took it, it
//! is marked in [`Seen`]. At start, and at each connection, the kept
//! messages the engine never took are handed on first, then the file is
//! compacted. WhatsApp delivers at least once; [`Seen`] makes it once.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use whatsapp_rust::download::MediaType;
use whatsapp_rust::prelude::*;

use super::inbound::{self, Declared, Incoming, Media, MediaRef, Routed, Sender};
use super::seen::{Seen, SeenId};
use crate::api::MediaKind;
use crate::contact::Contact;
use crate::store::{Journal, StoreError};

/// The file is rewritten once it holds this many lines more than the
/// messages still waiting, so it stays small on a daemon that never stops.
const COMPACT_AFTER: usize = 256;

/// The messages kept for the engine, and those it took ([`Seen`]), under
/// one lock: the hook and the channel's event task both use them.
pub struct Inbox {
    state: Mutex<State>,
}

struct State {
    seen: Seen,
    journal: Journal,
    /// Kept and not taken by the engine yet, oldest first.
    waiting: Vec<Kept>,
    /// Lines in the file, taken ones too until it is compacted.
    lines: usize,
    /// The file could not be read: never rewritten, so a person can mend it.
    unreadable: bool,
}

impl Inbox {
    /// The messages taken (`seen`) and kept (`inbox`) so far. A kept file
    /// relay cannot read is reported and left as it is.
    pub fn open(seen: PathBuf, inbox: PathBuf) -> Arc<Inbox> {
        let seen = Seen::open(seen);
        let journal = Journal::at(inbox);
        let (kept, unreadable) = match journal.load::<Kept>() {
            Ok(kept) => (kept, false),
            Err(error) => {
                tracing::error!(%error, "the WhatsApp messages kept for the engine are unreadable; none handed on");
                (Vec::new(), true)
            }
        };
        let lines = kept.len();
        let waiting = kept.into_iter().filter(|k| !seen.contains(&k.key)).collect();
        Arc::new(Inbox { state: Mutex::new(State { seen, journal, waiting, lines, unreadable }) })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("inbox lock")
    }

    /// Keeps the messages of `batch` relay takes and has not kept or
    /// handed on already, in one durable write; `Err` keeps nothing.
    pub fn keep(&self, batch: &[whatsapp_rust::wacore::types::events::InboundMessage]) -> Result<(), StoreError> {
        let mut state = self.state();
        let mut new: Vec<Kept> = Vec::new();
        for message in batch {
            let Routed::Take(incoming) = inbound::route(&message.message, &message.info) else { continue };
            let source = &message.info.source;
            let key = SeenId::of(&source.chat, &source.sender, &message.info.id);
            let known = |kept: &[Kept]| kept.iter().any(|k| k.key == key);
            if state.seen.contains(&key) || known(&state.waiting) || known(&new) {
                continue;
            }
            new.push(Kept::of(key, &incoming));
        }
        if new.is_empty() {
            return Ok(());
        }
        state.journal.append_all(&new)?;
        state.lines += new.len();
        state.waiting.extend(new);
        Ok(())
    }

    /// Whether the engine took this message already.
    pub fn is_taken(&self, key: &SeenId) -> bool {
        self.state().seen.contains(key)
    }

    /// The engine took the message (or has no conversation for it).
    pub fn taken(&self, key: SeenId) {
        let mut state = self.state();
        state.waiting.retain(|k| k.key != key);
        state.seen.record(key);
        if state.lines >= state.waiting.len() + COMPACT_AFTER {
            state.compact();
        }
    }

    /// Stops waiting for a message relay cannot hand on (its sender
    /// matches no number); a repeat of it still gets its chance.
    pub fn forget(&self, key: &SeenId) {
        self.state().waiting.retain(|k| k.key != *key);
    }

    /// The kept messages the engine has not taken, oldest first.
    pub fn waiting(&self) -> Vec<Kept> {
        self.state().waiting.clone()
    }

    /// Rewrites the file with just the messages still waiting.
    pub fn compact(&self) {
        self.state().compact();
    }
}

impl State {
    fn compact(&mut self) {
        if self.unreadable || self.lines == self.waiting.len() {
            return;
        }
        match self.journal.rewrite(&self.waiting) {
            Ok(()) => self.lines = self.waiting.len(),
            Err(error) => tracing::warn!(%error, "cannot compact the WhatsApp messages kept for the engine"),
        }
    }
}

/// whatsapp-rust's durability hook: keeps the batch, then lets it ack.
#[derive(Clone)]
pub struct Hook(pub Arc<Inbox>);

#[whatsapp_rust::async_trait]
impl whatsapp_rust::InboundDurabilityHook for Hook {
    async fn on_messages(
        &self,
        _client: Arc<Client>,
        batch: &[whatsapp_rust::wacore::types::events::InboundMessage],
    ) -> whatsapp_rust::anyhow::Result<()> {
        self.0.keep(batch).map_err(|error| {
            tracing::error!(%error, "cannot keep incoming WhatsApp messages; WhatsApp will deliver them again");
            whatsapp_rust::anyhow::Error::new(error)
        })
    }
}

/// One line of the file: a message relay took, as [`inbound::route`] made
/// it, keyed as in [`Seen`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    pub key: SeenId,
    /// The chat as WhatsApp addressed it (the read receipt goes there).
    chat: String,
    from: Author,
    text: String,
    media: Option<KeptMedia>,
    by_operator: bool,
    /// A reaction, reply, edit or deletion, by the ids of the messages it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    act: Option<crate::channel::InboundAct>,
    /// When it was written, as WhatsApp says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    written_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Who wrote: a phone number, or a LID still to be looked up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Author {
    Phone(Contact),
    Lid(String),
}

/// What the message said of its file, and how to fetch it (bytes in
/// base64; the media key opens the file, so the file is owner-only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct KeptMedia {
    kind: MediaKind,
    mime: Option<String>,
    bytes: Option<u64>,
    sha256: Option<String>,
    seconds: Option<u32>,
    file_name: Option<String>,
    caption: Option<String>,
    direct_path: Option<String>,
    media_key: Option<String>,
    file_sha256: Option<String>,
    file_enc_sha256: Option<String>,
    file_length: Option<u64>,
}

impl Kept {
    fn of(key: SeenId, incoming: &Incoming) -> Kept {
        let from = match &incoming.sender {
            Sender::Phone(contact) => Author::Phone(contact.clone()),
            Sender::Lid(lid) => Author::Lid(lid.to_string()),
        };
        let media = incoming.media.as_deref().map(|Media { kind, declared, source }| KeptMedia {
            kind: *kind,
            mime: declared.mime.clone(),
            bytes: declared.bytes,
            sha256: declared.sha256.as_ref().map(|s| BASE64.encode(s)),
            seconds: declared.seconds,
            file_name: declared.file_name.clone(),
            caption: declared.caption.clone(),
            direct_path: source.direct_path.clone(),
            media_key: source.media_key.as_ref().map(|k| BASE64.encode(k)),
            file_sha256: source.file_sha256.as_ref().map(|s| BASE64.encode(s)),
            file_enc_sha256: source.file_enc_sha256.as_ref().map(|s| BASE64.encode(s)),
            file_length: source.file_length,
        });
        Kept {
            key,
            chat: incoming.chat.to_string(),
            from,
            text: incoming.text.clone(),
            media,
            by_operator: incoming.by_operator,
            act: incoming.act.clone(),
            written_at: incoming.written_at,
        }
    }

    /// The message as [`inbound::route`] made it, or why the line cannot
    /// be read back (edited by hand).
    pub fn incoming(&self) -> Result<Incoming, Unreadable> {
        let jid = |text: &str| text.parse::<Jid>().map_err(|e| Unreadable::Address(text.to_string(), e.to_string()));
        let sender = match &self.from {
            Author::Phone(contact) => Sender::Phone(contact.clone()),
            Author::Lid(lid) => Sender::Lid(jid(lid)?),
        };
        let media = match &self.media {
            Some(media) => Some(Box::new(media.media()?)),
            None => None,
        };
        Ok(Incoming {
            sender,
            text: self.text.clone(),
            media,
            id: self.key.id.clone(),
            chat: jid(&self.chat)?,
            by_operator: self.by_operator,
            act: self.act.clone(),
            written_at: self.written_at,
        })
    }
}

/// Why a kept line does not read back as the message it was (it was
/// edited by hand).
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("{0:?} is not a WhatsApp address: {1}")]
    Address(String, String),
    #[error("bad base64 in a kept file: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("a kept SHA-256 is not 32 bytes")]
    Sha256,
}

impl KeptMedia {
    fn media(&self) -> Result<Media, Unreadable> {
        let bytes = |text: &Option<String>| text.as_ref().map(|t| BASE64.decode(t)).transpose();
        let sha256 = match bytes(&self.sha256)? {
            Some(sha) => Some(<[u8; 32]>::try_from(sha).map_err(|_| Unreadable::Sha256)?),
            None => None,
        };
        let declared = Declared {
            mime: self.mime.clone(),
            bytes: self.bytes,
            sha256,
            seconds: self.seconds,
            file_name: self.file_name.clone(),
            caption: self.caption.clone(),
        };
        let source = MediaRef {
            direct_path: self.direct_path.clone(),
            media_key: bytes(&self.media_key)?,
            file_sha256: bytes(&self.file_sha256)?,
            file_enc_sha256: bytes(&self.file_enc_sha256)?,
            file_length: self.file_length,
            media_type: media_type_of(self.kind),
        };
        Ok(Media { kind: self.kind, declared, source })
    }
}

/// The keys a file's media key derives, by what it is (as whatsapp-rust's
/// `Downloadable` impls say for the messages relay takes).
fn media_type_of(kind: MediaKind) -> MediaType {
    match kind {
        MediaKind::Photo => MediaType::Image,
        MediaKind::VoiceNote | MediaKind::Audio => MediaType::Audio,
        MediaKind::Video | MediaKind::VideoNote => MediaType::Video,
        MediaKind::Document => MediaType::Document,
        MediaKind::Sticker => MediaType::Sticker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::whatsapp::inbound::tests::{NUMBER, info};

    fn taken(message: wa::Message) -> Incoming {
        match inbound::route(&message, &info(Jid::pn(NUMBER), None)) {
            Routed::Take(incoming) => incoming,
            Routed::Ignore(why) => panic!("ignored: {why}"),
        }
    }

    /// Every kind of file relay takes reads back as the message it was,
    /// key and all (so a kept one is fetched as a live one would be).
    #[test]
    fn a_kept_message_reads_back_as_it_was() {
        use wa::message::{AudioMessage, DocumentMessage, ImageMessage, StickerMessage, VideoMessage};
        let file = |kind: &str| (Some(format!("/v/{kind}.enc")), Some(vec![1; 32]), Some(vec![2; 32]));
        let (path, key, sha) = file("image");
        let image = ImageMessage {
            direct_path: path,
            media_key: key,
            file_sha256: sha,
            file_enc_sha256: Some(vec![3; 32]),
            caption: Some("the meter".into()),
            mimetype: Some("image/jpeg".into()),
            file_length: Some(48_213),
            ..Default::default()
        };
        let (path, key, sha) = file("audio");
        let voice = AudioMessage {
            direct_path: path,
            media_key: key,
            file_sha256: sha,
            ptt: Some(true),
            seconds: Some(12),
            ..Default::default()
        };
        let (path, key, sha) = file("video");
        let video = VideoMessage { direct_path: path, media_key: key, file_sha256: sha, ..Default::default() };
        let (path, key, sha) = file("document");
        let document = DocumentMessage {
            direct_path: path,
            media_key: key,
            file_sha256: sha,
            file_name: Some("a.pdf".into()),
            ..Default::default()
        };
        let (path, key, sha) = file("sticker");
        let sticker = StickerMessage { direct_path: path, media_key: key, file_sha256: sha, ..Default::default() };
        let messages = [
            wa::Message::text("hola"),
            wa::Message { image_message: MessageField::some(image), ..Default::default() },
            wa::Message { audio_message: MessageField::some(voice.clone()), ..Default::default() },
            wa::Message {
                audio_message: MessageField::some(AudioMessage { ptt: None, ..voice }),
                ..Default::default()
            },
            wa::Message { video_message: MessageField::some(video.clone()), ..Default::default() },
            wa::Message { ptv_message: MessageField::some(video), ..Default::default() },
            wa::Message { document_message: MessageField::some(document), ..Default::default() },
            wa::Message { sticker_message: MessageField::some(sticker), ..Default::default() },
        ];
        for message in messages {
            let incoming = taken(message);
            let key = SeenId::of(&incoming.chat, &incoming.chat, &incoming.id);
            let line = serde_json::to_string(&Kept::of(key.clone(), &incoming)).unwrap();
            let kept: Kept = serde_json::from_str(&line).unwrap();
            assert_eq!(kept.key, key);
            assert_eq!(kept.incoming().unwrap(), incoming, "{line}");
        }
        // A reaction, a reply, an edit, a deletion keep the message they name.
        use crate::channel::InboundAct;
        for act in [
            InboundAct::Reaction { to: "3EB0A".into(), removed: false },
            InboundAct::Reply { to: "3EB0B".into() },
            InboundAct::Edit { of: "3EB0C".into() },
            InboundAct::Deletion { of: "3EB0D".into() },
        ] {
            let acting = Incoming { act: Some(act), ..taken(wa::Message::text("👍")) };
            let key = SeenId::of(&acting.chat, &acting.chat, &acting.id);
            let line = serde_json::to_string(&Kept::of(key, &acting)).unwrap();
            assert_eq!(serde_json::from_str::<Kept>(&line).unwrap().incoming().unwrap(), acting, "{line}");
        }
        let lid = Incoming { sender: Sender::Lid(Jid::lid("184467440737095")), ..taken(wa::Message::text("hi")) };
        let key = SeenId::of(&lid.chat, &lid.chat, &lid.id);
        assert_eq!(Kept::of(key, &lid).incoming().unwrap(), lid, "a LID waits to be looked up");
    }
}
