//! The rules of an answer's words, as plain functions: where a quote is in
//! what the contact wrote ([`quoted_piece`]), whether an answer rests on its
//! quote ([`rests_on`]), whether it copies relay's own instructions
//! ([`copies_instructions`]), and whether a message the agent wrote repeats
//! or states an answer ([`repeats`], [`states`]). The actor applies them
//! when the agent marks a todo (`actor/marks.rs`).

pub(crate) use crate::grounding::contains_words;

/// An answer of this many words or more is a statement of its own ("The
/// order is cancelled."); a shorter one is a fact a confirmation naturally
/// repeats ("Friday", "after 3pm").
const STATEMENT_WORDS: usize = 3;

/// The answer's words, normalised, if it is a statement.
fn statement(answer: &str) -> Option<String> {
    let answer = crate::courtesy::normalise(answer);
    (answer.split(' ').filter(|w| !w.is_empty()).count() >= STATEMENT_WORDS).then_some(answer)
}

/// Whether `message`, written before `answer` was recorded, holds it whole
/// (case, spacing and punctuation aside): the words were the model's before
/// they were an answer.
pub(crate) fn repeats(message: &str, answer: &str) -> bool {
    statement(answer).is_some_and(|answer| contains_words(&crate::courtesy::normalise(message), &answer))
}

/// Whether `message`, written after `answer` was recorded, says it as a
/// sentence of its own ("The order is cancelled. Anything else?"). A
/// confirmation that repeats an answer inside a sentence of its own
/// ("Perfect: Friday around 3pm.") does not.
pub(crate) fn states(message: &str, answer: &str) -> bool {
    let sentences = message.split(['.', '!', '?', ';', '\n']).map(crate::courtesy::normalise);
    statement(answer).is_some_and(|answer| sentences.into_iter().any(|sentence| sentence == answer))
}

/// The run of `message`'s words that reads as `wanted` (normalised words,
/// see [`crate::courtesy::normalise`]), as the contact wrote it.
pub(crate) fn quoted_piece(message: &str, wanted: &[String]) -> Option<String> {
    if wanted.iter().all(|w| w.is_empty()) {
        return None;
    }
    let words: Vec<&str> = message.split_whitespace().collect();
    // Each normalised token, with the message word it comes from.
    let tokens: Vec<(usize, String)> = words
        .iter()
        .enumerate()
        .flat_map(|(n, w)| {
            let normalised = crate::courtesy::normalise(w);
            normalised.split(' ').filter(|t| !t.is_empty()).map(|t| (n, t.to_string())).collect::<Vec<_>>()
        })
        .collect();
    let start = tokens.windows(wanted.len()).position(|run| run.iter().map(|(_, t)| t).eq(wanted.iter()))?;
    let (first, last) = (tokens[start].0, tokens[start + wanted.len() - 1].0);
    Some(words[first..=last].join(" "))
}

/// Words of 4 letters or more that say nothing of an answer by themselves,
/// in the languages relay's agent is rated in. Sharing one with the quote
/// is no sign that the answer rests on it.
pub(crate) const FUNCTION_WORDS: &[&str] = &[
    // English
    "what", "what's", "that", "that's", "this", "these", "those", "with", "they", "they're", "them", "their", "there",
    "then", "than", "have", "has", "from", "your", "yours", "will", "would", "could", "should", "shall", "been",
    "being", "were", "when", "where", "which", "while", "about", "just", "also", "only", "into", "onto", "some",
    "here", "does", "doesn't", "don't", "didn't", "done", "like", "very", "want", "need", "know", "okay", "sure",
    "please", "thanks", "thank", "hello", "it's", "i'll", "i'm", "let's", "can't", "won't", "because", "maybe",
    "every", "other", "more", "most", "much", "many", "well", "yeah", // Spanish
    "para", "pero", "como", "esto", "esta", "este", "estos", "estas", "todo", "toda", "todos", "bien", "sobre",
    "cuando", "donde", "porque", "tengo", "tiene", "hola", "gracias", "quiero", "necesito", "puedo", "puede", "desde",
    "hasta", "entre", "tambien", "muy", "nada", "algo", "pues", "si",
];

/// Whether `answer` rests on `quote`, the words given as its evidence: each
/// number in it is in the quote (a date or an amount is never the model's
/// to add), and it shares with the quote a word of 4 letters or more that
/// is not a [`FUNCTION_WORDS`] one, or holds no word the quote lacks
/// ("yes", "3pm"). Else why not, for the model. Words compare as
/// [`crate::courtesy::normalise`] leaves them.
pub(crate) fn rests_on(answer: &str, quote: &str) -> Result<(), String> {
    let quoted = crate::courtesy::normalise(quote);
    let quoted: std::collections::HashSet<&str> = quoted.split(' ').collect();
    let answer = crate::courtesy::normalise(answer);
    let words: Vec<&str> = answer.split(' ').filter(|w| !w.is_empty()).collect();
    let number = |w: &str| w.chars().any(char::is_numeric);
    if let Some(added) = words.iter().find(|w| number(w) && !quoted.contains(*w)) {
        return Err(format!("{added} is not in it"));
    }
    let shared = words.iter().filter(|w| says_something(w)).any(|w| quoted.contains(w));
    match shared || words.iter().all(|w| quoted.contains(w)) {
        true => Ok(()),
        false => Err("they share no word".into()),
    }
}

/// Whether a word says something by itself: 4 letters or more, no digit,
/// and not one of the [`FUNCTION_WORDS`].
fn says_something(word: &str) -> bool {
    word.chars().count() >= 4 && !word.chars().any(char::is_numeric) && !FUNCTION_WORDS.contains(&word)
}

/// A run of [`prompt::INSTRUCTION_RUN_WORDS`] words of `answer`, with a
/// word that says something by itself, that relay's own instructions to
/// the model hold and `quote` does not: the answer copies relay, not the
/// contact. (A contact may happen to say what relay's prompt says; then
/// their quote holds it.)
///
/// [`prompt::INSTRUCTION_RUN_WORDS`]: crate::agent::prompt::INSTRUCTION_RUN_WORDS
pub(crate) fn copies_instructions(answer: &str, quote: &str) -> Option<String> {
    use crate::agent::prompt::{INSTRUCTION_RUN_WORDS, instructions_hold};
    let quoted = format!(" {} ", crate::courtesy::normalise(quote));
    let answer = crate::courtesy::normalise(answer);
    let words: Vec<&str> = answer.split(' ').filter(|w| !w.is_empty()).collect();
    words
        .windows(INSTRUCTION_RUN_WORDS)
        .filter(|run| run.iter().any(|w| says_something(w)))
        .map(|run| run.join(" "))
        .find(|run| instructions_hold(run) && !quoted.contains(&format!(" {run} ")))
}

#[cfg(test)]
mod tests {
    use super::{contains_words, copies_instructions, quoted_piece, repeats, rests_on, states};
    use crate::courtesy::normalise;
    use proptest::prelude::*;

    fn wanted(quote: &str) -> Vec<String> {
        crate::courtesy::normalise(quote).split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_quote_is_found_as_the_contact_wrote_it() {
        let said = "Hi! Friday works, around 3pm. Thanks";
        assert_eq!(quoted_piece(said, &wanted("friday WORKS")), Some("Friday works,".into()));
        assert_eq!(quoted_piece(said, &wanted("Saturday")), None);
        assert_eq!(quoted_piece(said, &wanted("!!")), None, "no words, nothing cited");
    }

    proptest! {
        /// Any run of a message's words, in other case and with other
        /// punctuation around it, is found, and gives back those words as
        /// written; a word the message does not have is never found.
        #[test]
        fn any_run_of_the_words_is_found_and_nothing_else(
            words in proptest::collection::vec("[a-zA-Z0-9]{1,8}[,.!?]?", 1..20),
            from in any::<prop::sample::Index>(),
            len in 1usize..5,
        ) {
            let message = words.join(" ");
            let start = from.index(words.len());
            let end = (start + len).min(words.len());
            let quote = words[start..end].join("  ").to_uppercase();
            let piece = quoted_piece(&message, &wanted(&quote)).expect("a run of its own words");
            prop_assert_eq!(crate::courtesy::normalise(&piece), crate::courtesy::normalise(&quote));
            prop_assert!(message.contains(&piece));
            prop_assert_eq!(quoted_piece(&message, &wanted("zzzzzzzzz")), None);
        }

        /// What a turn wrote holds any run of its whole words, in any case
        /// and punctuation (the answer is then the model's own); never a
        /// word it does not have, nor a word cut short ("friday" is not in
        /// "fridays").
        #[test]
        fn what_the_turn_wrote_holds_its_runs_of_whole_words(
            words in proptest::collection::vec("[a-zA-Z0-9]{2,8}[,.!?]?", 1..20),
            from in any::<prop::sample::Index>(),
            len in 1usize..5,
        ) {
            let sent = normalise(&words.join(" "));
            let start = from.index(words.len());
            let run = words[start..(start + len).min(words.len())].join(" ").to_uppercase() + "!";
            prop_assert!(contains_words(&sent, &normalise(&run)));
            prop_assert!(!contains_words(&sent, "zzzzzzzzz"));
            let cut = normalise(&words[start]);
            let cut = &cut[..cut.len() - 1];
            prop_assert_eq!(contains_words(&sent, cut), sent.split(' ').any(|w| w == cut));
        }
    }

    proptest! {
        /// A message repeats an answer of three words or more that it holds
        /// whole, however it is cased and punctuated around it, and states
        /// it when the answer is a sentence of its own; neither holds for an
        /// answer of one or two words (a confirmation repeats "Friday"), nor
        /// for one the message does not hold.
        #[test]
        fn a_message_repeats_an_answer_it_holds_and_states_one_it_says_as_a_sentence(
            before in proptest::collection::vec("[a-zA-Z0-9]{1,8}[,.!?]?", 0..6),
            answer in proptest::collection::vec("[a-zA-Z0-9]{1,8}", 1..7),
            after in proptest::collection::vec("[a-zA-Z0-9]{1,8}[,.!?]?", 0..6),
            lead in "[a-zA-Z]{1,8}",
        ) {
            let said = answer.join(" ").to_uppercase();
            let recorded = answer.join(", ");
            let statement = answer.len() >= 3;
            let within = [before.join(" "), format!("{lead}: {said},"), after.join(" ")].join(" ");
            prop_assert_eq!(repeats(&within, &recorded), statement);
            prop_assert!(!states(&within, &recorded), "inside a sentence of its own: {}", within);
            let alone = [before.join(" ") + ".", format!("{said}!"), after.join(" ")].join(" ");
            prop_assert_eq!(states(&alone, &recorded), statement);
            prop_assert_eq!(repeats(&alone, &recorded), statement);
            let longer = format!("{recorded} zzzzzzzzz");
            prop_assert!(!repeats(&alone, &longer) && !states(&alone, &longer));
        }
    }

    #[test]
    fn what_a_small_model_sent_states_what_it_recorded() {
        let sent = "The order is cancelled. Please let me know if you need anything else.";
        assert!(states(sent, "The order is cancelled.") && repeats(sent, "The order is cancelled."));
        assert!(!repeats("Great, Friday it is!", "Friday"), "a fact a confirmation repeats");
        assert!(!repeats("Great, Friday after 3pm then!", "Friday works, any time after 3pm"));
        // A confirmation of what was recorded is not the answer said anew.
        let confirmed = "Perfect: Friday around 3pm. Thank you, see you then!";
        assert!(!states(confirmed, "Friday, around 3pm") && repeats(confirmed, "Friday, around 3pm"));
    }

    proptest! {
        /// An answer made of the quote's own words rests on it.
        #[test]
        fn an_answer_in_the_quotes_words_rests_on_it(quote in "[A-Za-z0-9 ,.:']{1,60}", picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..6)) {
            let words: Vec<String> = normalise(&quote).split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect();
            prop_assume!(!words.is_empty());
            let answer: Vec<&str> = picks.iter().map(|i| words[i.index(words.len())].as_str()).collect();
            prop_assert!(rests_on(&answer.join(", "), &quote).is_ok(), "{:?} on {:?}", answer, quote);
        }

        /// A number the quote lacks never rests on it, whatever else the
        /// answer shares with it.
        #[test]
        fn an_answer_with_a_number_the_quote_lacks_does_not_rest_on_it(quote in "[A-Za-z ,.]{0,60}", n in 0u32..100_000, rest in "[A-Za-z ]{0,30}") {
            let answer = format!("{quote} {rest} {n}");
            let why = rests_on(&answer, &quote).unwrap_err();
            prop_assert!(why.contains(&n.to_string()), "{}", why);
        }

        /// Nor does an answer sharing no word with it.
        #[test]
        fn an_answer_sharing_no_word_with_the_quote_does_not_rest_on_it(quote in "[a-m ]{1,40}", answer in "[n-z]{1,8}( [n-z]{1,8}){0,4}") {
            prop_assert!(rests_on(&answer, &quote).is_err());
        }

        /// Words that say nothing by themselves ("what", "with", "para")
        /// shared with the quote are no evidence: an answer of other words
        /// does not rest on it, however many of them both hold.
        #[test]
        fn sharing_only_words_that_say_nothing_is_no_evidence(
            common in proptest::collection::vec(prop::sample::select(super::FUNCTION_WORDS.to_vec()), 1..4),
            quote in "[a-m]{1,8}( [a-m]{1,8}){0,4}",
            answer in "[n-z]{1,8}( [n-z]{1,8}){0,4}",
        ) {
            let common = common.join(" ");
            let quote = format!("{quote}, {common}?");
            let (before, after) = (format!("{common} {answer}"), format!("{answer} {common}."));
            prop_assert!(rests_on(&before, &quote).is_err(), "{}", quote);
            prop_assert!(rests_on(&after, &quote).is_err(), "{}", quote);
        }
    }

    proptest! {
        /// Any run of relay's own instructions (ten words or fewer, from
        /// any of its texts, in other case and punctuation, with words of
        /// the model's around it) recorded as an answer is caught, unless
        /// the quote holds it; the quote's own words never are.
        #[test]
        fn an_answer_that_copies_relays_instructions_is_caught_unless_the_contact_wrote_it(
            text in prop::sample::select(crate::agent::prompt::instructions().to_vec()),
            at in any::<prop::sample::Index>(),
            len in 4..10usize,
            around in "[n-z]{1,8}( [n-z]{1,8}){0,2}",
            quote in "[a-m]{1,8}( [a-m]{1,8}){0,6}",
        ) {
            let words: Vec<String> = normalise(&text).split(' ').map(str::to_string).collect();
            let start = at.index(words.len().saturating_sub(len).max(1));
            let run = &words[start..(start + len).min(words.len())];
            let telling = run.windows(crate::agent::prompt::INSTRUCTION_RUN_WORDS)
                .any(|w| w.iter().any(|w| super::says_something(w)));
            prop_assume!(telling);
            let copied = format!("{around}: {}.)", run.join(", ").to_uppercase());
            prop_assert!(copies_instructions(&copied, &quote).is_some(), "{copied:?}");
            let theirs = format!("{quote} {} {around}", run.join(" "));
            prop_assert_eq!(copies_instructions(&copied, &theirs), None);
            prop_assert_eq!(copies_instructions(&quote, &quote), None);
        }
    }

    #[test]
    fn relays_note_recorded_as_an_answer_is_caught() {
        // It shares "answer" with the quote.
        let copied = "record what they told you with mark_todo_item, and answer with send_message.)";
        let quote = "Before I answer: am I talking to a real person or a bot?";
        assert!(rests_on(copied, quote).is_ok(), "a shared word alone lets it through");
        assert_eq!(copies_instructions(copied, quote).as_deref(), Some("record what they told"));
        for answer in ["Friday, in the afternoon", "Thursday", "yes, that's me", "a real person"] {
            assert_eq!(copies_instructions(answer, ""), None, "{answer}");
        }
    }

    #[test]
    fn answers_rest_on_the_words_they_come_from() {
        assert!(rests_on("Friday, in the afternoon", "friday WORKS").is_ok());
        assert!(rests_on("3pm", "around 3pm").is_ok());
        assert!(rests_on("yes", "Yes, someone is home").is_ok());
        let invented = "The delivery day for order 1042 is Friday 2026-11-27.";
        assert_eq!(rests_on(invented, "Fine. Friday works."), Err("1042 is not in it".into()));
        assert_eq!(
            rests_on("The delivery day is Friday", "Before I answer: am I talking to a bot?"),
            Err("they share no word".into())
        );
        // relay's own instruction beside the contact's greeting: only "what"
        // and "you" in common.
        let instruction = "record what they told you with mark_todo_item, and answer with send_message.)";
        assert_eq!(rests_on(instruction, "Hi, yes that's me. What do you need?"), Err("they share no word".into()));
    }
}
