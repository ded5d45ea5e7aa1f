//! Courtesy: what the daemon itself enforces, whatever the model does, so
//! that writing first to someone costs neither them their evening nor the
//! operator their number.
//!
//! - [`quiet`]: quiet hours, in the contact's time. A first message or a
//!   follow-up due in them waits for their end; a reply to someone who just
//!   wrote, and the operator's own messages, go out.
//! - [`zone`]: the contact's time zone, from `--tz`, their number's country
//!   or `courtesy.default_tz`.
//! - [`first_contact`]: who is a new contact, WhatsApp's reach-out lock and
//!   the daily cap on first contacts, which hold a first message to a new
//!   contact (its file is `store::FirstContactBook`).
//! - [`optout`]: the do-not-contact list's entries (its file is
//!   `store::OptOutList`); [`is_opt_out`] checks a contact's whole
//!   message against the opt-out words.
//! - The disclosure line (`courtesy.disclosure`) that relay, not the model,
//!   puts before each conversation's first message: built when the
//!   conversation is created (`ConversationInstance::pending_disclosure`),
//!   sent with its first message by the actor (`engine/actor/sends.rs`).
//!
//! The settings are `config.json`'s `courtesy` section
//! (`config::CourtesySettings`).

pub mod first_contact;
pub mod optout;
pub mod quiet;
pub mod zone;

pub use first_contact::{FirstContacts, LockSource, ReachOutLock};
pub use optout::{OptOut, OptOutOverride, OptOutSource};
pub use quiet::QuietHours;
pub use zone::{ZoneSource, parse_zone, zone_of};

/// The default opt-out words: whole messages that can mean nothing else.
pub const DEFAULT_OPT_OUT_WORDS: &[&str] = &[
    "stop",
    "unsubscribe",
    "opt out",
    "no more messages",
    "stop messaging me",
    "do not contact me",
    "don't contact me",
    "baja",
    "parar",
    "no más mensajes",
    "no me escribas más",
    "no me escriba más",
    "no me contacten",
    "pare",
    "não quero mais mensagens",
];

/// A message as compared with opt-out words: [`fold`]ed, the punctuation,
/// symbols and emoji around and between its words dropped, one space
/// between words.
pub fn normalise(text: &str) -> String {
    let lowered = fold(text).replace(['\u{2019}', '\u{2018}'], "'");
    let words = lowered.split(|c: char| !(c.is_alphanumeric() || c == '\''));
    words.filter(|w| !w.trim_matches('\'').is_empty()).map(|w| w.trim_matches('\'')).collect::<Vec<_>>().join(" ")
}

/// Text as people mean it, whatever their keyboard: compatibility forms
/// made one (fullwidth "ＳＴＯＰ" is "STOP", "º" is "o"), accents dropped
/// ("más" is "mas"), lower case.
pub fn fold(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    use unicode_normalization::char::is_combining_mark;
    text.nfkd().filter(|c| !is_combining_mark(*c)).collect::<String>().to_lowercase()
}

/// Whether the contact's whole message is one of `words`: "STOP", "Baja.",
/// "no more messages!" are; "stop the delivery on Friday" is not.
pub fn is_opt_out(text: &str, words: &[String]) -> bool {
    let said = normalise(text);
    !said.is_empty() && words.iter().any(|w| normalise(w) == said)
}

/// Phrases that, somewhere in a message, ask relay to stop writing. They do
/// not end a conversation by themselves ("stop the delivery on Friday"
/// holds one); they are what lets the agent's `contact_opted_out` stand.
/// A model's opt-out that the contact's words do not back goes to a person
/// instead: a wrong one would silence the number for good.
pub const OPT_OUT_CUES: &[&str] = &[
    "stop",
    "unsubscribe",
    "opt out",
    "opt me out",
    "leave me alone",
    "go away",
    "not interested",
    "no more messages",
    "don't message",
    "do not message",
    "don't write",
    "do not write",
    "don't text",
    "do not text",
    "don't contact",
    "do not contact",
    "never contact",
    "never message",
    "never write",
    "remove me",
    "remove my number",
    "delete my number",
    "lose my number",
    "baja",
    "parar",
    "para ya",
    "no me escribas",
    "no me escriba",
    "no me contacten",
    "no me contactes",
    "no me molestes",
    "no me moleste",
    "déjame en paz",
    "no más mensajes",
    "no me interesa",
    "pare",
    "não quero mais",
    "me deixe em paz",
    "não me mande",
];

/// Whether `text` holds an opt-out word (`words`, the configured whole
/// messages) or one of the [`OPT_OUT_CUES`], as whole words anywhere in it:
/// "Please stop writing to me" does, "Put me through to a person" does not.
pub fn asks_to_stop(text: &str, words: &[String]) -> bool {
    let said = format!(" {} ", normalise(text));
    let holds = |phrase: &str| {
        let phrase = normalise(phrase);
        !phrase.is_empty() && said.contains(&format!(" {phrase} "))
    };
    words.iter().any(|w| holds(w)) || OPT_OUT_CUES.iter().any(|c| holds(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words() -> Vec<String> {
        DEFAULT_OPT_OUT_WORDS.iter().map(|w| w.to_string()).collect()
    }

    /// Any opt-out word, in any case, with punctuation, emoji and spaces
    /// around it.
    fn opt_out_message() -> impl Strategy<Value = String> {
        let decoration = prop::sample::select(vec!["", " ", ".", "!", "!!", " 🙏", "\n", "¡", "¿", "...", " :)"]);
        (prop::sample::select(DEFAULT_OPT_OUT_WORDS.to_vec()), decoration.clone(), decoration, any::<Vec<bool>>())
            .prop_map(|(word, before, after, upper)| {
                let cased: String = word
                    .chars()
                    .zip(upper.into_iter().chain(std::iter::repeat(false)))
                    .map(|(c, up)| if up { c.to_uppercase().collect::<String>() } else { c.to_string() })
                    .collect();
                format!("{before}{cased}{after}")
            })
    }

    /// `text` as typed on another keyboard: some letters fullwidth
    /// ("ＳＴＯＰ"), some accents added or dropped ("mas", "nâo").
    fn retyped(text: &str, fullwidth: &[bool], accents: &[bool]) -> String {
        use unicode_normalization::UnicodeNormalization;
        let bare: String = fold(text);
        bare.chars()
            .zip(fullwidth.iter().chain(std::iter::repeat(&false)))
            .zip(accents.iter().chain(std::iter::repeat(&false)))
            .map(|((c, wide), accent)| {
                let c =
                    if *accent && "aeiou".contains(c) { format!("{c}\u{301}").nfc().collect() } else { c.to_string() };
                match c.chars().next() {
                    Some(ch) if *wide && ch.is_ascii_graphic() && c.len() == 1 => {
                        char::from_u32(ch as u32 - 0x21 + 0xFF01).map_or(c, String::from)
                    }
                    _ => c,
                }
            })
            .collect()
    }

    proptest! {
        #[test]
        fn a_message_that_is_only_an_opt_out_word_is_an_opt_out(message in opt_out_message()) {
            prop_assert!(is_opt_out(&message, &words()), "{:?}", message);
        }

        /// However it is typed (fullwidth letters, accents added or left
        /// out), an opt-out word is one.
        #[test]
        fn an_opt_out_word_typed_fullwidth_or_with_other_accents_is_one(
            message in opt_out_message(), fullwidth in any::<Vec<bool>>(), accents in any::<Vec<bool>>(),
        ) {
            let typed = retyped(&message, &fullwidth, &accents);
            prop_assert!(is_opt_out(&typed, &words()), "{:?}", typed);
        }

        /// An opt-out word with other words around it is a sentence, not an
        /// opt-out: "stop the delivery on Friday".
        #[test]
        fn a_sentence_that_contains_an_opt_out_word_is_not_one(
            message in opt_out_message(),
            before in "([a-z]{2,8} ){0,3}",
            after in "( [a-z]{2,8}){1,4}",
        ) {
            let sentence = format!("{before}{message}{after}");
            let whole = normalise(&sentence);
            prop_assume!(!words().iter().any(|w| normalise(w) == whole));
            prop_assert!(!is_opt_out(&sentence, &words()), "{:?}", sentence);
        }
    }

    proptest! {
        /// Every opt-out word and cue, inside any sentence, in any case,
        /// lets the agent's opt-out stand.
        #[test]
        fn a_cue_anywhere_asks_to_stop(
            cue in prop::sample::select(OPT_OUT_CUES.iter().chain(DEFAULT_OPT_OUT_WORDS).copied().collect::<Vec<_>>()),
            before in "([A-Za-z]{2,8}[ ,.!]{1,2}){0,3}",
            after in "([ ,.!]{1,2}[A-Za-z]{2,8}){0,3}",
            upper in any::<bool>(),
        ) {
            let cue = if upper { cue.to_uppercase() } else { cue.to_string() };
            let sentence = format!("{before} {cue}{after}");
            prop_assert!(asks_to_stop(&sentence, &words()), "{:?}", sentence);
        }

        /// A sentence of words that only contain a cue ("stopover",
        /// "bajamar") or are one word of it never asks to stop: a cue
        /// counts only as whole words, all of them.
        #[test]
        fn words_that_only_contain_a_cue_do_not(
            said in prop::collection::vec(prop::sample::select(vec![
                "stopover", "stopped", "unstoppable", "bajamar", "parents", "pared", "person", "bot", "real",
                "human", "talk", "want", "please", "through", "friday", "delivery", "interested", "messages",
                "contact", "write", "alone", "remove", "number", "away",
            ]), 1..12),
        ) {
            let sentence = said.join(" ");
            prop_assert!(!asks_to_stop(&sentence, &words()), "{:?}", sentence);
        }
    }

    #[test]
    fn what_the_small_models_took_for_an_opt_out_is_not_one() {
        for said in [
            "I don't want to talk to a bot. Put me through to a real person, please.",
            "Before I answer: am I talking to a real person or a bot?",
            "Friday works. Is there a stopover on the way?",
        ] {
            assert!(!asks_to_stop(said, &words()), "{said}");
        }
        for said in ["Please stop writing to me.", "Not interested, thanks", "No me escribas más por favor"] {
            assert!(asks_to_stop(said, &words()), "{said}");
        }
    }

    #[test]
    fn the_issues_own_examples() {
        assert!(is_opt_out("STOP", &words()));
        assert!(is_opt_out("ＳＴＯＰ", &words()));
        assert!(is_opt_out("Stop.", &words()));
        assert!(is_opt_out("no mas mensajes", &words()), "written without its accent");
        assert!(is_opt_out("Baja.", &words()));
        assert!(!is_opt_out("stop the delivery on Friday", &words()));
        assert!(!is_opt_out("", &words()));
        assert!(!is_opt_out("🙏", &words()));
    }
}
