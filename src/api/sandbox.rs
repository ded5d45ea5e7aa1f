//! The sandbox channel's routes: a simulated contact writes, and what relay
//! sent is read back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// `relay sandbox say`: a message from a simulated contact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSayRequest {
    #[schema(min_length = 1)]
    pub contact: String,
    /// Trimmed; not empty, unless the message is a file (then its caption).
    #[serde(default)]
    #[schema(max_length = 4096)]
    pub text: String,
    /// A photo, voice note or file the contact sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<SandboxMedia>,
    /// The operator writes this to `contact` on their own phone, not the
    /// contact to relay: recorded as the operator's, and the conversation
    /// pauses (as WhatsApp shows relay the operator's own messages).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_operator: bool,
    /// The message this one replies to (quotes): a transcript id, or a
    /// unique start of one, in the contact's live conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 4)]
    pub reply_to: Option<String>,
}

/// Sandbox only: a simulated contact acts on the chat: reacts to, edits or
/// deletes a message, or calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxActRequest {
    #[schema(min_length = 1)]
    pub contact: String,
    pub act: SandboxAct,
    /// The message acted on (not for `call`): a transcript id, or a unique
    /// start of one, in the contact's live conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 4)]
    pub message: Option<String>,
    /// `react`: the emoji; empty takes the reaction back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 16)]
    pub emoji: Option<String>,
    /// `edit`: the message's new text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4096)]
    pub text: Option<String>,
}

/// The most characters a reaction has: an emoji may be several (skin
/// tones, joined ones).
pub const MAX_REACTION_CHARS: usize = 16;

/// Whether `emoji` (trimmed) is a reaction the sandbox takes: at most
/// [`MAX_REACTION_CHARS`] characters, none a letter, digit, control or space
/// (none at all takes the reaction back).
pub fn is_reaction(emoji: &str) -> bool {
    let symbol = |c: char| !(c.is_alphanumeric() || c.is_control() || c.is_whitespace());
    emoji.chars().count() <= MAX_REACTION_CHARS && emoji.chars().all(symbol)
}

/// The JSON Schema `pattern` of a reaction, in its plainest form: up to
/// [`MAX_REACTION_CHARS`] characters of the emoji blocks (symbols and
/// pictographs, the joiner and the emoji variation selector) that
/// [`is_reaction`] takes, written as themselves (an escape of a character
/// past U+FFFF is written differently in each regex dialect), maybe with
/// spaces around (the handler trims). It takes more (other symbols, other
/// spaces around); every string the pattern matches it takes, trimmed.
pub fn reaction_pattern() -> String {
    const EMOJI_BLOCKS: [(u32, u32); 4] = [(0x200D, 0x200D), (0x2190, 0x2BFF), (0xFE0F, 0xFE0F), (0x1F000, 0x1FAFF)];
    let mut runs: Vec<(char, char)> = Vec::new();
    let taken = EMOJI_BLOCKS.iter().flat_map(|&(first, last)| (first..=last).filter_map(char::from_u32));
    for c in taken.filter(|c| is_reaction(&c.to_string())) {
        match runs.last_mut() {
            Some((_, last)) if u32::from(*last) + 1 == u32::from(c) => *last = c,
            _ => runs.push((c, c)),
        }
    }
    let class: String = runs
        .iter()
        .map(|&(first, last)| if first == last { first.to_string() } else { format!("{first}-{last}") })
        .collect();
    format!("^ *[{class}]{{0,{MAX_REACTION_CHARS}}} *$")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxAct {
    React,
    Edit,
    Delete,
    Call,
}

impl SandboxSayRequest {
    /// `contact` writes `text`.
    pub fn text(contact: impl Into<String>, text: impl Into<String>) -> SandboxSayRequest {
        SandboxSayRequest {
            contact: contact.into(),
            text: text.into(),
            media: None,
            from_operator: false,
            reply_to: None,
        }
    }
}

/// A file a simulated contact sends: its bytes given first (`POST /media`),
/// and what its message says of it, as a phone's would.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxMedia {
    pub kind: super::MediaKind,
    /// From `POST /media`.
    pub upload_id: Uuid,
    /// The type the message says (it may lie, as a real one may); absent:
    /// what the bytes are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// A document's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// How long a voice note, audio or video plays, as the message says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
    /// The first this many fetches of it fail, as on a bad network.
    #[serde(default)]
    pub fail_downloads: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SandboxSayResponse {
    /// The conversation the message reached, or null when the contact has no
    /// live conversation (the message is logged and ignored, as on WhatsApp).
    pub instance_id: Option<Uuid>,
    pub contact: String,
    /// relay is offline from WhatsApp (`relay sandbox offline`): WhatsApp
    /// holds the message until relay comes back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// One message relay sent to a contact on the sandbox channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboxEntry {
    pub contact: String,
    pub text: String,
    pub timestamp: DateTime<Utc>,
    /// The sandbox's id for the message (as WhatsApp's message id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The file sent, when it is one (`text` is then its caption, or empty).
    /// The outbox keeps what it was, not a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<OutboxMedia>,
}

/// A file relay sent on the sandbox, as the contact's phone got it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboxMedia {
    /// `photo` or `document`.
    pub kind: super::MediaKind,
    pub mime: String,
    pub bytes: u64,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
    /// The name the contact sees.
    pub file_name: String,
}

/// What a simulated phone does: `relay sandbox offline|online|read +NUMBER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhoneAction {
    /// The phone goes offline: messages to it stay `sent`, held.
    Offline,
    /// The phone comes back: what it held is delivered.
    Online,
    /// The contact reads every message their phone has.
    Read,
}

/// `POST /sandbox/phone`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhoneRequest {
    pub contact: String,
    pub action: PhoneAction,
}

/// A simulated phone after an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PhoneResponse {
    pub contact: String,
    /// Whether it receives messages now.
    pub online: bool,
    /// Messages this action delivered (`online`).
    pub delivered: u32,
    /// Messages this action marked read (`read`, or `online` never).
    pub read: u32,
    /// Messages it holds undelivered (offline).
    pub held: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OutboxQuery {
    /// Only messages to this contact.
    pub contact: Option<String>,
}

/// `PUT /sandbox/lock`: WhatsApp's reach-out lock, simulated. While it
/// holds, the sandbox refuses a message to a contact that has neither
/// written nor received one with error 463, as WhatsApp does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxLockRequest {
    /// How long it holds: "90s", "30m", "2h", "1d".
    pub lasts: String,
    /// When true, asking about the lock says none holds (WhatsApp does not
    /// always tell): only the refused message (463) reveals it.
    #[serde(default)]
    pub unreported: bool,
}

/// The sandbox's simulated reach-out lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SandboxLockState {
    pub locked: bool,
    /// When it ends (null when unlocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// Whether asking about it tells (see `SandboxLockRequest::unreported`).
    pub reported: bool,
}

/// Sandbox only: relay's own (simulated) link to WhatsApp goes away or
/// comes back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxLinkRequest {
    pub online: bool,
    /// Coming back: the catch-up of what contacts wrote meanwhile does not
    /// finish (what was held is lost, and the conversations live then are
    /// marked as maybe missing messages).
    #[serde(default)]
    pub cut_short: bool,
}

/// Where relay's simulated link stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SandboxLinkResponse {
    pub online: bool,
    /// Contacts' messages WhatsApp holds for relay.
    pub held: usize,
    /// Handed over by the catch-up that just ran.
    pub delivered: usize,
    /// Lost by a catch-up cut short.
    pub lost: usize,
    /// The span of the last catch-up cut short, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<super::MissedSpan>,
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A reaction written as the schema's pattern says is taken.
        #[test]
        fn every_reaction_the_pattern_matches_is_taken(
            emoji in proptest::string::string_regex(reaction_pattern().trim_start_matches('^').trim_end_matches('$')).unwrap(),
        ) {
            proptest::prop_assert!(regex::Regex::new(&reaction_pattern()).unwrap().is_match(&emoji));
            proptest::prop_assert!(is_reaction(emoji.trim()), "{:?}", emoji);
        }
    }

    #[test]
    fn the_reaction_pattern_takes_emoji_and_refuses_words() {
        let pattern = regex::Regex::new(&reaction_pattern()).unwrap();
        for emoji in ["", "   ", " 👍 ", "👍", "❤\u{FE0F}", "👨\u{200D}👩\u{200D}👧", "🎉🎉", "✅"] {
            assert!(pattern.is_match(emoji) && is_reaction(emoji.trim()), "{emoji:?}");
        }
        for words in ["a", "ok", "1", "👍 👍", "🅰", "①", "👍".repeat(MAX_REACTION_CHARS + 1).as_str()] {
            assert!(!pattern.is_match(words), "{words:?}");
        }
    }
}
