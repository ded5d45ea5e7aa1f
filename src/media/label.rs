//! What the model reads for a media message: a label in the contact's
//! turn, kept as the message's `content`.
//!
//! ```text
//! [voice note m1, 0:12, transcribed] Tuesday at three works
//! [photo m2, not shown to you] the meter
//! [document m3: "invoice.pdf", PDF, 120 KB] caption
//! ```
//!
//! Between the brackets everything is relay's, but for a document's name,
//! which is always in double quotes. Whatever the contact controls (the
//! file name, the caption, the words of a voice note) is made one line, cut
//! to length, and has its square brackets turned round (`(`, `)`) and a
//! file name its double quotes single: so a label is exactly one line with
//! one `[` and one `]`, and nothing the contact wrote can end it early or
//! look like a second one. The declared type and any error text are never
//! echoed; only names from relay's own table are.

use std::time::Duration;

use super::names;
use super::sniff::{self, FileType};
use crate::api::{MediaInfo, MediaKind, MediaStatus, TranscriptStatus};

/// WhatsApp's limit on a caption.
pub const MAX_CAPTION_CHARS: usize = 1_024;
/// A voice note's words in a label: about a quarter of an hour of speech.
pub const MAX_TRANSCRIPT_CHARS: usize = 16_000;

/// What a label depends on besides the media.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// The image goes to the model in this turn (vision is on, it is among
    /// the newest and small enough). A type no model takes (HEIC) is never
    /// shown, whatever this says.
    pub shown: bool,
    /// `media.max_bytes`, the limit a file too large to fetch is over.
    pub max_bytes: u64,
    /// `media.keep`, after which a file is removed.
    pub keep: Option<Duration>,
}

/// The label of `media`.
pub fn label(media: &MediaInfo, cx: &Context) -> String {
    use MediaKind::*;
    let kind = media.kind;
    let audio = matches!(kind, VoiceNote | Audio);
    let timed = audio || matches!(kind, Video | VideoNote);
    // The type relay found in the bytes, once it has them.
    let found = media.mime.as_deref().and_then(sniff::from_mime);
    let mut said = Said {
        body: media.caption.as_deref().map(|c| contact_text(c, MAX_CAPTION_CHARS)).unwrap_or_default(),
        ..Said::default()
    };

    if kind == Document {
        said.facts.extend(media.file_name.as_deref().and_then(quoted_name));
    }
    if timed {
        said.facts.extend(media.duration_s.map(clock));
    }
    let size = media.bytes.map(size);

    match media.status {
        MediaStatus::Pending => {
            said.facts.extend(size.filter(|_| kind == Document));
            said.note = Some("being processed".into());
        }
        MediaStatus::TooLarge => {
            said.facts.extend(size);
            said.note = Some(format!("too large for relay to fetch (limit {})", self::size(cx.max_bytes)));
        }
        MediaStatus::Failed => {
            let ask = if audio { "ask them to send it again or write it" } else { "ask them to send it again" };
            said.note = Some(format!("relay could not fetch it; {ask}"));
        }
        MediaStatus::Stored | MediaStatus::Pruned => held(media, cx, found, size.as_ref(), &mut said),
    }
    written(media, said)
}

/// What a label says of a file besides its kind and reference.
#[derive(Default)]
struct Said {
    /// After the kind: its name, length, type, size, whether it is shown.
    facts: Vec<String>,
    /// What went wrong with it, or what to do about it.
    note: Option<String>,
    /// The words with it: a caption, or what a voice note said.
    body: String,
}

/// The facts and note of a file relay has (or had and removed): whether
/// it is what it said it was, shown to the model, heard.
fn held(media: &MediaInfo, cx: &Context, found: Option<FileType>, size: Option<&String>, said: &mut Said) {
    use MediaKind::*;
    let kind = media.kind;
    let stored = media.status == MediaStatus::Stored;
    let not_what_it_said = |what: &str, ty: FileType| {
        let what_it_is = [Some(ty.name.to_string()), size.cloned()].into_iter().flatten();
        format!("the file is not {what} ({})", what_it_is.collect::<Vec<_>>().join(", "))
    };
    match kind {
        Photo | Sticker => match found {
            Some(ty) if !ty.fits(kind) => said.note = Some(not_what_it_said("an image", ty)),
            _ if stored && !(cx.shown && found.is_some_and(|ty| ty.model_can_see())) => {
                said.facts.push("not shown to you".into())
            }
            _ => {}
        },
        VoiceNote | Audio => match (found, media.transcript_status) {
            (Some(ty), _) if !ty.fits(kind) => said.note = Some(not_what_it_said("audio", ty)),
            (_, Some(TranscriptStatus::NotAudio)) => said.note = Some("the file is not audio".into()),
            (_, Some(TranscriptStatus::Done)) => {
                said.facts.push("transcribed".into());
                said.body =
                    media.transcript.as_deref().map(|t| contact_text(t, MAX_TRANSCRIPT_CHARS)).unwrap_or_default();
                if said.body.is_empty() {
                    said.note = Some("no words were heard".into());
                }
            }
            (_, Some(TranscriptStatus::Failed)) => {
                said.note = Some("relay could not transcribe it; ask the contact to write it".into())
            }
            (_, Some(TranscriptStatus::NotConfigured) | None) => {
                let what = if kind == VoiceNote { "voice notes" } else { "audio files" };
                said.note = Some(format!("relay cannot listen to {what}; ask the contact to write it"))
            }
        },
        Video | VideoNote => match found {
            Some(ty) if !ty.fits(kind) => said.note = Some(not_what_it_said("a video", ty)),
            _ if stored => said.facts.push("not shown to you".into()),
            _ => {}
        },
        Document => {
            let ty = found.unwrap_or(sniff::UNKNOWN);
            match sniff::claim(media.declared_mime.as_deref(), media.file_name.as_deref(), ty) {
                Some(claimed) => said.facts.push(format!("said to be {} but it is not ({})", a(claimed.name), ty.name)),
                None => said.facts.push(ty.name.into()),
            }
            said.facts.extend(size.cloned());
        }
    }
    if !stored {
        said.facts.push(removed_after(cx.keep));
    }
}

/// The label itself: `[kind reference, facts: note] words`.
fn written(media: &MediaInfo, said: Said) -> String {
    let Said { facts, note, body } = said;
    let kind = media.kind;
    let mut label = format!("[{}", word(kind));
    let reference: String = media.reference.chars().filter(|c| c.is_ascii_alphanumeric()).take(16).collect();
    if !reference.is_empty() {
        label.push(' ');
        label.push_str(&reference);
    }
    if !facts.is_empty() {
        label.push_str(if kind == MediaKind::Document { ": " } else { ", " });
        label.push_str(&facts.join(", "));
    }
    if let Some(note) = note {
        label.push_str(": ");
        label.push_str(&note);
    }
    label.push(']');
    if !body.is_empty() {
        label.push(' ');
        label.push_str(&body);
    }
    label
}

/// A file from a contact with no conversation, as the unrouted log keeps it
/// (it is not fetched): `[photo, not fetched] the meter`.
pub fn unrouted(kind: MediaKind, caption: Option<&str>) -> String {
    let caption = caption.map(|c| contact_text(c, MAX_CAPTION_CHARS)).unwrap_or_default();
    format!("[{}, not fetched] {caption}", word(kind)).trim_end().to_string()
}

/// The kind as a person says it.
pub fn word(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Photo => "photo",
        MediaKind::VoiceNote => "voice note",
        MediaKind::Audio => "audio",
        MediaKind::Video => "video",
        MediaKind::VideoNote => "video note",
        MediaKind::Document => "document",
        MediaKind::Sticker => "sticker",
    }
}

/// Text the contact controls, fit for a label: one line (line breaks,
/// tabs and other control characters become spaces, runs of spaces one),
/// without invisible or direction-changing characters, square brackets
/// turned round, and at most `max_chars` characters (cut with `…`).
pub fn contact_text(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(4 * max_chars));
    let mut space = false;
    for c in text.chars() {
        let c = match c {
            '[' | '［' | '⟦' | '〚' | '⁅' | '【' | '〔' | '〖' | '⟬' => '(',
            ']' | '］' | '⟧' | '〛' | '⁆' | '】' | '〕' | '〗' | '⟭' => ')',
            c if names::invisible(c) => continue,
            c if c.is_control() || c.is_whitespace() => {
                space = !out.is_empty();
                continue;
            }
            c => c,
        };
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    if out.chars().count() <= max_chars {
        return out;
    }
    let mut cut: String = out.chars().take(max_chars.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// A document's name as the contact gave it, in double quotes, with none
/// inside.
fn quoted_name(given: &str) -> Option<String> {
    let name = names::display_name(given)?;
    let name = contact_text(&name, names::MAX_DISPLAY_NAME_CHARS).replace('"', "'");
    (!name.is_empty()).then(|| format!("\"{name}\""))
}

/// `a PDF`, `an MP3 audio`, `an Excel spreadsheet`.
fn a(name: &str) -> String {
    let mut chars = name.chars();
    let first = chars.next().unwrap_or(' ');
    let vowel =
        "AEIOaeio".contains(first) || (first == 'M' && chars.next().is_some_and(|c| c.is_ascii_digit() || c == 'P'));
    format!("{} {name}", if vowel { "an" } else { "a" })
}

/// One of a conversation's attachments as the prompt and `relay get` list
/// it: `a1: invoice.pdf (PDF, 120 KB)`. The name is the operator's, made
/// one line when it was stored.
pub fn attachment(file: &crate::api::Attachment) -> String {
    let what = sniff::from_mime(&file.mime).map_or("file", |ty| ty.name);
    format!("{}: {} ({what}, {})", file.id, file.name, size(file.bytes))
}

/// `0:12`, `12:05`, `1:02:03`.
pub fn clock(seconds: u32) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 { format!("{h}:{m:02}:{s:02}") } else { format!("{m}:{s:02}") }
}

/// `512 bytes`, `120 KB`, `1.2 MB`, `45 MB` (units of 1024).
pub fn size(bytes: u64) -> String {
    if bytes < 1024 {
        return crate::util::count(bytes, "byte");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut units = ["KB", "MB", "GB", "TB"].into_iter().peekable();
    let mut unit = units.next().unwrap_or("KB");
    loop {
        // Above 10, whole units; below, one decimal (none when it is .0).
        let shown = if value >= 9.95 { value.round() } else { (value * 10.0).round() / 10.0 };
        match units.peek() {
            Some(next) if shown >= 1024.0 => {
                value /= 1024.0;
                unit = next;
                units.next();
            }
            _ => return format!("{shown} {unit}"),
        }
    }
}

/// `removed after 90 days`.
fn removed_after(keep: Option<Duration>) -> String {
    let Some(keep) = keep.filter(|k| !k.is_zero()) else { return "removed".into() };
    let secs = keep.as_secs();
    let after = match secs {
        s if s % 86_400 == 0 && s > 0 => crate::util::count(s / 86_400, "day"),
        s if s % 3_600 == 0 && s > 0 => crate::util::count(s / 3_600, "hour"),
        _ => crate::duration::format(keep),
    };
    format!("removed after {after}")
}

#[cfg(test)]
mod tests;
