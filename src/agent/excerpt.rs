//! A provider's error, cut to what an operator needs: a short excerpt with
//! no text of the request in it. Some servers echo the whole prompt in an
//! error body (a llama-cpp 500 copied the system prompt four times, 9,776
//! characters); the error goes into `intervention_reason`, `model_error`
//! and relay.log, and the prompt holds the contact's words and the operator's
//! instructions, so it must not. Nor may the API key: a server that answers
//! "Incorrect API key provided: Bearer sk-..." would put it on every screen
//! and in every file relay writes, so the key is removed wherever it stands.

use std::collections::HashSet;

/// The most characters of an error kept.
pub const MAX_CHARS: usize = 300;

/// Runs this long (in characters) shared with the request are removed: long
/// enough that an error's own words do not match by chance.
const RUN: usize = 20;

/// Stands where request text was removed.
const REMOVED: &str = "[request text removed]";

/// Stands where a secret was.
const SECRET_REMOVED: &str = "[key removed]";

/// `error` with every `secrets` (the API key) removed wherever it stands,
/// without any run of [`RUN`] characters that is in one of `request_texts`
/// (as written, or JSON-escaped as a body would carry it), cut to
/// [`MAX_CHARS`] characters.
pub fn excerpt(error: &str, request_texts: &[&str], secrets: &[&str]) -> String {
    let secrets: Vec<&str> = secrets.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect();
    let mut error = error.to_string();
    for secret in &secrets {
        error = error.replace(secret, SECRET_REMOVED);
    }
    let cut = cut(&error, request_texts);
    // A key so short that what replaced it spells it again (a test's "r"):
    // nothing of the error then, rather than the key (nor even this
    // sentence, if the key is one of its letters).
    let shows = |text: &str| secrets.iter().any(|secret| text.contains(secret));
    let instead = "the provider's answer repeated the API key; it is not shown";
    match (shows(&cut), shows(instead)) {
        (false, _) => cut,
        (true, false) => instead.into(),
        (true, true) => String::new(),
    }
}

/// `error` without the runs it shares with `request_texts`, cut short.
fn cut(error: &str, request_texts: &[&str]) -> String {
    let chars: Vec<char> = error.chars().collect();
    let mut removed = vec![false; chars.len()];
    if chars.len() >= RUN {
        let windows = windows(request_texts);
        for start in 0..=chars.len() - RUN {
            let window: String = chars[start..start + RUN].iter().collect();
            if windows.contains(&window) {
                removed[start..start + RUN].iter_mut().for_each(|r| *r = true);
            }
        }
    }
    let mut out = String::new();
    let mut in_removed = false;
    for (c, gone) in chars.iter().zip(&removed) {
        if *gone {
            if !in_removed {
                out.push_str(REMOVED);
            }
        } else {
            out.push(*c);
        }
        in_removed = *gone;
    }
    match out.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}… (cut)", &out[..cut]),
        None => out,
    }
}

/// Every run of [`RUN`] characters of the texts, as written and JSON-escaped.
fn windows(texts: &[&str]) -> HashSet<String> {
    let mut windows = HashSet::new();
    for text in texts {
        let escaped = serde_json::to_string(text).unwrap_or_default();
        for form in [text.to_string(), escaped.trim_matches('"').to_string()] {
            let chars: Vec<char> = form.chars().collect();
            windows.extend(chars.windows(RUN).map(|w| w.iter().collect::<String>()));
        }
    }
    windows
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_short_error_of_its_own_words_stays_as_it_is() {
        let error = "Invalid status code 401 with message: Incorrect API key provided";
        assert_eq!(excerpt(error, &["You are relay's agent.", "Hi there"], &[]), error);
    }

    proptest! {
        /// A key the server echoes (bare, as a bearer token, in JSON, once or
        /// often, long or short) never comes through.
        #[test]
        fn an_echoed_key_never_comes_through(
            key in "[A-Za-z0-9_-]{1,80}",
            before in "[A-Za-z :]{0,40}",
            copies in 1usize..4,
        ) {
            let body = format!(
                "Invalid status code 401 with message: {before}{{\"error\": \"Incorrect API key provided: Bearer {}\"}}",
                key.repeat(copies)
            );
            let cut = excerpt(&body, &["You are relay."], &[&key]);
            prop_assert!(!cut.contains(&key), "{}", cut);
        }

        /// A huge body that echoes the prompt (as written, or JSON-escaped)
        /// comes out short and with no run of the prompt in it.
        #[test]
        fn an_echoed_prompt_never_comes_through(
            prompt in "[A-Za-z0-9 ,.:'\"\n]{40,2000}",
            contact in "[A-Za-z ?!]{20,200}",
            copies in 1usize..5,
            escaped in any::<bool>(),
        ) {
            let echo = |text: &str| if escaped { serde_json::to_string(text).unwrap() } else { text.to_string() };
            let body = format!(
                "Invalid status code 500 with message: {{\"error\": {{\"code\": 500, \"message\": \"{}\", \"user\": {}}}}}",
                echo(&prompt).repeat(copies),
                echo(&contact),
            );
            let cut = excerpt(&body, &[&prompt, &contact], &[]);
            prop_assert!(cut.chars().count() <= MAX_CHARS + "… (cut)".chars().count(), "{}", cut);
            prop_assert!(cut.starts_with("Invalid status code 500"));
            for text in [&prompt, &contact] {
                let chars: Vec<char> = text.chars().collect();
                for window in chars.windows(RUN) {
                    let window: String = window.iter().collect();
                    prop_assert!(!cut.contains(&window), "{:?} is in {:?}", window, cut);
                }
            }
        }
    }
}
