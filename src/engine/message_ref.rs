//! A message of a transcript, named the ways people and agents name one:
//! its file's reference (`m1`, the contact's first file; `a2`, relay's
//! second attachment: what the transcript, the agent and
//! `mark_todo_item`'s `media` use), its id, or a unique start of its id of
//! at least [`MIN_ID_PREFIX`] characters, as for conversations. One lookup
//! for every route that takes a message, so each takes all three.

use super::EngineError;
use crate::api::TranscriptMessage;
use crate::api::limits::MIN_ID_PREFIX;

/// Why no one message was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfound {
    /// Neither a reference nor [`MIN_ID_PREFIX`] characters of an id.
    TooShort,
    /// No message has that reference or id.
    NoSuch,
    /// That many messages' ids start so.
    Several(usize),
}

/// The message `wanted` names in `transcript`. A reference is matched
/// first (`a123` could be either, and the reference is what was shown);
/// a file sent more than once is the same file, so its first message.
pub fn find<'a>(transcript: &'a [TranscriptMessage], wanted: &str) -> Result<&'a TranscriptMessage, Unfound> {
    let wanted = wanted.trim().to_ascii_lowercase();
    let named = |m: &&TranscriptMessage| m.media.as_ref().is_some_and(|f| f.reference.eq_ignore_ascii_case(&wanted));
    if let Some(found) = transcript.iter().find(named) {
        return Ok(found);
    }
    if wanted.chars().count() < MIN_ID_PREFIX {
        // `m9` is a file this conversation does not have; `3f` too little of an id.
        return Err(if is_reference(&wanted) { Unfound::NoSuch } else { Unfound::TooShort });
    }
    let mut starting = transcript.iter().filter(|m| m.id.to_string().starts_with(&wanted));
    match (starting.next(), starting.count()) {
        (None, _) => Err(Unfound::NoSuch),
        (Some(one), 0) => Ok(one),
        (Some(_), others) => Err(Unfound::Several(others + 1)),
    }
}

/// The message `wanted` names, for its file (`relay media`): a message or
/// file the conversation lacks is not found (404); too little of an id, or
/// a start several share, is the caller's to give better (400).
pub(super) fn of_file<'a>(
    transcript: &'a [TranscriptMessage],
    wanted: &str,
) -> Result<&'a TranscriptMessage, EngineError> {
    let wanted = wanted.trim();
    find(transcript, wanted).map_err(|unfound| match unfound {
        Unfound::TooShort => EngineError::Invalid(format!(
            "'{wanted}' is no file's reference (m1, as the transcript shows) and too short for a message id: give 4 \
             characters of it or more"
        )),
        Unfound::NoSuch => EngineError::Missing(format!(
            "the conversation has no message or file '{wanted}' (`relay transcript` shows each file's reference and \
             message id)"
        )),
        Unfound::Several(count) => EngineError::AmbiguousMessage { prefix: wanted.to_string(), count },
    })
}

/// The JSON Schema `pattern` of what [`find`] looks up rather than refuses
/// as too short: a file's reference, or at least [`MIN_ID_PREFIX`] letters,
/// digits and dashes (a start of an id, or nothing relay has: not found).
pub const MESSAGE_PATTERN: &str = "^(?:[A-Za-z][0-9]+|[0-9A-Za-z-]{4,})$";

/// Whether `text` is shaped as a file's reference: a letter, then digits.
fn is_reference(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && !chars.as_str().is_empty()
        && chars.all(|c| c.is_ascii_digit())
}

/// Whether `text` could name a message at all (letters, digits and dashes:
/// safe in a path), checked before it is put into a URL.
pub fn could_name_one(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        /// A message named as the pattern says is looked up, never refused as too short.
        #[test]
        fn whatever_the_pattern_matches_is_looked_up(wanted in "(?:[A-Za-z][0-9]{1,5}|[0-9A-Za-z-]{4,40})") {
            proptest::prop_assert!(regex::Regex::new(MESSAGE_PATTERN).unwrap().is_match(&wanted));
            proptest::prop_assert_ne!(find(&[], &wanted).unwrap_err(), Unfound::TooShort);
        }
    }

    use super::*;
    use crate::api::{MediaInfo, MediaKind, MediaStatus, Role};

    fn message(id: &str, reference: Option<&str>) -> TranscriptMessage {
        let mut m = TranscriptMessage::new(uuid::Uuid::nil(), Role::Contact, "x".into());
        m.id = uuid::Uuid::parse_str(id).unwrap();
        m.media = reference.map(|r| Box::new(MediaInfo::new(MediaKind::Photo, MediaStatus::Stored, r)));
        m
    }

    #[test]
    fn a_reference_an_id_or_a_unique_start_of_one_names_a_message() {
        let transcript = [
            message("3f2a9c1e-0000-4000-8000-000000000001", Some("m1")),
            message("3f2a9c1e-0000-4000-8000-000000000002", None),
            message("a1230000-0000-4000-8000-000000000003", Some("a1")),
            message("a1239999-0000-4000-8000-000000000004", Some("a1")),
        ];
        let id = |m: Result<&TranscriptMessage, Unfound>| m.map(|m| m.id.to_string()[34..].to_string());
        assert_eq!(id(find(&transcript, " M1 ")), Ok("01".into()));
        assert_eq!(id(find(&transcript, "a1")), Ok("03".into()), "a file sent twice: its first message");
        assert_eq!(id(find(&transcript, "3f2a9c1e-0000-4000-8000-000000000002")), Ok("02".into()));
        assert_eq!(id(find(&transcript, "a1239")), Ok("04".into()));
        assert_eq!(find(&transcript, "3f2a").unwrap_err(), Unfound::Several(2));
        assert_eq!(find(&transcript, "m2").unwrap_err(), Unfound::NoSuch, "a file it does not have");
        assert_eq!(find(&transcript, "3f").unwrap_err(), Unfound::TooShort);
        assert_eq!(find(&transcript, "ab").unwrap_err(), Unfound::TooShort);
        assert_eq!(find(&transcript, "ffff").unwrap_err(), Unfound::NoSuch);
        assert!(could_name_one("m1") && could_name_one("3f2a-9c") && !could_name_one("../x") && !could_name_one(" "));
    }
}
