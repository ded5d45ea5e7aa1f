//! Contacts are phone numbers in E.164 ("+56912345678"): the one form relay
//! stores, compares and routes by, whatever form the user typed.

use std::fmt;

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
    #[error("'{0}' is not a valid phone number ({1})")]
    Unparsable(String, String),
    #[error("'{0}' is not a possible phone number (unknown country code, or wrong length for it)")]
    Invalid(String),
}

impl Contact {
    /// Accepts "+56 9 1234 5678", "+56-9-1234-5678" or "+56912345678".
    pub fn parse(input: &str) -> Result<Contact, ContactError> {
        let trimmed = input.trim();
        let e164 = normalise(trimmed)?;
        // The stored form must read back as itself: phonenumber turns some
        // inputs (+98000001) into a form it then refuses (+980001).
        match normalise(&e164) {
            Ok(again) if again == e164 => Ok(Contact(e164)),
            _ => Err(ContactError::Invalid(trimmed.to_string())),
        }
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

/// `trimmed` in E.164, if it is a possible international number.
fn normalise(trimmed: &str) -> Result<String, ContactError> {
    if !trimmed.starts_with('+') {
        return Err(ContactError::NotInternational(trimmed.to_string()));
    }
    let number =
        phonenumber::parse(None, trimmed).map_err(|e| ContactError::Unparsable(trimmed.to_string(), e.to_string()))?;
    // "Possible" (known country code, a length used there), not "valid":
    // number ranges change faster than the metadata, and a real number
    // must never be refused (the seeds' own example, +56912345678, is in
    // a range the metadata does not list).
    let national_digits = number.national().to_string().len() as u16;
    let possible = number.metadata(&phonenumber::metadata::DATABASE).is_some_and(|meta| {
        use phonenumber::Type;
        [Type::Mobile, Type::FixedLine, Type::Voip, Type::PersonalNumber, Type::Uan]
            .into_iter()
            .filter_map(|kind| meta.descriptors().get(kind))
            .any(|d| d.possible_length().contains(&national_digits))
    });
    if !possible {
        return Err(ContactError::Invalid(trimmed.to_string()));
    }
    Ok(number.format().mode(phonenumber::Mode::E164).to_string())
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

    /// Found by the API fuzz: accepted, stored as +980001, then refused on
    /// reading (a panic in the engine).
    #[test]
    fn a_number_whose_normal_form_does_not_read_back_is_refused() {
        assert!(matches!(Contact::parse("+98000001"), Err(ContactError::Invalid(_))));
    }

    #[test]
    fn refuses_numbers_without_country_code() {
        assert!(matches!(Contact::parse("912345678"), Err(ContactError::NotInternational(_))));
    }

    #[test]
    fn refuses_garbage_and_impossible_numbers() {
        assert!(Contact::parse("+hello").is_err());
        assert!(Contact::parse("+1").is_err());
        assert!(Contact::parse("+999123456789").is_err(), "unknown country code");
        assert!(Contact::parse("+5691234").is_err(), "too short for Chile");
    }
}
