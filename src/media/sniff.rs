//! What a file is, from its bytes: magic numbers for what WhatsApp sends.
//! The stored type and extension are always these, never what the message
//! or its file name said (those are the contact's; see [`claim`]).

use crate::api::MediaKind;

/// The broad class of a file: what relay may do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaClass {
    Image,
    Audio,
    Video,
    /// Anything else: PDF, office documents, archives, text, unknown bytes.
    Document,
}

/// The container a file is in. Two types with one family are the same kind
/// of bytes (an `.m4a` and an `.mp4`, a `.docx` and a `.zip`), so a
/// declared type is a lie only when its family differs from the bytes'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Jpeg,
    Png,
    Gif,
    Webp,
    /// HEIC, HEIF and AVIF: ISO boxes holding still images.
    Heif,
    Wav,
    Ogg,
    Mp3,
    Aac,
    Amr,
    /// ISO base media: mp4, m4a, 3gp, mov.
    Mp4,
    /// Matroska and WebM.
    Matroska,
    Pdf,
    /// Zip, and what is made of one: docx, xlsx, pptx, odt…
    Zip,
    /// Microsoft's compound files: doc, xls, ppt.
    Ole,
    Text,
    Unknown,
}

/// One type relay knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileType {
    pub mime: &'static str,
    /// relay's extension for a stored file of this type, no dot.
    pub ext: &'static str,
    pub class: MediaClass,
    pub family: Family,
    /// As a person names it: "PDF", "JPEG image", "zip archive".
    pub name: &'static str,
}

impl FileType {
    /// Whether a model may be shown it as an image: the formats every
    /// provider relay uses accepts (not HEIC).
    pub fn model_can_see(&self) -> bool {
        matches!(self.family, Family::Jpeg | Family::Png | Family::Gif | Family::Webp)
    }

    /// Whether bytes of this type can be what a message of `kind` says it
    /// is: a photo must be an image, a voice note audio (or an audio-only
    /// container such as m4a in an mp4 box), a video a video. A document
    /// may be anything.
    pub fn fits(&self, kind: MediaKind) -> bool {
        let container = matches!(self.family, Family::Mp4 | Family::Matroska | Family::Ogg);
        match kind {
            MediaKind::Photo | MediaKind::Sticker => self.class == MediaClass::Image,
            MediaKind::VoiceNote | MediaKind::Audio => self.class == MediaClass::Audio || container,
            MediaKind::Video | MediaKind::VideoNote => self.class == MediaClass::Video || container,
            MediaKind::Document => true,
        }
    }
}

const fn t(mime: &'static str, ext: &'static str, class: MediaClass, family: Family, name: &'static str) -> FileType {
    FileType { mime, ext, class, family, name }
}

use Family as F;
use MediaClass::{Audio, Document, Image, Video};

pub const JPEG: FileType = t("image/jpeg", "jpg", Image, F::Jpeg, "JPEG image");
pub const PNG: FileType = t("image/png", "png", Image, F::Png, "PNG image");
pub const GIF: FileType = t("image/gif", "gif", Image, F::Gif, "GIF image");
pub const WEBP: FileType = t("image/webp", "webp", Image, F::Webp, "WebP image");
pub const HEIC: FileType = t("image/heic", "heic", Image, F::Heif, "HEIC image");
pub const AVIF: FileType = t("image/avif", "avif", Image, F::Heif, "AVIF image");
pub const WAV: FileType = t("audio/wav", "wav", Audio, F::Wav, "WAV audio");
pub const OPUS: FileType = t("audio/ogg; codecs=opus", "ogg", Audio, F::Ogg, "Ogg Opus audio");
pub const VORBIS: FileType = t("audio/ogg; codecs=vorbis", "ogg", Audio, F::Ogg, "Ogg Vorbis audio");
pub const OGG: FileType = t("audio/ogg", "ogg", Audio, F::Ogg, "Ogg audio");
pub const MP3: FileType = t("audio/mpeg", "mp3", Audio, F::Mp3, "MP3 audio");
pub const AAC: FileType = t("audio/aac", "aac", Audio, F::Aac, "AAC audio");
pub const AMR: FileType = t("audio/amr", "amr", Audio, F::Amr, "AMR audio");
pub const M4A: FileType = t("audio/mp4", "m4a", Audio, F::Mp4, "M4A audio");
pub const MP4: FileType = t("video/mp4", "mp4", Video, F::Mp4, "MP4 video");
pub const THREE_GP: FileType = t("video/3gpp", "3gp", Video, F::Mp4, "3GP video");
pub const MOV: FileType = t("video/quicktime", "mov", Video, F::Mp4, "QuickTime video");
pub const WEBM: FileType = t("video/webm", "webm", Video, F::Matroska, "WebM video");
pub const PDF: FileType = t("application/pdf", "pdf", Document, F::Pdf, "PDF");
pub const ZIP: FileType = t("application/zip", "zip", Document, F::Zip, "zip archive");
pub const DOCX: FileType = t(
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "docx",
    Document,
    F::Zip,
    "Word document",
);
pub const XLSX: FileType = t(
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "xlsx",
    Document,
    F::Zip,
    "Excel spreadsheet",
);
pub const PPTX: FileType = t(
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "pptx",
    Document,
    F::Zip,
    "PowerPoint presentation",
);
pub const ODT: FileType = t("application/vnd.oasis.opendocument.text", "odt", Document, F::Zip, "OpenDocument text");
pub const ODS: FileType =
    t("application/vnd.oasis.opendocument.spreadsheet", "ods", Document, F::Zip, "OpenDocument spreadsheet");
pub const ODP: FileType =
    t("application/vnd.oasis.opendocument.presentation", "odp", Document, F::Zip, "OpenDocument presentation");
pub const OLE: FileType =
    t("application/x-ole-storage", "doc", Document, F::Ole, "Microsoft Office document (old format)");
pub const TEXT: FileType = t("text/plain", "txt", Document, F::Text, "text");
pub const UNKNOWN: FileType = t("application/octet-stream", "bin", Document, F::Unknown, "file of unknown type");

/// Every type [`sniff`] can answer.
pub const ALL: &[FileType] = &[
    JPEG, PNG, GIF, WEBP, HEIC, AVIF, WAV, OPUS, VORBIS, OGG, MP3, AAC, AMR, M4A, MP4, THREE_GP, MOV, WEBM, PDF, ZIP,
    DOCX, XLSX, PPTX, ODT, ODS, ODP, OLE, TEXT, UNKNOWN,
];

/// What the bytes are. Never fails: bytes it does not know are
/// [`UNKNOWN`].
pub fn sniff(b: &[u8]) -> FileType {
    let at = |i: usize, s: &[u8]| b.get(i..i + s.len()) == Some(s);
    if at(0, &[0xFF, 0xD8, 0xFF]) {
        return JPEG;
    }
    if at(0, b"\x89PNG\r\n\x1a\n") {
        return PNG;
    }
    if at(0, b"GIF87a") || at(0, b"GIF89a") {
        return GIF;
    }
    if at(0, b"RIFF") && at(8, b"WEBP") {
        return WEBP;
    }
    if at(0, b"RIFF") && at(8, b"WAVE") {
        return WAV;
    }
    if at(0, b"OggS") {
        return if at(28, b"OpusHead") {
            OPUS
        } else if at(28, b"\x01vorbis") {
            VORBIS
        } else {
            OGG
        };
    }
    if at(0, b"#!AMR") {
        return AMR;
    }
    if at(4, b"ftyp")
        && let Some(brand) = b.get(8..12)
    {
        return match brand {
            b"M4A " | b"M4B " | b"M4P " | b"F4A " => M4A,
            b"heic" | b"heix" | b"hevc" | b"hevx" | b"heim" | b"heis" | b"mif1" | b"msf1" => HEIC,
            b"avif" | b"avis" => AVIF,
            b"qt  " => MOV,
            _ if brand.starts_with(b"3g") => THREE_GP,
            _ => MP4,
        };
    }
    if at(0, &[0x1A, 0x45, 0xDF, 0xA3]) {
        return WEBM;
    }
    if b[..b.len().min(1024)].windows(5).any(|w| w == b"%PDF-") {
        return PDF;
    }
    if at(0, b"PK\x03\x04") {
        return zip_type(b);
    }
    if at(0, &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        return OLE;
    }
    if at(0, b"ID3") || mpeg_audio_frame(b) {
        return MP3;
    }
    if b.len() >= 2 && b[0] == 0xFF && (b[1] == 0xF1 || b[1] == 0xF9) {
        return AAC;
    }
    if text(b) {
        return TEXT;
    }
    UNKNOWN
}

/// An MPEG audio frame header at the start: 11 sync bits, then a version,
/// layer, bitrate and sample rate that are not the reserved values.
fn mpeg_audio_frame(b: &[u8]) -> bool {
    let [0xFF, second, third, ..] = *b else { return false };
    let version = (second >> 3) & 0b11;
    let layer = (second >> 1) & 0b11;
    let bitrate = third >> 4;
    let rate = (third >> 2) & 0b11;
    second & 0xE0 == 0xE0 && version != 0b01 && layer != 0 && bitrate != 0xF && rate != 0b11
}

/// Text: valid UTF-8 (a character cut at the end of the sample is fine)
/// with no NUL and no control characters but whitespace.
fn text(b: &[u8]) -> bool {
    let sample = &b[..b.len().min(4096)];
    let valid = match std::str::from_utf8(sample) {
        Ok(s) => s,
        // A multi-byte character cut by the sample's end.
        Err(e) if e.error_len().is_none() && sample.len() == 4096 => {
            std::str::from_utf8(&sample[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !valid.is_empty() && valid.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t' | '\x0C'))
}

/// Where to look for a zip's entry names: its start (local headers) and
/// its end (the central directory lists them all).
const ZIP_WINDOW: usize = 1 << 20;

/// A zip, or an office document made of one: Office Open XML by its parts'
/// folders (`word/`, `xl/`, `ppt/`), OpenDocument by its first entry,
/// `mimetype`, stored uncompressed.
fn zip_type(b: &[u8]) -> FileType {
    if let Some(odf) = opendocument_type(b) {
        return odf;
    }
    let ends = [&b[..b.len().min(ZIP_WINDOW)], &b[b.len().saturating_sub(ZIP_WINDOW)..]];
    for window in ends {
        for name in zip_names(window) {
            if name.starts_with(b"word/") {
                return DOCX;
            }
            if name.starts_with(b"xl/") {
                return XLSX;
            }
            if name.starts_with(b"ppt/") {
                return PPTX;
            }
        }
    }
    ZIP
}

/// The entry names of the zip headers in `window`: local file headers
/// (`PK\3\4`, name at 30) and central directory ones (`PK\1\2`, name at 46).
fn zip_names(window: &[u8]) -> impl Iterator<Item = &[u8]> {
    let u16_at = |i: usize| window.get(i..i + 2).map(|s| u16::from_le_bytes([s[0], s[1]]) as usize);
    (0..window.len().saturating_sub(3)).filter_map(move |i| {
        let (len_at, name_at) = match &window[i..i + 4] {
            b"PK\x03\x04" => (i + 26, i + 30),
            b"PK\x01\x02" => (i + 28, i + 46),
            _ => return None,
        };
        let len = u16_at(len_at)?;
        window.get(name_at..name_at + len)
    })
}

/// An OpenDocument file: first entry `mimetype`, stored, holding the type.
fn opendocument_type(b: &[u8]) -> Option<FileType> {
    let u16_at = |i: usize| b.get(i..i + 2).map(|s| u16::from_le_bytes([s[0], s[1]]) as usize);
    let (name_len, extra_len) = (u16_at(26)?, u16_at(28)?);
    if b.get(30..30 + name_len)? != b"mimetype" {
        return None;
    }
    let content = b.get(30 + name_len + extra_len..)?;
    [ODT, ODS, ODP].into_iter().find(|t| content.starts_with(t.mime.as_bytes()))
}

/// The type a mime string names, if relay knows it: the table's own names
/// and the other names phones use for them (`image/jpg`, `audio/x-m4a`).
/// Parameters (`; codecs=opus`) and case do not matter.
pub fn from_mime(mime: &str) -> Option<FileType> {
    let essence = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let known = match essence.as_str() {
        "image/jpg" | "image/pjpeg" => JPEG,
        "image/heif" | "image/heic-sequence" | "image/heif-sequence" => HEIC,
        "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => WAV,
        "audio/opus" => OPUS,
        "audio/ogg" | "application/ogg" | "video/ogg" => OGG,
        "audio/mp3" | "audio/mpeg3" | "audio/x-mpeg" => MP3,
        "audio/x-aac" | "audio/aacp" => AAC,
        "audio/amr-wb" => AMR,
        "audio/3gpp" | "video/3gpp2" => THREE_GP,
        "audio/x-m4a" | "audio/m4a" | "audio/aac-mp4" => M4A,
        "video/x-matroska" | "audio/webm" => WEBM,
        "application/x-zip-compressed" | "application/x-zip" => ZIP,
        "application/msword" | "application/vnd.ms-excel" | "application/vnd.ms-powerpoint" => OLE,
        "application/x-pdf" => PDF,
        other => return ALL.iter().find(|t| t.mime.split(';').next() == Some(other)).copied(),
    };
    Some(known)
}

/// The type a file name's extension names, if relay knows it.
pub fn from_extension(file_name: &str) -> Option<FileType> {
    let (_, ext) = file_name.rsplit_once('.')?;
    let ext = ext.trim().to_ascii_lowercase();
    let known = match ext.as_str() {
        "jpeg" | "jpe" => JPEG,
        "heif" => HEIC,
        "opus" | "oga" => OGG,
        "m4b" => M4A,
        "m4v" => MP4,
        "3g2" => THREE_GP,
        "mkv" => WEBM,
        "xls" | "ppt" => OLE,
        "text" | "log" => TEXT,
        // `.bin` says nothing about what the bytes are.
        "bin" => return None,
        other => return ALL.iter().find(|t| t.ext == other).copied(),
    };
    Some(known)
}

/// What the message said the file is, when that is wrong: the type it
/// claimed (by its declared mime type, else by its file name's extension),
/// for a type relay can tell from its bytes and whose family differs from
/// the bytes'. A claim of text is never a lie (text in another encoding is
/// still text), nor is a claim relay cannot check.
pub fn claim(declared_mime: Option<&str>, file_name: Option<&str>, bytes: FileType) -> Option<FileType> {
    let said = declared_mime.and_then(from_mime).or_else(|| file_name.and_then(from_extension))?;
    let checkable = !matches!(said.family, Family::Text | Family::Unknown);
    (checkable && said.family != bytes.family).then_some(said)
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Small files of each type, built here: their first bytes are all
    //! relay looks at.

    /// `len` bytes starting with `head`, the rest zeros.
    pub fn padded(head: &[u8], len: usize) -> Vec<u8> {
        let mut b = head.to_vec();
        b.resize(len.max(head.len()), 0);
        b
    }

    pub fn jpeg() -> Vec<u8> {
        padded(b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01", 64)
    }
    pub fn png() -> Vec<u8> {
        padded(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", 64)
    }
    pub fn gif() -> Vec<u8> {
        padded(b"GIF89a\x01\x00\x01\x00", 64)
    }
    pub fn webp() -> Vec<u8> {
        padded(b"RIFF\x24\x00\x00\x00WEBPVP8 ", 64)
    }
    pub fn wav() -> Vec<u8> {
        padded(b"RIFF\x24\x00\x00\x00WAVEfmt ", 64)
    }
    /// An ISO base media file of `brand`.
    pub fn ftyp(brand: &[u8; 4]) -> Vec<u8> {
        let mut b = b"\x00\x00\x00\x18ftyp".to_vec();
        b.extend_from_slice(brand);
        b.extend_from_slice(b"\x00\x00\x00\x00isommp41");
        padded(&b, 64)
    }
    pub fn pdf() -> Vec<u8> {
        b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF\n".to_vec()
    }
    /// A zip whose entries are `names` (stored, empty), with its central
    /// directory, as a zip tool writes it.
    pub fn zip(names: &[&str]) -> Vec<u8> {
        let mut b = Vec::new();
        let mut central = Vec::new();
        for name in names {
            let offset = b.len() as u32;
            b.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00");
            b.extend_from_slice(&[0; 12]); // crc, sizes
            b.extend_from_slice(&(name.len() as u16).to_le_bytes());
            b.extend_from_slice(&[0, 0]);
            b.extend_from_slice(name.as_bytes());
            central.extend_from_slice(b"PK\x01\x02\x14\x00\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00");
            central.extend_from_slice(&[0; 12]);
            central.extend_from_slice(&(name.len() as u16).to_le_bytes());
            central.extend_from_slice(&[0; 12]);
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(name.as_bytes());
        }
        let at = b.len() as u32;
        b.extend_from_slice(&central);
        b.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00");
        b.extend_from_slice(&(names.len() as u16).to_le_bytes());
        b.extend_from_slice(&(names.len() as u16).to_le_bytes());
        b.extend_from_slice(&(central.len() as u32).to_le_bytes());
        b.extend_from_slice(&at.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        b
    }
    /// An OpenDocument file: `mimetype` first, stored, holding `mime`.
    pub fn opendocument(mime: &str) -> Vec<u8> {
        let mut b = b"PK\x03\x04\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&(mime.len() as u32).to_le_bytes());
        b.extend_from_slice(&(mime.len() as u32).to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(b"mimetype");
        b.extend_from_slice(mime.as_bytes());
        b.extend_from_slice(&zip(&["content.xml", "META-INF/manifest.xml"]));
        b
    }
    pub fn ole() -> Vec<u8> {
        padded(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1], 512)
    }
    /// An MP3 that starts with an ID3 tag, and one that starts with a
    /// frame (MPEG-1 layer III, 128 kbit/s, 44.1 kHz).
    pub fn mp3_id3() -> Vec<u8> {
        padded(b"ID3\x04\x00\x00\x00\x00\x00\x00", 64)
    }
    pub fn mp3_frame() -> Vec<u8> {
        padded(&[0xFF, 0xFB, 0x90, 0x64], 417)
    }
    pub fn aac() -> Vec<u8> {
        padded(&[0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC], 64)
    }
    pub fn amr() -> Vec<u8> {
        padded(b"#!AMR\n\x3c", 32)
    }
    pub fn webm() -> Vec<u8> {
        padded(&[0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01], 64)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::fixtures::*;
    use super::*;
    use crate::media::ogg::fixtures::{ogg_opus, ogg_vorbis};

    /// One row per type WhatsApp sends: the bytes and what relay makes of
    /// them.
    #[test]
    fn each_type_is_known_by_its_bytes() {
        let rows: Vec<(&str, Vec<u8>, FileType)> = vec![
            ("jpeg", jpeg(), JPEG),
            ("png", png(), PNG),
            ("gif87", padded(b"GIF87a", 16), GIF),
            ("gif89", gif(), GIF),
            ("webp", webp(), WEBP),
            ("heic", ftyp(b"heic"), HEIC),
            ("heif (mif1)", ftyp(b"mif1"), HEIC),
            ("avif", ftyp(b"avif"), AVIF),
            ("wav", wav(), WAV),
            ("ogg opus", ogg_opus(48_000 * 12, 312), OPUS),
            ("ogg vorbis", ogg_vorbis(44_100, 44_100 * 3), VORBIS),
            ("ogg, other codec", padded(b"OggS\x00\x02", 64), OGG),
            ("mp3 (id3)", mp3_id3(), MP3),
            ("mp3 (frame)", mp3_frame(), MP3),
            ("aac", aac(), AAC),
            ("amr", amr(), AMR),
            ("m4a", ftyp(b"M4A "), M4A),
            ("mp4 (isom)", ftyp(b"isom"), MP4),
            ("mp4 (mp42)", ftyp(b"mp42"), MP4),
            ("3gp", ftyp(b"3gp4"), THREE_GP),
            ("3g2", ftyp(b"3g2a"), THREE_GP),
            ("mov", ftyp(b"qt  "), MOV),
            ("webm", webm(), WEBM),
            ("pdf", pdf(), PDF),
            ("pdf after junk", [b"\r\n".as_slice(), &pdf()].concat(), PDF),
            ("zip", zip(&["notes.txt", "photo.jpg"]), ZIP),
            ("docx", zip(&["[Content_Types].xml", "_rels/.rels", "word/document.xml"]), DOCX),
            ("xlsx", zip(&["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml"]), XLSX),
            ("pptx", zip(&["[Content_Types].xml", "_rels/.rels", "ppt/presentation.xml"]), PPTX),
            ("odt", opendocument("application/vnd.oasis.opendocument.text"), ODT),
            ("ods", opendocument("application/vnd.oasis.opendocument.spreadsheet"), ODS),
            ("odp", opendocument("application/vnd.oasis.opendocument.presentation"), ODP),
            ("doc", ole(), OLE),
            ("text", b"Meter reading: 04512\nThanks!\n".to_vec(), TEXT),
            ("text, accents", "Lectura: 04512, gracias \u{1F600}\r\n\tok".as_bytes().to_vec(), TEXT),
            ("unknown", vec![0x00, 0x01, 0x02, 0x03, 0xFE], UNKNOWN),
            ("latin-1", b"caf\xe9".to_vec(), UNKNOWN),
            ("empty", Vec::new(), UNKNOWN),
            ("ftyp, no brand", b"\x00\x00\x00\x08ftyp".to_vec(), UNKNOWN),
        ];
        for (row, bytes, expected) in rows {
            assert_eq!(sniff(&bytes), expected, "{row}");
        }
    }

    #[test]
    fn the_table_is_consistent() {
        for ty in ALL {
            assert!(ty.ext.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{ty:?}");
            assert_eq!(from_mime(ty.mime).map(|t| t.family), Some(ty.family), "{ty:?}");
            assert!(ty.fits(MediaKind::Document));
            assert_eq!(ty.fits(MediaKind::Photo), ty.class == MediaClass::Image, "{ty:?}");
            if ty.class == MediaClass::Document {
                assert!(!ty.fits(MediaKind::VoiceNote) && !ty.fits(MediaKind::Video), "{ty:?}");
            }
        }
        assert!(JPEG.model_can_see() && PNG.model_can_see() && WEBP.model_can_see() && GIF.model_can_see());
        assert!(!HEIC.model_can_see() && !PDF.model_can_see());
    }

    #[test]
    fn a_message_kind_the_bytes_do_not_bear_out() {
        assert!(!PDF.fits(MediaKind::Photo), "an image message whose bytes are a PDF");
        assert!(!ZIP.fits(MediaKind::VoiceNote), "an audio message that is a zip");
        assert!(!JPEG.fits(MediaKind::VoiceNote));
        assert!(OPUS.fits(MediaKind::VoiceNote));
        assert!(MP4.fits(MediaKind::Audio), "an audio-only mp4 box is audio");
        assert!(M4A.fits(MediaKind::VoiceNote));
        assert!(MP4.fits(MediaKind::VideoNote));
        assert!(!MP3.fits(MediaKind::Video));
        assert!(WEBP.fits(MediaKind::Sticker));
    }

    #[test]
    fn a_lying_declared_type_is_caught() {
        // A "PDF" that is a zip: a lie, by its mime type or by its name.
        assert_eq!(claim(Some("application/pdf"), Some("invoice.pdf"), ZIP), Some(PDF));
        assert_eq!(claim(None, Some("invoice.PDF"), ZIP), Some(PDF));
        assert_eq!(claim(Some("image/jpeg"), None, PDF), Some(JPEG));
        // The same family is no lie: a docx is a zip, an m4a an mp4, opus ogg.
        assert_eq!(claim(Some("application/zip"), None, DOCX), None);
        assert_eq!(
            claim(Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document"), None, ZIP),
            None
        );
        assert_eq!(claim(Some("audio/mp4"), None, MP4), None);
        assert_eq!(claim(Some("audio/ogg; codecs=opus"), None, OPUS), None);
        assert_eq!(claim(Some("AUDIO/OGG"), None, VORBIS), None);
        assert_eq!(claim(Some("image/jpg"), None, JPEG), None);
        assert_eq!(claim(Some("application/msword"), Some("cv.doc"), OLE), None);
        // Nothing relay can check: no lie.
        assert_eq!(claim(Some("application/octet-stream"), None, PDF), None);
        assert_eq!(claim(Some("text/csv"), Some("data.csv"), TEXT), None);
        assert_eq!(claim(Some("text/plain"), None, UNKNOWN), None, "text in latin-1 is text");
        assert_eq!(claim(None, Some("README"), PDF), None);
        assert_eq!(claim(None, Some("firmware.bin"), ZIP), None);
        assert_eq!(claim(None, None, ZIP), None);
        // The declared type is asked first; an unknown one falls back to the name.
        assert_eq!(claim(Some("application/x-whatever"), Some("a.pdf"), ZIP), Some(PDF));
        assert_eq!(claim(Some("application/pdf"), Some("a.zip"), PDF), None);
    }

    proptest! {
        /// Any bytes get an answer from the table, and no panic.
        #[test]
        fn any_bytes_get_a_type(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let found = sniff(&bytes);
            prop_assert!(ALL.contains(&found));
        }

        /// Known headers followed by anything are still known.
        #[test]
        fn a_known_header_wins_over_what_follows(
            which in 0usize..6,
            tail in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let (head, expected) = [(jpeg(), JPEG), (png(), PNG), (gif(), GIF), (webp(), WEBP), (pdf(), PDF), (ftyp(b"heic"), HEIC)][which].clone();
            prop_assert_eq!(sniff(&[head.as_slice(), &tail].concat()), expected);
        }
    }
}
