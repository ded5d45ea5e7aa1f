//! What a todo's answer is: `answer_schema`, a small subset of JSON Schema
//! (a `type`, and `enum`, `format`, `pattern`, `minimum`/`maximum`,
//! `minLength`/`maxLength`), so the Main Agent gets a typed `value` it can
//! use, not prose to parse. Checked at create ([`AnswerSchema::check`]);
//! the agent's `mark_todo_item` value is checked against it
//! ([`AnswerSchema::admits`]) while the contact is still there to be asked
//! again. The CLI's shorthands (`--answer date`, `choice:a|b|c`, ...) are
//! [`AnswerSchema::shorthand`].

use chrono::{DateTime, NaiveDate, NaiveTime};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The longest `pattern`, and the most `enum` values: a todo's answer, not a grammar.
pub const MAX_PATTERN_CHARS: usize = 200;
pub const MAX_ENUM_VALUES: usize = 50;

/// What a todo's answer is: a small JSON Schema. Its keywords fit its
/// `type` (the schema's conditions say which); what they cannot say is
/// refused too: `minimum` above `maximum`, `minLength` above `maxLength`,
/// an `enum` value outside the `format`, `pattern` or range given, and a
/// `pattern` the regex crate cannot read (it has no look-around and no
/// backreferences).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AnswerSchema {
    #[serde(rename = "type")]
    pub kind: AnswerType,
    /// The only values allowed.
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<serde_json::Value>>)]
    pub one_of: Option<Vec<Value>>,
    /// For strings: `date` (2026-11-27), `time` (15:30), `date-time` (RFC
    /// 3339), `email`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<AnswerFormat>,
    /// For strings: a regular expression the whole answer matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// For numbers and integers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    /// For strings, in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnswerType {
    String,
    Number,
    Integer,
    Boolean,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AnswerFormat {
    Date,
    Time,
    DateTime,
    Email,
}

impl AnswerSchema {
    fn of(kind: AnswerType) -> AnswerSchema {
        AnswerSchema {
            kind,
            one_of: None,
            format: None,
            pattern: None,
            minimum: None,
            maximum: None,
            min_length: None,
            max_length: None,
        }
    }

    /// The CLI's way to say it: `yes-no`, `date`, `time`, `date-time`,
    /// `email`, `number`, `integer`, `text`, `choice:a|b|c`, or the schema
    /// as JSON (`{"type": "integer", "minimum": 1}`).
    pub fn shorthand(spec: &str) -> Result<AnswerSchema, String> {
        let spec = spec.trim();
        let string_as = |format| AnswerSchema { format: Some(format), ..AnswerSchema::of(AnswerType::String) };
        let schema = match spec {
            "yes-no" => AnswerSchema::of(AnswerType::Boolean),
            "date" => string_as(AnswerFormat::Date),
            "time" => string_as(AnswerFormat::Time),
            "date-time" => string_as(AnswerFormat::DateTime),
            "email" => string_as(AnswerFormat::Email),
            "number" => AnswerSchema::of(AnswerType::Number),
            "integer" => AnswerSchema::of(AnswerType::Integer),
            "text" => AnswerSchema::of(AnswerType::String),
            _ if spec.starts_with('{') => {
                serde_json::from_str(spec).map_err(|e| format!("'{spec}' is not an answer schema: {e}"))?
            }
            _ => match spec.strip_prefix("choice:") {
                Some(choices) => {
                    let choices: Vec<Value> = choices.split('|').map(|c| Value::String(c.trim().to_string())).collect();
                    AnswerSchema { one_of: Some(choices), ..AnswerSchema::of(AnswerType::String) }
                }
                None => {
                    return Err(format!(
                        "'{spec}' is not an answer: use yes-no, date, time, date-time, email, number, integer, text, \
                         choice:a|b|c, or a JSON schema like {{\"type\": \"integer\", \"minimum\": 1}}"
                    ));
                }
            },
        };
        schema.check()?;
        Ok(schema)
    }

    /// Whether the schema makes sense: what is wrong with it, in words.
    pub fn check(&self) -> Result<(), String> {
        let string = self.kind == AnswerType::String;
        let numeric = matches!(self.kind, AnswerType::Number | AnswerType::Integer);
        if !string && (self.format.is_some() || self.pattern.is_some()) {
            return Err("format and pattern are for answers of type string".into());
        }
        if !string && (self.min_length.is_some() || self.max_length.is_some()) {
            return Err("minLength and maxLength are for answers of type string".into());
        }
        if !numeric && (self.minimum.is_some() || self.maximum.is_some()) {
            return Err("minimum and maximum are for answers of type number or integer".into());
        }
        if let (Some(min), Some(max)) = (self.minimum, self.maximum)
            && min > max
        {
            return Err(format!("minimum {min} is more than maximum {max}"));
        }
        if let (Some(min), Some(max)) = (self.min_length, self.max_length)
            && min > max
        {
            return Err(format!("minLength {min} is more than maxLength {max}"));
        }
        if let Some(pattern) = &self.pattern {
            if pattern.chars().count() > MAX_PATTERN_CHARS {
                return Err(format!("the pattern is longer than {MAX_PATTERN_CHARS} characters"));
            }
            regex::Regex::new(pattern).map_err(|e| format!("the pattern is not a regular expression: {e}"))?;
        }
        if let Some(values) = &self.one_of {
            if values.is_empty() || values.len() > MAX_ENUM_VALUES {
                return Err(format!("enum needs 1 to {MAX_ENUM_VALUES} values"));
            }
            let bare = AnswerSchema { one_of: None, ..self.clone() };
            for (n, value) in values.iter().enumerate() {
                if values[..n].contains(value) {
                    return Err(format!("the enum value {value} is there twice"));
                }
                bare.admits(value).map_err(|why| format!("the enum value {value} does not fit the type: {why}"))?;
                if value.as_str().is_some_and(|s| s.trim().is_empty()) {
                    return Err("an enum value is empty".into());
                }
            }
        }
        Ok(())
    }

    /// What [`AnswerSchema::check`] refuses that a JSON Schema can say, to
    /// merge into this type's own schema: `enum` holds 1 to
    /// [`MAX_ENUM_VALUES`] distinct values of the declared type (strings not
    /// blank), `pattern` is a regular expression of at most
    /// [`MAX_PATTERN_CHARS`], and (`if` the type is ..., `then` ...) the
    /// string keywords come only with type string, `minimum` and `maximum`
    /// only with number or integer. A keyword set to null counts as left
    /// out, as serde reads it. What no schema can say stays in words:
    /// minimum ≤ maximum, minLength ≤ maxLength, each enum value of the
    /// format, pattern and range given, the regex crate's syntax.
    pub fn schema_rules() -> Value {
        use serde_json::json;
        let name = |kind: AnswerType| serde_json::to_value(kind).expect("a type serialises");
        let of_type = |kinds: &[AnswerType]| json!({"properties": {"type": {"enum": kinds.iter().map(|k| name(*k)).collect::<Vec<_>>()}}});
        let left_out = json!({"type": "null"});
        let mut rules = vec![
            json!({
                "if": of_type(&[AnswerType::Number, AnswerType::Integer, AnswerType::Boolean]),
                "then": {"properties": {"format": left_out, "pattern": left_out, "minLength": left_out, "maxLength": left_out}},
            }),
            json!({
                "if": of_type(&[AnswerType::String, AnswerType::Boolean]),
                "then": {"properties": {"minimum": left_out, "maximum": left_out}},
            }),
        ];
        for kind in [AnswerType::String, AnswerType::Number, AnswerType::Integer, AnswerType::Boolean] {
            // A JSON Schema type of the same name; a string value is text, trimmed and not empty.
            let mut value = json!({"type": name(kind)});
            if kind == AnswerType::String {
                value["minLength"] = json!(1);
            }
            rules.push(json!({"if": of_type(&[kind]), "then": {"properties": {"enum": {"items": value}}}}));
        }
        json!({
            "properties": {
                "enum": {"minItems": 1, "maxItems": MAX_ENUM_VALUES, "uniqueItems": true},
                "pattern": {"format": "regex", "maxLength": MAX_PATTERN_CHARS},
            },
            "allOf": rules,
        })
    }

    /// The answer it expects, in words, for the agent's tool and the prompt.
    pub fn describe(&self) -> String {
        if let Some(values) = &self.one_of {
            let listed: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            return format!("one of {}", listed.join(", "));
        }
        let mut words = match (self.kind, self.format) {
            (AnswerType::Boolean, _) => "true or false (yes or no)".to_string(),
            (AnswerType::Integer, _) => "a whole number".into(),
            (AnswerType::Number, _) => "a number".into(),
            (AnswerType::String, Some(AnswerFormat::Date)) => "a date like \"2026-11-27\"".into(),
            (AnswerType::String, Some(AnswerFormat::Time)) => "a time like \"15:30\"".into(),
            (AnswerType::String, Some(AnswerFormat::DateTime)) => {
                "a date and time like \"2026-11-27T15:30:00-03:00\"".into()
            }
            (AnswerType::String, Some(AnswerFormat::Email)) => "an email address".into(),
            (AnswerType::String, None) => "a text".into(),
        };
        match (self.minimum, self.maximum) {
            (Some(min), Some(max)) => words.push_str(&format!(" from {min} to {max}")),
            (Some(min), None) => words.push_str(&format!(" of at least {min}")),
            (None, Some(max)) => words.push_str(&format!(" of at most {max}")),
            (None, None) => {}
        }
        if let Some(pattern) = &self.pattern {
            words.push_str(&format!(" matching /{pattern}/"));
        }
        words
    }

    /// `value` as this kind of answer when a model wrote it as text: "3" for
    /// a number, "yes" or "no" for a yes-no; anything else as it is.
    pub fn coerce(&self, value: Value) -> Value {
        let Value::String(text) = &value else { return value };
        let text = text.trim();
        match self.kind {
            AnswerType::Integer => text.parse::<i64>().map_or(value.clone(), Value::from),
            AnswerType::Number => {
                text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(value.clone(), Value::Number)
            }
            AnswerType::Boolean => match crate::courtesy::fold(text).as_str() {
                "yes" | "true" | "si" | "sim" => Value::Bool(true),
                "no" | "false" | "nao" => Value::Bool(false),
                _ => value.clone(),
            },
            AnswerType::String => value.clone(),
        }
    }

    /// Whether `value` is an answer of this kind: what is wrong if not.
    pub fn admits(&self, value: &Value) -> Result<(), String> {
        let expected = || format!("it needs {}", self.describe());
        match (self.kind, value) {
            (AnswerType::Boolean, Value::Bool(_)) => {}
            (AnswerType::Number, Value::Number(_)) => {}
            (AnswerType::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => {}
            (AnswerType::String, Value::String(_)) => {}
            _ => return Err(format!("{value} is not {}", self.describe())),
        }
        if let Some(values) = &self.one_of
            && !values.contains(value)
        {
            return Err(format!("{value} is not {}", self.describe()));
        }
        if let Some(n) = value.as_f64()
            && (self.minimum.is_some_and(|min| n < min) || self.maximum.is_some_and(|max| n > max))
        {
            return Err(format!("{value} is out of range: {}", expected()));
        }
        if let Some(text) = value.as_str() {
            let chars = text.chars().count() as u32;
            if self.min_length.is_some_and(|min| chars < min) || self.max_length.is_some_and(|max| chars > max) {
                let (min, max) =
                    (self.min_length.unwrap_or(0), self.max_length.map_or("any".into(), |m| m.to_string()));
                return Err(format!("{value} has {chars} characters; it needs {min} to {max}"));
            }
            let fits = match self.format {
                Some(AnswerFormat::Date) => NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok(),
                Some(AnswerFormat::Time) => {
                    NaiveTime::parse_from_str(text, "%H:%M").is_ok()
                        || NaiveTime::parse_from_str(text, "%H:%M:%S").is_ok()
                }
                Some(AnswerFormat::DateTime) => DateTime::parse_from_rfc3339(text).is_ok(),
                Some(AnswerFormat::Email) => is_email(text),
                None => true,
            };
            if !fits {
                return Err(format!("{value} is not {}", self.describe()));
            }
            if let Some(pattern) = &self.pattern {
                let whole = format!("^(?:{pattern})$");
                if !regex::Regex::new(&whole).is_ok_and(|re| re.is_match(text)) {
                    return Err(format!("{value} does not match /{pattern}/"));
                }
            }
        }
        Ok(())
    }
}

/// How relay established a todo's value from what was said. A Main Agent
/// that must act only on values relay read itself takes `verbatim` and
/// `resolved`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValueCheck {
    /// The value is written in the contact's words as it is ("3", an address).
    Verbatim,
    /// relay read it from their words by rule: a relative day ("Friday",
    /// "mañana") against the day they wrote, a number in words, "3pm".
    Resolved,
    /// relay cannot read such a value by rule (a yes or no, free text, what
    /// a photo shows): a second model call that saw only the todo and the
    /// evidence confirmed it.
    Verified,
    /// The operator gave it, answering the agent's question.
    Operator,
    /// Nobody checked it: relay cannot read it by rule and `answers.verify`
    /// is off.
    Unchecked,
}

impl ValueCheck {
    /// How the value was established, for a person.
    pub fn describe(self) -> &'static str {
        match self {
            ValueCheck::Verbatim => "written in their words",
            ValueCheck::Resolved => "read from their words",
            ValueCheck::Verified => "confirmed by a second look at their words",
            ValueCheck::Operator => "the operator's answer",
            ValueCheck::Unchecked => "not checked: answers.verify is off",
        }
    }
}

/// An address with one `@`, something before it, and a dot in a domain of
/// plain characters: what a person types, not RFC 5322's corners.
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else { return false };
    let plain = |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control() || c == '@');
    plain(local) && plain(domain) && domain.split('.').count() >= 2 && domain.split('.').all(|part| !part.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn shorthands_are_the_schemas_they_say() {
        assert_eq!(AnswerSchema::shorthand("yes-no").unwrap().kind, AnswerType::Boolean);
        assert_eq!(AnswerSchema::shorthand("date").unwrap().format, Some(AnswerFormat::Date));
        let choice = AnswerSchema::shorthand("choice:morning|afternoon").unwrap();
        assert_eq!(choice.one_of, Some(vec![json!("morning"), json!("afternoon")]));
        let json = AnswerSchema::shorthand(r#"{"type": "integer", "minimum": 1, "maximum": 10}"#).unwrap();
        assert_eq!((json.minimum, json.maximum), (Some(1.0), Some(10.0)));
        for wrong in
            ["weekday", "choice:", "choice:a|b|a", r#"{"type": "integer", "format": "date"}"#, r#"{"type": "text"}"#]
        {
            assert!(AnswerSchema::shorthand(wrong).is_err(), "{wrong}");
        }
        let backwards = AnswerSchema::shorthand(r#"{"type": "number", "minimum": 5, "maximum": 1}"#).unwrap_err();
        assert!(backwards.contains("minimum 5 is more than maximum 1"), "{backwards}");
    }

    #[test]
    fn a_number_or_a_yes_written_as_text_is_taken_as_one() {
        let integer = AnswerSchema::shorthand("integer").unwrap();
        assert_eq!(integer.coerce(json!(" 3 ")), json!(3));
        assert_eq!(integer.coerce(json!("three")), json!("three"), "words are not coerced: relay reads them later");
        assert_eq!(AnswerSchema::shorthand("number").unwrap().coerce(json!("3.5")), json!(3.5));
        let yes_no = AnswerSchema::shorthand("yes-no").unwrap();
        assert_eq!((yes_no.coerce(json!("Sí")), yes_no.coerce(json!("no"))), (json!(true), json!(false)));
        assert_eq!(yes_no.coerce(json!("maybe")), json!("maybe"));
        assert_eq!(AnswerSchema::shorthand("text").unwrap().coerce(json!("3")), json!("3"));
    }

    #[test]
    fn a_value_that_does_not_fit_says_what_is_wrong() {
        let date = AnswerSchema::shorthand("date").unwrap();
        assert!(date.admits(&json!("2026-11-27")).is_ok());
        let said = date.admits(&json!("next Friday")).unwrap_err();
        assert_eq!(said, "\"next Friday\" is not a date like \"2026-11-27\"");
        assert!(date.admits(&json!("2026-02-30")).is_err(), "no such day");
        let yes_no = AnswerSchema::shorthand("yes-no").unwrap();
        assert!(yes_no.admits(&json!(true)).is_ok());
        assert!(yes_no.admits(&json!("yes")).is_err());
        let count = AnswerSchema::shorthand(r#"{"type": "integer", "minimum": 1, "maximum": 10}"#).unwrap();
        assert!(count.admits(&json!(3)).is_ok());
        assert!(count.admits(&json!(3.5)).is_err());
        assert!(count.admits(&json!(11)).unwrap_err().contains("out of range"));
        let code = AnswerSchema { pattern: Some("[A-Z]{3}[0-9]{2}".into()), ..AnswerSchema::of(AnswerType::String) };
        assert!(code.admits(&json!("ABC12")).is_ok());
        assert!(code.admits(&json!("xABC12")).is_err(), "the whole answer matches");
        let email = AnswerSchema::shorthand("email").unwrap();
        assert!(email.admits(&json!("ana@example.com")).is_ok());
        assert!(email.admits(&json!("ana at example")).is_err());
    }

    proptest! {
        /// Every real calendar day, written as a date answer, is one; and
        /// any day-of-month past the month's end is refused.
        #[test]
        fn dates_are_days_of_the_calendar(y in 1900i32..2200, m in 1u32..=12, d in 1u32..=31) {
            let date = AnswerSchema::shorthand("date").unwrap();
            let text = format!("{y:04}-{m:02}-{d:02}");
            let real = NaiveDate::from_ymd_opt(y, m, d).is_some();
            prop_assert_eq!(date.admits(&json!(text)).is_ok(), real);
        }

        /// A choice admits exactly its choices.
        #[test]
        fn a_choice_admits_its_choices_only(choices in proptest::collection::btree_set("[a-z]{1,8}", 1..6), other in "[a-z]{1,8}") {
            let spec = format!("choice:{}", choices.iter().cloned().collect::<Vec<_>>().join("|"));
            let schema = AnswerSchema::shorthand(&spec).unwrap();
            for choice in &choices {
                prop_assert!(schema.admits(&json!(choice)).is_ok());
            }
            prop_assert_eq!(schema.admits(&json!(other)).is_ok(), choices.contains(&other));
        }
    }
}
