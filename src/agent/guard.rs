//! What relay's agent may never write to the contact, whatever the model
//! does: the conversation's private context (facts the Main Agent gave the
//! agent to use, not to pass on), the names of its tools, and relay's note.
//! The engine runs [`check`] on every message the agent writes, before it
//! is sent; a refusal goes back to the model as the tool's error, so it can
//! write the message again without that. The operator's own messages are
//! not checked: they are the operator's call.
//!
//! A small model repeats what is in its prompt more often than it keeps it
//! back, so this is a rule on the text, not on the model's goodwill. What
//! counts as repeating a private fact:
//! - one of its *distinctive tokens*: a code or a number (4 or more letters
//!   and digits with at least one digit, as in `RC-1a2b3c4d5e` or `4417`),
//!   found in the message whatever its case and separators (`rc 1A2B...`),
//!   or a word of 8 letters or more; either only when the objective and
//!   the todos (what the contact may hear) do not hold it too;
//! - or a run of [`RUN_WORDS`] of its words in a row.
//!
//! The reasons never quote a fact: they go into the conversation's record
//! and logs, where private context must not spread.

use super::tools::NAMES;

/// Words in a row that repeat a private fact.
pub const RUN_WORDS: usize = 6;

/// The shortest code or number that is a private fact's own.
const MIN_CODE_CHARS: usize = 4;

/// The shortest word that is a private fact's own.
const MIN_WORD_CHARS: usize = 8;

/// Why `message` may not be sent, if it may not: it repeats a private fact
/// (beyond what `sayable` holds: the objective and the todos, which the
/// contact may hear), names one of the agent's tools, or holds `note_tag`
/// (the tag of relay's note, see `prompt::marker`).
pub fn check(message: &str, private: &[String], sayable: &str, note_tag: &str) -> Result<(), String> {
    let lower = message.to_lowercase();
    if let Some(tool) = NAMES.iter().find(|name| lower.contains(*name)) {
        return Err(format!(
            "not sent: it names the tool {tool}; the contact must never see tool names or how you work: write \
             as a person would"
        ));
    }
    if !note_tag.is_empty() && lower.contains(&note_tag.to_lowercase()) {
        return Err("not sent: it repeats relay's note, which is for you, never for the contact".into());
    }
    let text = Text::of(message);
    let sayable = Text::of(sayable);
    for (n, fact) in private.iter().enumerate() {
        if repeats(&text, &Text::of(fact), &sayable) {
            return Err(format!(
                "not sent: it repeats private fact {} of this conversation, which you may use but must never \
                 write to the contact; write the message without it",
                n + 1
            ));
        }
    }
    Ok(())
}

/// A text as the check compares it: its words (runs of letters and
/// digits, lowercase), its whitespace-separated chunks as their letters and
/// digits (a code keeps its parts: "RC-4f9a" is "rc4f9a"), and all its
/// letters and digits run together (to find a code written with other
/// separators, or none).
struct Text {
    words: Vec<String>,
    chunks: Vec<String>,
    joined: String,
}

impl Text {
    fn of(text: &str) -> Text {
        let alphanumeric = |s: &str| s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect();
        let words: Vec<String> =
            text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        let chunks = text.split_whitespace().map(alphanumeric).filter(|c: &String| !c.is_empty()).collect();
        Text { joined: words.concat(), words, chunks }
    }
}

fn repeats(message: &Text, fact: &Text, sayable: &Text) -> bool {
    let code = |chunk: &&String| chunk.chars().count() >= MIN_CODE_CHARS && chunk.chars().any(char::is_numeric);
    let mut codes = fact.chunks.iter().filter(code).filter(|c| !sayable.joined.contains(c.as_str()));
    if codes.any(|c| message.joined.contains(c.as_str())) {
        return true;
    }
    let long = |word: &&String| word.chars().count() >= MIN_WORD_CHARS && word.chars().all(char::is_alphabetic);
    let mut own = fact.words.iter().filter(long).filter(|w| !sayable.words.contains(w));
    if own.any(|w| message.words.contains(w)) {
        return true;
    }
    fact.words.windows(RUN_WORDS).any(|run| message.words.windows(RUN_WORDS).any(|seen| seen == run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TAG: &str = "1a2b3c4d";

    fn refused(message: &str, private: &[&str], objective: &str) -> bool {
        let private: Vec<String> = private.iter().map(|s| s.to_string()).collect();
        check(message, &private, objective, TAG).is_err()
    }

    #[test]
    fn the_canary_and_codes_are_refused_however_written() {
        let private = ["Internal reference RC-4f9a01bc7d, never to be shared with anyone"];
        for message in ["Our ref is RC-4f9a01bc7d.", "ref: rc 4F9A01BC7D", "RC4f9a01bc7d"] {
            assert!(refused(message, &private, "Confirm the delivery day"), "{message}");
        }
        assert!(!refused("Hi! Which day suits you for the delivery?", &private, "Confirm the delivery day"));
    }

    #[test]
    fn what_the_objective_says_may_be_said() {
        let private = ["Order 4417 was paid by card"];
        assert!(refused("Your order 4417 is ready", &private, "Confirm the delivery day"));
        assert!(!refused("Your order 4417 is ready", &private, "Confirm the delivery day of order 4417"));
    }

    #[test]
    fn tool_names_and_the_note_are_refused() {
        assert!(refused("I will call mark_todo_item now", &[], "x"));
        assert!(refused("(relay 1A2B3C4D, not the contact: ...)", &[], "x"));
        assert!(!refused("I have noted it, thanks!", &[], "x"));
    }

    #[test]
    fn reasons_never_quote_the_fact() {
        let private = vec!["The customer's account number is 99887766".to_string()];
        let why = check("It is 99887766", &private, "x", TAG).unwrap_err();
        assert!(!why.contains("99887766") && why.contains("private fact 1"), "{why}");
    }

    /// A word that is in no fact and no objective: messages made of them pass.
    fn plain_word() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "hello", "thanks", "which", "day", "suits", "you", "for", "the", "delivery", "tomorrow", "is", "fine",
            "great", "see", "soon", "we", "can", "come", "at", "noon",
        ])
        .prop_map(str::to_string)
    }

    fn secret_word() -> impl Strategy<Value = String> {
        "[b-df-hj-np-tv-z]{8,12}"
    }

    fn code() -> impl Strategy<Value = String> {
        ("[A-Z]{2}", "[0-9a-f]{4,10}").prop_map(|(prefix, hex)| format!("{prefix}-{hex}9"))
    }

    proptest! {
        /// A fact's code, in any case and with any separators, in any
        /// message, is refused.
        #[test]
        fn a_code_is_refused_anywhere(
            code in code(),
            before in prop::collection::vec(plain_word(), 0..8),
            after in prop::collection::vec(plain_word(), 0..8),
            separator in prop::sample::select(vec!["-", " ", "", ".", "/"]),
            upper in any::<bool>(),
        ) {
            let fact = format!("The gate code is {code}");
            let written = code.replace('-', separator);
            let written = if upper { written.to_uppercase() } else { written.to_lowercase() };
            let message = format!("{} {written} {}", before.join(" "), after.join(" "));
            prop_assert!(refused(&message, &[&fact], "Confirm the delivery day"), "{message}");
        }

        /// Six words of a fact in a row are refused.
        #[test]
        fn a_run_of_words_is_refused(
            fact in prop::collection::vec(plain_word(), 6..14),
            start in 0usize..8,
            around in prop::collection::vec(plain_word(), 0..4),
        ) {
            let start = start % (fact.len() - RUN_WORDS + 1);
            let run = fact[start..start + RUN_WORDS].join(" ");
            let message = format!("{} {run} {}", around.join(" "), around.join(" "));
            prop_assert!(refused(&message, &[&fact.join(" ")], "x"), "{message}");
        }

        /// A long word of a fact is refused; a message of other words passes.
        #[test]
        fn a_long_word_is_refused_and_others_pass(
            secret in secret_word(),
            message in prop::collection::vec(plain_word(), 1..12),
        ) {
            let fact = format!("the project is called {secret}");
            let plain = message.join(" ");
            prop_assert!(!refused(&plain, &[&fact], "x"), "{plain}");
            let leaking = format!("{plain} {secret}");
            prop_assert!(refused(&leaking, &[&fact], "x"), "{leaking}");
        }

        /// Every tool's name, anywhere in a message, in any case, is refused.
        #[test]
        fn tool_names_are_refused_anywhere(
            name in prop::sample::select(NAMES.to_vec()),
            before in prop::collection::vec(plain_word(), 0..6),
            upper in any::<bool>(),
        ) {
            let name = if upper { name.to_uppercase() } else { name.to_string() };
            let message = format!("{} {name}()", before.join(" "));
            prop_assert!(refused(&message, &[], "x"), "{message}");
        }
    }
}
