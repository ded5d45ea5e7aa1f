//! Contacts are phone numbers in E.164 ("+56912345678"): the one form relay
//! stores, compares and routes by, whatever form the user typed.

use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};

use serde::{Deserialize, Serialize};

/// A validated phone number in E.164 form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Contact(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContactError {
    #[error(
        "'{0}' is not a phone number in international format: start with + and the country code, e.g. +56912345678"
    )]
    NotInternational(String),
    /// Anything but digits and separators. Letters above all: a phone keypad
    /// maps them to digits, and relay must not guess which number was meant
    /// and write to a stranger.
    #[error(
        "'{input}' is not a phone number: {what} cannot be part of one (write + and the digits, with spaces, \
         dashes, dots or brackets between them if you like)"
    )]
    Character { input: String, what: String },
    #[error("'{input}' has {digits} digits; a phone number has at most {MAX_DIGITS}, country code included")]
    TooLong { input: String, digits: usize },
    #[error("'{0}' is too short to be a phone number")]
    TooShort(String),
    #[error("'{0}' is not a phone number: no country code starts its digits (country codes are like +1, +44, +56)")]
    UnknownCountryCode(String),
    #[error("'{input}' has {got} digits after the country code +{code}; phone numbers there have {expected}")]
    Length { input: String, code: u16, got: usize, expected: String },
    #[error("'{0}' is not a possible phone number: its digits do not read back as the same number")]
    Invalid(String),
}

/// Numbers [`Contact::parse`] accepted, by their digits. phonenumber
/// compiles its patterns again on most parses (its cache of 100 is smaller
/// than what one parse of a +1 or +44 number touches), 0.05 to 0.2 ms each,
/// and a daemon parses the same few numbers on every message.
static ACCEPTED: LazyLock<Mutex<HashMap<String, Contact>>> = LazyLock::new(Default::default);

/// How many accepted numbers are kept; past it they are forgotten at once.
const ACCEPTED_MAX: usize = 4096;

/// The characters a person writes between the digits of a phone number.
const SEPARATORS: &[char] = &[' ', '-', '.', '(', ')'];

/// E.164's longest number, country code included.
const MAX_DIGITS: usize = 15;

/// The shortest possible number in phonenumber's metadata, country code
/// included (Austria's +43 and 4 digits): no shorter one is accepted. A
/// test ties it to the metadata.
const MIN_DIGITS: usize = 6;

/// The JSON Schema `pattern` (anchored, in the syntax ECMA-262 and the
/// `regex` crate share) of the international format relay asks for: `+`,
/// then 6 to 15 digits with spaces, dashes, dots or brackets between them.
/// Every string it matches passes [`Contact::parse`]'s checks of form (the
/// characters, the number of digits); whether the number is possible in
/// its country (a known country code, a length used there) no pattern can
/// say, so a number that matches may still be refused for that. The API's
/// schemas (MCP's and `/openapi.json`'s) carry it.
pub fn pattern() -> String {
    let separators: String = SEPARATORS.iter().map(|c| regex::escape(&c.to_string())).collect();
    format!(r"^\+[0-9](?:[{separators}]*[0-9]){{{},{}}}$", MIN_DIGITS - 1, MAX_DIGITS - 1)
}

impl Contact {
    /// Accepts "+56 9 1234 5678", "+56-9-1234-5678", "+1 (415) 555.2671" or
    /// "+56912345678": a `+`, then digits with separators between them.
    /// Anything else (letters, `*`, `#`, an extension) is refused, naming
    /// the character.
    pub fn parse(input: &str) -> Result<Contact, ContactError> {
        let trimmed = input.trim();
        let digits = digits_of(trimmed)?;
        if let Some(known) = ACCEPTED.lock().expect("accepted numbers").get(&digits) {
            return Ok(known.clone());
        }
        let contact = checked(trimmed, &digits)?;
        let mut accepted = ACCEPTED.lock().expect("accepted numbers");
        if accepted.len() >= ACCEPTED_MAX {
            accepted.clear();
        }
        accepted.insert(digits, contact.clone());
        Ok(contact)
    }

    /// A contact relay stored itself, in the E.164 form `parse` produced
    /// when the conversation was created. Not parsed again: the first parse
    /// loads phonenumber's metadata (about 100 ms), which a daemon start
    /// should not wait for, and 10,000 parses at start cost as much again.
    pub(crate) fn stored(e164: &str) -> Contact {
        Contact(e164.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The digits of `trimmed`, which must be `+` and then only digits and
/// [`SEPARATORS`]. This check comes before phonenumber's parser, which
/// reads letters as keypad digits ("TAXI" as 8294) and cuts extensions off.
fn digits_of(trimmed: &str) -> Result<String, ContactError> {
    let Some(rest) = trimmed.strip_prefix('+') else {
        return Err(ContactError::NotInternational(trimmed.to_string()));
    };
    if let Some(bad) = rest.chars().find(|c| !c.is_ascii_digit() && !SEPARATORS.contains(c)) {
        let what = match bad {
            c if c.is_alphabetic() => format!("the letter '{c}'"),
            c if c.is_control() || c.is_whitespace() => format!("the character {}", c.escape_unicode()),
            c => format!("'{c}'"),
        };
        return Err(ContactError::Character { input: trimmed.to_string(), what });
    }
    let digits: String = rest.chars().filter(char::is_ascii_digit).collect();
    if digits.len() > MAX_DIGITS {
        return Err(ContactError::TooLong { input: trimmed.to_string(), digits: digits.len() });
    }
    Ok(digits)
}

/// The contact `digits` (written as `trimmed`) are, if phonenumber finds
/// them possible and their E.164 form reads back as itself: it turns some
/// inputs (+98000001) into a form it then refuses (+980001).
fn checked(trimmed: &str, digits: &str) -> Result<Contact, ContactError> {
    let e164 = normalise(trimmed, digits)?;
    match normalise(&e164, &e164[1..]) {
        Ok(again) if again == e164 => Ok(Contact(e164)),
        _ => Err(ContactError::Invalid(trimmed.to_string())),
    }
}

/// `+digits` in E.164, if it is a possible international number.
fn normalise(trimmed: &str, digits: &str) -> Result<String, ContactError> {
    use phonenumber::metadata::DATABASE;
    let number = phonenumber::parse(None, format!("+{digits}")).map_err(|e| match e {
        phonenumber::ParseError::InvalidCountryCode => ContactError::UnknownCountryCode(trimmed.to_string()),
        _ => ContactError::TooShort(trimmed.to_string()),
    })?;
    let code = number.code().value();
    // "Possible" (a length used for that country code), not "valid": number
    // ranges change faster than the metadata, and a real number must never
    // be refused (the seeds' own example, +56912345678, and every +1 555
    // number are in ranges the metadata does not list). The lengths are
    // those of every region sharing the code, so a number whose region
    // cannot be told (+1 555 ...) is judged by its length alone. Universal
    // access numbers are left out: they are shared service lines (Canada's
    // 7-digit 310 numbers) no one holds a WhatsApp account on, and with them
    // a North American number missing its area code passed as complete.
    let national_digits = number.national().to_string().len() as u16;
    let mut lengths: Vec<u16> = DATABASE
        .by_code(&code)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|meta| {
            use phonenumber::Type;
            [Type::Mobile, Type::FixedLine, Type::Voip, Type::PersonalNumber]
                .into_iter()
                .filter_map(|kind| meta.descriptors().get(kind))
                .flat_map(|d| d.possible_length().iter().copied())
                .collect::<Vec<_>>()
        })
        .collect();
    lengths.sort_unstable();
    lengths.dedup();
    if lengths.is_empty() {
        return Err(ContactError::UnknownCountryCode(trimmed.to_string()));
    }
    if !lengths.contains(&national_digits) {
        return Err(ContactError::Length {
            input: trimmed.to_string(),
            code,
            got: national_digits as usize,
            expected: one_of(&lengths),
        });
    }
    Ok(number.format().mode(phonenumber::Mode::E164).to_string())
}

/// "9", "9 or 10", "7, 8 or 10" (digits).
fn one_of(lengths: &[u16]) -> String {
    let words: Vec<String> = lengths.iter().map(u16::to_string).collect();
    match words.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl fmt::Display for Contact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Contact {
    type Error = ContactError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Contact::parse(&s)
    }
}

impl From<Contact> for String {
    fn from(c: Contact) -> String {
        c.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_spacing_and_dashes_to_e164() {
        assert_eq!(Contact::parse("+56 9 1234 5678").unwrap().as_str(), "+56912345678");
        assert_eq!(Contact::parse(" +1 (415) 555-2671 ").unwrap().as_str(), "+14155552671");
        assert_eq!(Contact::parse("+447911123456").unwrap().as_str(), "+447911123456");
    }

    /// Found by the API fuzz: +98000001 was accepted, stored as +980001,
    /// then refused on reading (a panic in the engine). +4000012345 is
    /// another such number (phonenumber drops the zeros after +40).
    #[test]
    fn a_number_whose_normal_form_does_not_read_back_is_refused() {
        assert!(Contact::parse("+98000001").is_err());
        assert!(matches!(Contact::parse("+4000012345"), Err(ContactError::Invalid(_))));
    }

    #[test]
    fn refuses_numbers_without_country_code() {
        assert!(matches!(Contact::parse("912345678"), Err(ContactError::NotInternational(_))));
    }

    #[test]
    fn letters_extensions_and_keypad_signs_are_refused_by_name() {
        for (input, named) in [
            ("+56 9 TAXI 2222", "the letter 'T'"),
            ("+5691abc2222", "the letter 'a'"),
            ("+56912345678 ext 5", "the letter 'e'"),
            ("+56912345678*", "'*'"),
            ("+56912345678#", "'#'"),
            ("+56912345678,5", "','"),
            ("++56912345678", "'+'"),
        ] {
            let error = Contact::parse(input).unwrap_err().to_string();
            assert!(error.contains(named), "{input}: {error}");
        }
    }

    #[test]
    fn a_length_that_is_fine_is_not_called_wrong() {
        // A US number in the 555 range: no region claims it, its length is right.
        assert_eq!(Contact::parse("+1 555 123 4567").unwrap().as_str(), "+15551234567");
        let error = Contact::parse("+56 9 1234").unwrap_err().to_string();
        assert!(error.contains("5 digits after the country code +56") && error.contains("9"), "{error}");
        // Without its area code: 7 digits, which no one's WhatsApp number has.
        let error = Contact::parse("+1 555 0100").unwrap_err().to_string();
        assert!(error.contains("7 digits after the country code +1; phone numbers there have 10"), "{error}");
        let error = Contact::parse("+999 123 456 789").unwrap_err().to_string();
        assert!(error.contains("no country code starts its digits"), "{error}");
    }

    #[test]
    fn refuses_garbage_and_impossible_numbers() {
        assert!(Contact::parse("+hello").is_err());
        assert!(Contact::parse("+1").is_err());
        assert!(Contact::parse("+999123456789").is_err(), "unknown country code");
        assert!(Contact::parse("+5691234").is_err(), "too short for Chile");
    }

    /// Real numbers of several countries, in E.164.
    const NUMBERS: &[&str] = &[
        "+56912345678",
        "+14155552671",
        "+15551234567",
        "+447911123456",
        "+4915123456789",
        "+33612345678",
        "+5511987654321",
        "+61412345678",
        "+819012345678",
        "+390612345678",
    ];

    /// `e164` with separators sprinkled between its characters.
    fn written(e164: &str, separators: &[(usize, &str)]) -> String {
        let mut out = String::from("+");
        for (i, digit) in e164[1..].chars().enumerate() {
            for (at, sep) in separators {
                if *at == i {
                    out.push_str(sep);
                }
            }
            out.push(digit);
        }
        out
    }

    /// `MIN_DIGITS`, and so the pattern's shortest number, is the
    /// metadata's: with a shorter bound the pattern would let through
    /// numbers no country has; with a longer one it would refuse real ones.
    #[test]
    fn the_patterns_shortest_number_is_the_metadatas() {
        use phonenumber::Type;
        use phonenumber::metadata::DATABASE;
        let shortest = (1u16..1000)
            .flat_map(|code| DATABASE.by_code(&code).unwrap_or_default().into_iter().map(move |meta| (code, meta)))
            .flat_map(|(code, meta)| {
                [Type::Mobile, Type::FixedLine, Type::Voip, Type::PersonalNumber]
                    .into_iter()
                    .filter_map(|kind| meta.descriptors().get(kind))
                    .flat_map(|d| d.possible_length().iter().map(|&n| n as usize).collect::<Vec<_>>())
                    .map(move |national| code.to_string().len() + national)
                    .collect::<Vec<_>>()
            })
            .min();
        assert_eq!(shortest, Some(MIN_DIGITS));
    }

    #[test]
    fn the_pattern_says_what_the_docs_say() {
        let pattern = regex::Regex::new(&pattern()).unwrap();
        for written in ["+56 9 1234 5678", "+56-9-1234-5678", "+1 (415) 555.2671", "+56912345678", "+431000"] {
            assert!(pattern.is_match(written), "{written}");
        }
        // Shorter or longer than any number, a letter, a keypad sign, no +,
        // a separator before the first digit or after the last.
        for refused in [
            "+43100",
            "+1234567890123456",
            "+56 9 TAXI 2222",
            "+56912345678#",
            "56912345678",
            "+(56)912345678",
            "+56912345678 ",
        ] {
            assert!(!pattern.is_match(refused), "{refused}");
        }
    }

    /// `pattern()` without its anchors: proptest writes strings from it.
    fn pattern_body() -> String {
        let pattern = pattern();
        pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$')).expect("anchored").to_string()
    }

    proptest::proptest! {
        /// A client that writes the contact as the schema says is never
        /// refused for its form: whatever the pattern matches has the
        /// characters and number of digits `parse` asks for, and parses as
        /// its bare digits do. What is left is whether the number is
        /// possible in its country (said in the schema's description).
        #[test]
        fn every_string_the_pattern_matches_has_the_form_parse_asks_for(
            input in proptest::string::string_regex(&pattern_body()).unwrap(),
        ) {
            proptest::prop_assert!(regex::Regex::new(&pattern()).unwrap().is_match(&input), "{}", input);
            let digits = digits_of(&input);
            proptest::prop_assert!(digits.is_ok(), "{:?}: {:?}", input, digits);
            let parsed = Contact::parse(&input);
            let country = matches!(
                parsed,
                Ok(_)
                    | Err(ContactError::UnknownCountryCode(_)
                        | ContactError::Length { .. }
                        | ContactError::TooShort(_)
                        | ContactError::Invalid(_))
            );
            proptest::prop_assert!(country, "{:?}: {:?}", input, parsed);
            let bare = Contact::parse(&format!("+{}", digits.unwrap()));
            proptest::prop_assert_eq!(parsed.is_ok(), bare.is_ok(), "{}", input);
        }

        /// And the pattern refuses no real number written as the docs say.
        #[test]
        fn real_numbers_written_with_separators_match_the_pattern(
            index in 0..NUMBERS.len(),
            separators in proptest::collection::vec((1usize..15, "[ .()-]{1,3}"), 0..6),
        ) {
            let e164 = NUMBERS[index];
            let separators: Vec<(usize, &str)> = separators.iter().map(|(at, s)| (*at, s.as_str())).collect();
            let input = written(e164, &separators);
            proptest::prop_assert!(regex::Regex::new(&pattern()).unwrap().is_match(&input), "{}", input);
            proptest::prop_assert_eq!(Contact::parse(&input).map(|c| c.0), Ok(e164.to_string()), "{}", input);
        }

        #[test]
        fn any_valid_number_with_separators_normalises_to_the_same_e164(
            index in 0..NUMBERS.len(),
            separators in proptest::collection::vec((0usize..15, "[ .()-]{1,2}"), 0..6),
        ) {
            let e164 = NUMBERS[index];
            let separators: Vec<(usize, &str)> = separators.iter().map(|(at, s)| (*at, s.as_str())).collect();
            let input = written(e164, &separators);
            proptest::prop_assert_eq!(Contact::parse(&input).map(|c| c.0), Ok(e164.to_string()), "{}", input);
        }

        #[test]
        fn a_number_parsed_again_gets_the_answer_a_first_parse_gives(
            digits in "[1-9][0-9]{4,15}",
            separator in "[ .()-]?",
        ) {
            let input = format!("+{}{separator}{}", &digits[..2], &digits[2..]);
            let fresh = digits_of(&input).and_then(|d| checked(&input, &d));
            for _ in 0..2 {
                proptest::prop_assert_eq!(Contact::parse(&input), fresh.clone(), "{}", input);
            }
        }

        #[test]
        fn any_string_with_a_letter_is_refused(
            index in 0..NUMBERS.len(),
            at in 0usize..16,
            letters in "\\PN*\\p{L}\\PN*",
        ) {
            let e164 = NUMBERS[index];
            let cut = (1 + at).min(e164.len());
            let input = format!("{}{letters}{}", &e164[..cut], &e164[cut..]);
            proptest::prop_assert!(Contact::parse(&input).is_err(), "accepted {:?}", input);
        }
    }
}
