//! Whether a todo's typed value can be read from the contact's words it
//! rests on, by relay rather than by the model: the Main Agent acts on the
//! value without reading the chat, so a value the quoted words do not say
//! is refused while the contact is there to be asked.
//!
//! - A number is in the words, in digits or in words ([`numbers`]).
//! - An email, or a string with a pattern, is written in them (case,
//!   spacing and separators aside).
//! - A choice is named by them.
//! - A date or a time is written in them, or is a relative expression
//!   ("Friday", "mañana") resolved against the day they wrote ([`dates`]).
//! - Anything else (yes or no, free text) relay cannot read by rule: a
//!   second, narrow model call decides (`agent::verify`).

pub mod dates;
pub mod numbers;

use chrono::{DateTime, NaiveDate, NaiveTime};
use serde_json::Value;

use crate::api::{AnswerFormat, AnswerSchema, AnswerType};
use crate::courtesy::normalise;

/// How relay read a value from the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// The value is written in them as it is.
    Verbatim,
    /// relay read it from them by rule: a relative day, a number in words, "3pm".
    Resolved,
    /// relay cannot read a value of this kind by rule: a model must confirm it.
    Unreadable,
}

/// The contact's words a value rests on, and the day they wrote them, in
/// their time zone (relative days resolve against it).
#[derive(Debug, Clone, Copy)]
pub struct Said<'a> {
    pub words: &'a str,
    pub on: NaiveDate,
    /// Their time zone: a date and time is read as their local one.
    pub zone: chrono_tz::Tz,
}

/// How `value` (already of `schema`'s type) is read from `said`; else why
/// not, in words for the model ("7 is not in their words").
pub fn read(schema: &AnswerSchema, value: &Value, said: Said) -> Result<Reading, String> {
    if let Some(choices) = &schema.one_of {
        return read_choice(value, choices, said.words);
    }
    match (schema.kind, value) {
        (AnswerType::Boolean, _) => Ok(Reading::Unreadable),
        (AnswerType::Number | AnswerType::Integer, Value::Number(n)) => {
            read_number(n.as_f64().unwrap_or(f64::NAN), said)
        }
        (AnswerType::String, Value::String(text)) => match schema.format {
            Some(AnswerFormat::Date) => read_date(text, said),
            Some(AnswerFormat::Time) => read_time(text, said),
            Some(AnswerFormat::DateTime) => read_date_time(text, said),
            Some(AnswerFormat::Email) => read_address(text, said.words),
            None if schema.pattern.is_some() => read_written(text, said.words, "it"),
            None => Ok(if says(text, said.words) { Reading::Verbatim } else { Reading::Unreadable }),
        },
        _ => Err(format!("{value} is not {}", schema.describe())),
    }
}

fn read_number(n: f64, said: Said) -> Result<Reading, String> {
    let found = numbers::numbers_in(said.words);
    let shown = |n: f64| Value::from(n).to_string().trim_end_matches(".0").to_string();
    match numbers::holds(&found, n) {
        Some(f) if f.in_digits => Ok(Reading::Verbatim),
        Some(_) => Ok(Reading::Resolved),
        None if found.is_empty() => Err(format!("{} is not in their words, which hold no number", shown(n))),
        None => {
            let mut held: Vec<String> = found.iter().map(|f| shown(f.value)).collect();
            held.dedup();
            Err(format!("{} is not in their words, which hold {}", shown(n), held.join(", ")))
        }
    }
}

fn read_choice(value: &Value, choices: &[Value], words: &str) -> Result<Reading, String> {
    let named = |choice: &Value| choice_words(choice).is_some_and(|c| contains_words(&normalise(words), &c));
    let others: Vec<&Value> = choices.iter().filter(|c| *c != value && named(c)).collect();
    match (named(value), others.first()) {
        (true, None) => Ok(Reading::Verbatim),
        // "not the morning, the afternoon": which one is for a model to read.
        (true, Some(_)) | (false, None) => Ok(Reading::Unreadable),
        (false, Some(other)) => Err(format!("their words name {other}, not {value}")),
    }
}

fn choice_words(choice: &Value) -> Option<String> {
    let words = match choice {
        Value::String(s) => normalise(s),
        other => normalise(&other.to_string()),
    };
    (!words.is_empty()).then_some(words)
}

fn read_date(text: &str, said: Said) -> Result<Reading, String> {
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| format!("{text:?} is not a date"))?;
    let days = dates::days_in(said.words, said.on);
    let written = said.words.split(is_separator).any(|token| token.trim_end_matches('.') == text);
    match days.contains(&day) {
        true if written => Ok(Reading::Verbatim),
        true => Ok(Reading::Resolved),
        false => Err(not_the_day(text, &days)),
    }
}

/// Why a day or a time is refused: what the words do name, if anything.
fn not_named<T>(what: &str, text: &str, named: &[T], show: impl Fn(&T) -> String) -> String {
    match named {
        [] => format!("their words name no {what} that could be {text}"),
        _ => format!("their words name {}, not {text}", named.iter().map(show).collect::<Vec<_>>().join(" or ")),
    }
}

fn not_the_day(text: &str, days: &[NaiveDate]) -> String {
    not_named("day", text, days, |d| d.format("%Y-%m-%d (%A)").to_string())
}

fn read_time(text: &str, said: Said) -> Result<Reading, String> {
    let time = NaiveTime::parse_from_str(text, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(text, "%H:%M:%S"))
        .map_err(|_| format!("{text:?} is not a time"))?;
    let times = dates::times_in(said.words);
    match times.contains(&time) {
        true => Ok(Reading::Resolved),
        false => Err(not_the_time(text, &times)),
    }
}

fn not_the_time(text: &str, times: &[NaiveTime]) -> String {
    not_named("time", text, times, |t| t.format("%H:%M").to_string())
}

/// A date and time: the day as [`read_date`] reads it (the day they wrote,
/// when the words name none) and the time as [`read_time`], both as the
/// value reads in their time zone.
fn read_date_time(text: &str, said: Said) -> Result<Reading, String> {
    let at = DateTime::parse_from_rfc3339(text).map_err(|_| format!("{text:?} is not a date and time"))?;
    // Their words are in their own time: the value is read as theirs.
    let at = at.with_timezone(&said.zone);
    let mut days = dates::days_in(said.words, said.on);
    if days.is_empty() {
        days.push(said.on);
    }
    if !days.contains(&at.date_naive()) {
        return Err(not_the_day(&at.date_naive().to_string(), &days));
    }
    let times = dates::times_in(said.words);
    match times.contains(&at.time()) {
        true => Ok(Reading::Resolved),
        false => Err(not_the_time(&at.time().format("%H:%M").to_string(), &times)),
    }
}

/// An email address: one of the words, whole, case aside (not part of a
/// longer address: "ana@acme.com" is not in "ana@acme.com.br").
fn read_address(text: &str, words: &str) -> Result<Reading, String> {
    let wanted = crate::courtesy::fold(text);
    let token = |t: &str| crate::courtesy::fold(t.trim_end_matches(['.', ','])) == wanted;
    match words.split(is_separator).any(token) {
        true => Ok(Reading::Verbatim),
        false => Err(format!("the address ({text:?}) is not written in their words")),
    }
}

/// A patterned string: written in the words, case and the separators
/// people put inside codes and numbers aside ("ABC-12" is "abc12", "+56 9
/// 1234 5678" is "+56912345678"), whole: not the start of a longer code.
fn read_written(text: &str, words: &str, what: &str) -> Result<Reading, String> {
    match written(text, words) {
        true => Ok(Reading::Verbatim),
        false => Err(format!("{what} ({text:?}) is not written in their words")),
    }
}

/// Whether free text is in the words: as whole words, case and punctuation
/// aside, or written as [`written`] finds codes.
fn says(text: &str, words: &str) -> bool {
    let wanted = normalise(text);
    (!wanted.is_empty() && contains_words(&normalise(words), &wanted)) || written(text, words)
}

/// Whether `text` is a run of whole tokens of `words` whose letters and
/// digits are its own, with no digits running on either side (a phone
/// number's first groups are not the number).
fn written(text: &str, words: &str) -> bool {
    let key = skeleton(text);
    if key.is_empty() {
        return false;
    }
    let tokens: Vec<String> = words.split(is_separator).map(skeleton).filter(|t| !t.is_empty()).collect();
    let digit_at = |t: &String, first: bool| {
        let c = if first { t.chars().next() } else { t.chars().last() };
        c.is_some_and(|c| c.is_ascii_digit())
    };
    (0..tokens.len()).any(|start| {
        let mut joined = String::new();
        for (end, token) in tokens.iter().enumerate().skip(start) {
            joined.push_str(token);
            if joined.len() >= key.len() {
                let runs_on = tokens.get(end + 1).is_some_and(|next| digit_at(next, true) && digit_at(token, false));
                let runs_in = start > 0 && digit_at(&tokens[start - 1], false) && digit_at(&tokens[start], true);
                return joined == key && !runs_on && !runs_in;
            }
        }
        false
    })
}

/// Between tokens: spaces and the punctuation around words, not the marks
/// inside an address or a code ("@", ".", "-", "+", "/", "_").
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            ',' | ';' | ':' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | '\'' | '!' | '?' | '¡' | '¿' | '<' | '>'
        )
}

/// A token's letters and digits, folded; `+` kept (a phone number's).
fn skeleton(token: &str) -> String {
    crate::courtesy::fold(token).chars().filter(|c| c.is_alphanumeric() || *c == '+' || *c == '@').collect()
}

/// Whether normalised `text` holds the normalised words `wanted`, whole words only.
pub fn contains_words(text: &str, wanted: &str) -> bool {
    format!(" {text} ").contains(&format!(" {wanted} "))
}

#[cfg(test)]
mod tests;
