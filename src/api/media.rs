//! Media in a conversation: a voice note, photo or file a contact sent (or
//! one relay sends), as a transcript line's `media` records it.
//!
//! Wire types only. What the bytes are, the labels the model reads and
//! relay's file names are in the `media` module, a layer above this one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What kind of media a message is, as WhatsApp (or the sandbox) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Photo,
    /// Recorded in WhatsApp with the microphone button.
    VoiceNote,
    /// An audio file sent as such (music, a forwarded recording).
    Audio,
    Video,
    /// A round video recorded in WhatsApp.
    VideoNote,
    /// Any file sent as a document (PDF, spreadsheet, zip…).
    Document,
    Sticker,
}

impl MediaKind {
    pub const ALL: [MediaKind; 7] = [
        MediaKind::Photo,
        MediaKind::VoiceNote,
        MediaKind::Audio,
        MediaKind::Video,
        MediaKind::VideoNote,
        MediaKind::Document,
        MediaKind::Sticker,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Photo => "photo",
            MediaKind::VoiceNote => "voice_note",
            MediaKind::Audio => "audio",
            MediaKind::Video => "video",
            MediaKind::VideoNote => "video_note",
            MediaKind::Document => "document",
            MediaKind::Sticker => "sticker",
        }
    }
}

/// Where the file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MediaStatus {
    /// The message is recorded; the file is being fetched (and transcribed).
    Pending,
    /// The file is in the relay home (`path`).
    Stored,
    /// Larger than relay fetches (`media.max_bytes`): never fetched.
    TooLarge,
    /// It could not be fetched (`error` says why); relay stopped before it
    /// was, too.
    Failed,
    /// It was stored and then removed after `media.keep`.
    Pruned,
}

impl MediaStatus {
    pub const ALL: [MediaStatus; 5] =
        [MediaStatus::Pending, MediaStatus::Stored, MediaStatus::TooLarge, MediaStatus::Failed, MediaStatus::Pruned];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaStatus::Pending => "pending",
            MediaStatus::Stored => "stored",
            MediaStatus::TooLarge => "too_large",
            MediaStatus::Failed => "failed",
            MediaStatus::Pruned => "pruned",
        }
    }
}

/// Whether a voice note (or audio file) was turned into words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TranscriptStatus {
    /// `transcript` holds the words.
    Done,
    /// No transcription service is configured (`media.transcription`).
    NotConfigured,
    /// The service failed or refused it (`error` says why).
    Failed,
    /// The bytes are not audio, whatever the message said: not sent to the
    /// service.
    NotAudio,
}

impl TranscriptStatus {
    pub const ALL: [TranscriptStatus; 4] =
        [TranscriptStatus::Done, TranscriptStatus::NotConfigured, TranscriptStatus::Failed, TranscriptStatus::NotAudio];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TranscriptStatus::Done => "done",
            TranscriptStatus::NotConfigured => "not_configured",
            TranscriptStatus::Failed => "failed",
            TranscriptStatus::NotAudio => "not_audio",
        }
    }
}

/// The media of a transcript message. A contact's media is recorded
/// `pending` at once and the message written again (same id) when it is
/// stored, refused or failed; the latest line wins. What the contact or
/// their phone said (`declared_mime`, `file_name`, `caption`,
/// `transcript`) is data, never instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MediaInfo {
    pub kind: MediaKind,
    pub status: MediaStatus,
    /// Per conversation, `m1`, `m2`… for the contact's media; the
    /// attachment id (`a1`…) for relay's own.
    pub reference: String,
    /// The type relay found in the bytes (`image/jpeg`), once stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// The type the message said it was (contact input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_mime: Option<String>,
    /// The stored size; the declared one when it was too large to fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// SHA-256 of the stored bytes, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Where the file is: relative to the relay home in the transcript file,
    /// absolute in the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A document's name as the contact gave it, cleaned: display only,
    /// never a path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// The caption the contact wrote under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Length of a voice note, audio or video, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<u32>,
    /// The contact's words, machine-transcribed: names and numbers may be
    /// misheard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_status: Option<TranscriptStatus>,
    /// Why it failed, was too large or was not transcribed, in short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the file was removed (`pruned`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pruned_at: Option<DateTime<Utc>>,
}

impl MediaInfo {
    /// Media of `kind` known only by its reference; the rest is filled in
    /// as it is learned.
    pub fn new(kind: MediaKind, status: MediaStatus, reference: impl Into<String>) -> MediaInfo {
        MediaInfo {
            kind,
            status,
            reference: reference.into(),
            mime: None,
            declared_mime: None,
            bytes: None,
            sha256: None,
            path: None,
            file_name: None,
            caption: None,
            duration_s: None,
            transcript: None,
            transcript_status: None,
            error: None,
            pruned_at: None,
        }
    }
}

/// A file the conversation may send its contact (given at create with
/// `--attach`, or sent by the operator with `relay send --file`), kept in
/// the home as `media/<conversation-id>/att-<id>.<ext>`. The agent sends
/// one by its `id` (`send_attachment`), never by a path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Attachment {
    /// `a1`, `a2`… in the order given.
    pub id: String,
    /// The name the contact sees (the operator's: the file's own name, or
    /// the one given), one line.
    pub name: String,
    /// `photo` (a JPEG or PNG, sent as an image) or `document` (anything
    /// else, sent as a file).
    pub kind: MediaKind,
    /// What the bytes are (relay looks at them).
    pub mime: String,
    pub bytes: u64,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
    /// Where the file is, relative to the relay home.
    pub path: String,
}

/// A file to give a new conversation: one staged with `POST /media`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAttachment {
    pub upload_id: uuid::Uuid,
    /// The name the contact sees; left out (or nothing left once cleaned:
    /// controls, separators and spaces around go), `a1.pdf` and so on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100)]
    pub name: Option<String>,
}

/// `POST /media`: a file the daemon keeps until a request uses it (an hour
/// at most), by its `upload_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UploadResponse {
    pub upload_id: uuid::Uuid,
    pub bytes: u64,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
    /// What the bytes are (relay looks at them; a name or a header does not
    /// say).
    pub mime: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Evidence, TranscriptMessage};

    #[test]
    fn every_enum_is_on_the_wire_as_its_name() {
        for kind in MediaKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), serde_json::json!(kind.as_str()));
        }
        for status in MediaStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), serde_json::json!(status.as_str()));
        }
        for status in TranscriptStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), serde_json::json!(status.as_str()));
        }
    }

    /// Lines written before media existed, exactly as relay writes them
    /// today (docs/storage.md).
    const OLD_CONTACT_LINE: &str = r#"{"id":"83bf0b6b-5c04-4c27-b174-8ba0ee4168f1","instance_id":"2977bed1-1a06-4c81-85e4-1b4f80142ba9","role":"contact","content":"Thursday works, after 3pm","timestamp":"2026-11-22T23:56:39.479153241Z"}"#;
    const OLD_SENT_LINE: &str = r#"{"id":"55660cc0-a27b-45ac-a6ce-0242fa419f6a","instance_id":"2977bed1-1a06-4c81-85e4-1b4f80142ba9","role":"agent","content":"Hi! Which day suits you?","timestamp":"2026-11-23T12:00:03Z","send_status":"failed","channel_message_id":"3EB0A1B2C3D4E5F6","delivery_error":"the contact has not messaged this number and WhatsApp limits first contact (error 463)"}"#;
    const OLD_EVIDENCE: &str =
        r#"{"message_id":"83bf0b6b-5c04-4c27-b174-8ba0ee4168f1","untrusted_contact_text":"Thursday works"}"#;

    #[test]
    fn lines_written_before_media_still_parse_and_are_written_back_unchanged() {
        for line in [OLD_CONTACT_LINE, OLD_SENT_LINE] {
            let message: TranscriptMessage = serde_json::from_str(line).unwrap();
            assert_eq!(message.media, None);
            assert_eq!(serde_json::to_string(&message).unwrap(), line, "no `media` key is added");
        }
        let evidence: Evidence = serde_json::from_str(OLD_EVIDENCE).unwrap();
        assert_eq!(evidence.media, None);
        assert_eq!(serde_json::to_string(&evidence).unwrap(), OLD_EVIDENCE);
    }

    #[test]
    fn a_line_with_media_round_trips() {
        let mut message: TranscriptMessage = serde_json::from_str(OLD_CONTACT_LINE).unwrap();
        message.content = "[voice note m1, 0:12, transcribed] Thursday works".into();
        message.media = Some(Box::new(MediaInfo {
            mime: Some("audio/ogg; codecs=opus".into()),
            declared_mime: Some("audio/ogg; codecs=opus".into()),
            bytes: Some(19_872),
            sha256: Some("ab".repeat(32)),
            path: Some("media/2977bed1-1a06-4c81-85e4-1b4f80142ba9/83bf0b6b-5c04-4c27-b174-8ba0ee4168f1.ogg".into()),
            duration_s: Some(12),
            transcript: Some("Thursday works".into()),
            transcript_status: Some(TranscriptStatus::Done),
            ..MediaInfo::new(MediaKind::VoiceNote, MediaStatus::Stored, "m1")
        }));
        let line = serde_json::to_string(&message).unwrap();
        assert!(line.contains(r#""media":{"kind":"voice_note","status":"stored","reference":"m1","#), "{line}");
        assert_eq!(serde_json::from_str::<TranscriptMessage>(&line).unwrap(), message);

        let pruned = MediaInfo {
            file_name: Some("invoice.pdf".into()),
            caption: Some("the invoice".into()),
            error: Some("removed after 90 days".into()),
            pruned_at: Some("2027-02-21T12:00:00Z".parse().unwrap()),
            ..MediaInfo::new(MediaKind::Document, MediaStatus::Pruned, "m3")
        };
        let message = TranscriptMessage { media: Some(Box::new(pruned)), ..message };
        let line = serde_json::to_string(&message).unwrap();
        assert_eq!(serde_json::from_str::<TranscriptMessage>(&line).unwrap(), message);

        let evidence = Evidence { media: Some("m2".into()), ..serde_json::from_str(OLD_EVIDENCE).unwrap() };
        let written = serde_json::to_string(&evidence).unwrap();
        assert!(written.ends_with(r#","media":"m2"}"#), "{written}");
        assert_eq!(serde_json::from_str::<Evidence>(&written).unwrap(), evidence);
    }

    #[test]
    fn only_what_is_known_is_written() {
        let info = MediaInfo::new(MediaKind::VoiceNote, MediaStatus::Pending, "m1");
        assert_eq!(
            serde_json::to_string(&info).unwrap(),
            r#"{"kind":"voice_note","status":"pending","reference":"m1"}"#
        );
    }
}
