//! The `courtesy` section: how relay treats the people it writes to (quiet
//! hours, their time zone, opt-out words, saying it is an assistant) and
//! the number it writes from (first messages to new contacts per day).
//! What each does is in [`crate::courtesy`]; here are the settings, their
//! defaults (on: they protect people) and their checks.

use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::courtesy::QuietHours;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CourtesySettings {
    /// When relay starts nothing on its own, in the contact's time:
    /// "21:00-09:00", or "off".
    #[serde(with = "crate::courtesy::quiet::setting")]
    pub quiet_hours: Option<QuietHours>,
    /// The zone of a contact whose country keeps several (or whose number
    /// tells none), when the conversation was given no `--tz`.
    pub default_tz: String,
    /// First messages to numbers relay has never exchanged a message with,
    /// in any 24 hours; 0 means no cap.
    pub max_new_contacts_per_day: u32,
    /// A contact message that is only one of these (any case, punctuation
    /// around it ignored) asks relay to stop writing.
    pub opt_out_words: Vec<String>,
    /// The line relay puts before each conversation's first message, with
    /// `{{operator}}` for `operator_name`; "off" sends none.
    pub disclosure: String,
    /// Whom relay writes for, in the disclosure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_name: Option<String>,
}

pub const DEFAULT_DISCLOSURE: &str = "This is an automated assistant writing on behalf of {{operator}}.";

/// Said in the disclosure when no operator name is set.
const NO_OPERATOR_NAME: &str = "the person it works for";

pub use crate::courtesy::DEFAULT_OPT_OUT_WORDS;

impl Default for CourtesySettings {
    fn default() -> Self {
        CourtesySettings {
            quiet_hours: Some("21:00-09:00".parse().expect("a window")),
            default_tz: local_zone(),
            max_new_contacts_per_day: 10,
            opt_out_words: DEFAULT_OPT_OUT_WORDS.iter().map(|w| w.to_string()).collect(),
            disclosure: DEFAULT_DISCLOSURE.to_string(),
            operator_name: None,
        }
    }
}

/// The longest operator name: it goes in every conversation's first line.
pub const MAX_OPERATOR_NAME_CHARS: usize = 80;

/// What is wrong with `name` as the operator's name, if anything: it is
/// sent to every contact, so it is one line of visible text.
pub fn operator_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return Some("is empty: set a name, or leave it out".into());
    }
    let hidden =
        |c: char| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c) || ('\u{2066}'..='\u{2069}').contains(&c);
    if name.chars().any(hidden) {
        return Some("has a control character or a line break: it goes in the first line each contact reads".into());
    }
    let chars = name.trim().chars().count();
    (chars > MAX_OPERATOR_NAME_CHARS).then(|| format!("is {chars} characters long; at most {MAX_OPERATOR_NAME_CHARS}"))
}

/// This machine's zone (what `relay init` writes as `default_tz`), or UTC.
pub fn local_zone() -> String {
    iana_time_zone::get_timezone().ok().filter(|name| name.parse::<Tz>().is_ok()).unwrap_or_else(|| "UTC".into())
}

impl CourtesySettings {
    /// The settings with nothing that depends on the hour or on how many
    /// numbers are written to: quiet hours and the cap off (for `relay
    /// demo`, `relay eval` and tests that say so).
    pub fn any_hour(mut self) -> CourtesySettings {
        self.quiet_hours = None;
        self.max_new_contacts_per_day = 0;
        self
    }

    pub fn check(&self) -> Result<(), String> {
        crate::courtesy::parse_zone(&self.default_tz).map_err(|e| format!("courtesy.default_tz: {e}"))?;
        if self.opt_out_words.iter().any(|w| crate::courtesy::normalise(w).is_empty()) {
            return Err("courtesy.opt_out_words: a word is empty (or only punctuation)".into());
        }
        if let Some(name) = &self.operator_name {
            operator_name_problem(name).map_or(Ok(()), |problem| Err(format!("courtesy.operator_name {problem}")))?;
        }
        if self.disclosure.trim().is_empty() {
            return Err("courtesy.disclosure is empty: write the line, or \"off\"".into());
        }
        Ok(())
    }

    /// The zone `default_tz` names (checked at load).
    pub fn default_zone(&self) -> Tz {
        self.default_tz.parse().unwrap_or(Tz::UTC)
    }

    /// The disclosure line as the contact reads it, or `None` when off.
    pub fn disclosure_line(&self) -> Option<String> {
        if self.disclosure_off() {
            return None;
        }
        let operator = self.operator_name.as_deref().map(str::trim).unwrap_or(NO_OPERATOR_NAME);
        Some(self.disclosure.trim().replace("{{operator}}", operator))
    }

    /// Quiet hours and the daily cap in words, for `relay init` and `relay doctor`.
    pub fn describe(&self) -> String {
        let quiet =
            self.quiet_hours.map_or("no quiet hours".to_string(), |q| format!("quiet hours {q} in the contact's time"));
        match self.max_new_contacts_per_day {
            0 => format!("{quiet}, no cap on first contacts"),
            n => format!("{quiet}, at most {n} first contacts a day"),
        }
    }

    /// What is wrong with an empty `opt_out_words`, for `relay start` and
    /// `relay doctor`; None when there are some.
    pub fn no_opt_out_words(&self) -> Option<&'static str> {
        self.opt_out_words.iter().all(|w| w.trim().is_empty()).then_some(
            "courtesy.opt_out_words is empty: a contact who writes only STOP is not put on the do-not-contact list",
        )
    }

    pub fn disclosure_off(&self) -> bool {
        self.disclosure.trim().eq_ignore_ascii_case("off")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disclosure_names_the_operator_or_says_whom_it_works_for() {
        let mut settings = CourtesySettings { operator_name: Some("Ana Pérez".into()), ..Default::default() };
        assert_eq!(
            settings.disclosure_line().unwrap(),
            "This is an automated assistant writing on behalf of Ana Pérez."
        );
        settings.operator_name = None;
        assert!(settings.disclosure_line().unwrap().ends_with("the person it works for."));
        settings.disclosure = "OFF".into();
        assert_eq!(settings.disclosure_line(), None);
    }

    #[test]
    fn quiet_hours_are_written_as_a_window_or_off_and_a_wrong_one_is_refused() {
        let settings = CourtesySettings::default();
        let json = serde_json::to_value(&settings).unwrap();
        assert_eq!(json["quiet_hours"], "21:00-09:00");
        assert_eq!(serde_json::to_value(settings.any_hour()).unwrap()["quiet_hours"], "off");
        let wrong = serde_json::from_value::<CourtesySettings>(serde_json::json!({"quiet_hours": "late"}));
        assert!(wrong.unwrap_err().to_string().contains("21:00-09:00"));
        let zone = CourtesySettings { default_tz: "Nowhere/Land".into(), ..Default::default() };
        assert!(zone.check().unwrap_err().contains("courtesy.default_tz"));
    }
}
