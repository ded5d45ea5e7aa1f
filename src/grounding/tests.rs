use chrono::{Datelike, Days, NaiveDate, Weekday};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn schema(spec: &str) -> AnswerSchema {
    AnswerSchema::shorthand(spec).unwrap()
}

/// Friday 27 November 2026.
fn friday() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 27).unwrap()
}

fn read_on(spec: &str, value: Value, words: &str) -> Result<Reading, String> {
    read(&schema(spec), &value, Said { words, on: friday(), zone: chrono_tz::UTC })
}

#[test]
fn the_values_nobody_said_are_refused() {
    let said = "we are 3 people, my email is alice@example.com";
    assert_eq!(read_on("integer", json!(7), "3 people"), Err("7 is not in their words, which hold 3".into()));
    assert_eq!(read_on("integer", json!(7), "nobody"), Err("7 is not in their words, which hold no number".into()));
    assert_eq!(read_on("integer", json!(3), "3 people"), Ok(Reading::Verbatim));
    let wrong = read_on("email", json!("bob@evil.example"), "my email is alice@example.com").unwrap_err();
    assert!(wrong.contains("not written in their words"), "{wrong}");
    assert_eq!(read_on("email", json!("Alice@Example.com"), said), Ok(Reading::Verbatim));
    let tuesday = read_on("date", json!("2026-12-01"), "Friday").unwrap_err();
    assert!(tuesday.contains("2026-11-27 (Friday) or 2026-12-04 (Friday), not 2026-12-01"), "{tuesday}");
    assert_eq!(read_on("date", json!("2026-12-04"), "Friday"), Ok(Reading::Resolved));
    let choice = "choice:morning|afternoon";
    assert_eq!(read_on(choice, json!("morning"), "Friday"), Ok(Reading::Unreadable), "a model decides");
    assert_eq!(
        read_on(choice, json!("morning"), "in the afternoon, please"),
        Err("their words name \"afternoon\", not \"morning\"".into())
    );
    assert_eq!(read_on("yes-no", json!(true), "nobody is home on Friday"), Ok(Reading::Unreadable));
}

#[test]
fn relative_days_resolve_against_the_day_they_wrote() {
    for (words, day) in [
        ("tomorrow works", "11-28"),
        ("mañana", "11-28"),
        ("amanhã de manhã", "11-28"),
        ("the day after tomorrow", "11-29"),
        ("pasado mañana", "11-29"),
        ("today is fine", "11-27"),
        ("el viernes que viene", "12-04"),
        ("next Monday", "11-30"),
        ("next Monday", "12-07"),
        ("on Monday", "11-30"),
        ("sexta-feira", "12-04"),
        ("4 de diciembre", "12-04"),
        ("December 4th", "12-04"),
        ("4/12", "12-04"),
        ("2026-12-04", "12-04"),
    ] {
        let value = json!(format!("2026-{day}"));
        assert!(read_on("date", value.clone(), words).is_ok(), "{words} → {value}");
    }
    assert!(read_on("date", json!("2026-11-28"), "por la mañana").is_err(), "the morning is no day");
    assert!(read_on("date", json!("2026-11-28"), "the day after tomorrow").is_err(), "not also tomorrow");
    assert!(read_on("date", json!("2026-11-30"), "next Tuesday").is_err());
}

#[test]
fn times_are_read_as_people_write_them() {
    for (words, time) in [
        ("around 3pm", "15:00"),
        ("15:30 works", "15:30"),
        ("3:30 pm", "15:30"),
        ("a las 3 de la tarde", "15:00"),
        ("at 3", "03:00"),
        ("at 3", "15:00"),
        ("15h", "15:00"),
        ("at noon", "12:00"),
        ("al mediodía", "12:00"),
    ] {
        assert!(read_on("time", json!(time), words).is_ok(), "{words} → {time}");
    }
    assert!(read_on("time", json!("16:00"), "around 3pm").is_err());
    assert!(read_on("time", json!("03:00"), "3 people").is_err(), "a number is no hour by itself");
    assert_eq!(read_on("date-time", json!("2026-11-28T15:00:00Z"), "tomorrow at 3pm"), Ok(Reading::Resolved));
    assert!(read_on("date-time", json!("2026-11-28T16:00:00Z"), "tomorrow at 3pm").is_err());
}

#[test]
fn codes_and_numbers_are_found_whatever_the_separators() {
    let code = r#"{"type": "string", "pattern": "[A-Z]{3}[0-9]{2}"}"#;
    assert_eq!(read_on(code, json!("ABC12"), "it's abc-12!"), Ok(Reading::Verbatim));
    assert!(read_on(code, json!("ABC13"), "it's abc-12!").is_err());
    let phone = r#"{"type": "string", "pattern": "\\+[0-9]{8,15}"}"#;
    assert_eq!(read_on(phone, json!("+56912345678"), "call +56 9 1234 5678"), Ok(Reading::Verbatim));
    assert!(read_on(phone, json!("+5691234567"), "call +56 9 1234 5678").is_err(), "a digit short");
    assert_eq!(read_on("text", json!("the blue gate"), "It's the BLUE gate."), Ok(Reading::Verbatim));
    assert_eq!(read_on("text", json!("blue"), "the one with the sky colour"), Ok(Reading::Unreadable));
}

/// What a reviewer found taken that the words do not say: a time's
/// substring, part of an address or a phone number, a choice named beside
/// another, a day in the past, a date and time in another zone.
#[test]
fn nothing_is_taken_from_a_part_of_what_was_written() {
    assert!(read_on("time", json!("3:00"), "come at 3:00pm").is_err(), "3:00pm is 15:00");
    assert!(read_on("time", json!("5:00"), "at 15:00").is_err());
    assert!(read_on("email", json!("ana@acme.com"), "write to ana@acme.com.br").is_err());
    assert!(read_on("email", json!("ana.b@x.com"), "ana_b@x.com").is_err());
    let phone = r#"{"type": "string", "pattern": "\\+[0-9]{6,15}"}"#;
    assert!(read_on(phone, json!("+5691234"), "call +56 9 1234 5678").is_err(), "the start of a number");
    let choice = "choice:morning|afternoon";
    assert_eq!(read_on(choice, json!("morning"), "not the morning, the afternoon"), Ok(Reading::Unreadable));
    assert_eq!(read_on("date", json!("2026-11-26"), "it came yesterday"), Ok(Reading::Resolved));
    assert_eq!(
        read_on("date", json!("2026-11-25"), "ayer"),
        Err("their words name 2026-11-26 (Thursday), not 2026-11-25".into())
    );
    assert_eq!(read_on("date", json!("2026-11-20"), "last Friday"), Ok(Reading::Resolved));
    assert_eq!(read_on("date", json!("2026-11-20"), "el viernes pasado"), Ok(Reading::Resolved));
    assert!(read_on("date", json!("2026-11-27"), "last Friday").is_err(), "not this one");
    let santiago: chrono_tz::Tz = "America/Santiago".parse().unwrap();
    let said = Said { words: "mañana a las 15:00", on: friday(), zone: santiago };
    let date_time = schema("date-time");
    assert_eq!(read(&date_time, &json!("2026-11-28T15:00:00-03:00"), said), Ok(Reading::Resolved));
    assert!(read(&date_time, &json!("2026-11-28T15:00:00Z"), said).is_err(), "12:00 in Santiago");
}

// The number words `in_words` writes.
const EN: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const EN_TENS: [&str; 10] = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const ES: [&str; 30] = [
    "cero",
    "uno",
    "dos",
    "tres",
    "cuatro",
    "cinco",
    "seis",
    "siete",
    "ocho",
    "nueve",
    "diez",
    "once",
    "doce",
    "trece",
    "catorce",
    "quince",
    "dieciséis",
    "diecisiete",
    "dieciocho",
    "diecinueve",
    "veinte",
    "veintiuno",
    "veintidós",
    "veintitrés",
    "veinticuatro",
    "veinticinco",
    "veintiséis",
    "veintisiete",
    "veintiocho",
    "veintinueve",
];
const ES_TENS: [&str; 10] =
    ["", "", "", "treinta", "cuarenta", "cincuenta", "sesenta", "setenta", "ochenta", "noventa"];
const ES_HUNDREDS: [&str; 10] = [
    "",
    "ciento",
    "doscientos",
    "trescientos",
    "cuatrocientos",
    "quinientos",
    "seiscientos",
    "setecientos",
    "ochocientos",
    "novecientos",
];
const PT: [&str; 20] = [
    "zero",
    "um",
    "dois",
    "três",
    "quatro",
    "cinco",
    "seis",
    "sete",
    "oito",
    "nove",
    "dez",
    "onze",
    "doze",
    "treze",
    "catorze",
    "quinze",
    "dezesseis",
    "dezessete",
    "dezoito",
    "dezenove",
];
const PT_TENS: [&str; 10] =
    ["", "", "vinte", "trinta", "quarenta", "cinquenta", "sessenta", "setenta", "oitenta", "noventa"];
const PT_HUNDREDS: [&str; 10] = [
    "",
    "cento",
    "duzentos",
    "trezentos",
    "quatrocentos",
    "quinhentos",
    "seiscentos",
    "setecentos",
    "oitocentos",
    "novecentos",
];

/// A number written in English, Spanish or Portuguese words (0 to 999).
fn in_words(n: u32, language: usize) -> String {
    let (hundreds, rest) = (n / 100, n % 100);
    let below_100 = |r: u32| -> String {
        match language {
            0 if r < 20 => EN[r as usize].into(),
            0 => [EN_TENS[(r / 10) as usize], EN[(r % 10) as usize]].join("-").replace("-zero", ""),
            1 if r < 30 => ES[r as usize].into(),
            1 if r.is_multiple_of(10) => ES_TENS[(r / 10) as usize].into(),
            1 => format!("{} y {}", ES_TENS[(r / 10) as usize], ES[(r % 10) as usize]),
            _ if r < 20 => PT[r as usize].into(),
            _ if r.is_multiple_of(10) => PT_TENS[(r / 10) as usize].into(),
            _ => format!("{} e {}", PT_TENS[(r / 10) as usize], PT[(r % 10) as usize]),
        }
    };
    match (hundreds, rest, language) {
        (0, r, _) => below_100(r),
        (h, 0, 0) => format!("{} hundred", EN[h as usize]),
        (h, r, 0) => format!("{} hundred and {}", EN[h as usize], below_100(r)),
        (1, 0, 1) => "cien".into(),
        (1, 0, _) => "cem".into(),
        (h, 0, 1) => ES_HUNDREDS[h as usize].into(),
        (h, 0, _) => PT_HUNDREDS[h as usize].into(),
        (h, r, 1) => format!("{} {}", ES_HUNDREDS[h as usize], below_100(r)),
        (h, r, _) => format!("{} e {}", PT_HUNDREDS[h as usize], below_100(r)),
    }
}

/// Words around a value that hold no number, day or address of their own.
fn filler() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["we", "are", "ok", "sure", "the", "gate", "is", "blue", "hi"]),
        0..5,
    )
    .prop_map(|w| w.join(" "))
}

proptest! {
    /// A number in the words, in digits or in any of the three languages'
    /// words, is taken; any other number is refused.
    #[test]
    fn a_number_is_taken_only_when_the_words_hold_it(
        n in 0u32..1000, other in 0u32..1000, language in 0usize..4, before in filler(), after in filler(),
    ) {
        prop_assume!(n != other);
        let written = if language == 3 { n.to_string() } else { in_words(n, language) };
        let words = format!("{before} {written} {after}");
        let expected = if language == 3 { Reading::Verbatim } else { Reading::Resolved };
        prop_assert_eq!(read_on("integer", json!(n), &words), Ok(expected), "{}", words);
        // A number's words are that number, never its parts ("twenty one" is no 20).
        prop_assert!(read_on("integer", json!(other), &words).is_err(), "{} in {}", other, words);
    }

    /// An address or a code is taken when written in the words, in any
    /// case; one a character off is refused.
    #[test]
    fn an_address_or_code_is_taken_only_when_written(
        local in "[a-z]{1,8}", domain in "[a-z]{2,8}", code in "[A-Z]{3}[0-9]{2}", before in filler(), upper in any::<bool>(),
    ) {
        let email = format!("{local}@{domain}.com");
        let shown = if upper { email.to_uppercase() } else { email.clone() };
        let words = format!("{before} {shown}. {code}");
        prop_assert_eq!(read_on("email", json!(email), &words), Ok(Reading::Verbatim));
        let other = format!("{local}x@{domain}.com");
        prop_assert!(read_on("email", json!(other), &words).is_err());
        let pattern = r#"{"type": "string", "pattern": "[A-Z]{3}[0-9]{2}"}"#;
        prop_assert_eq!(read_on(pattern, json!(code), &words), Ok(Reading::Verbatim));
        let off = format!("{}Z{}", &code[..2], &code[3..]);
        prop_assert_eq!(read_on(pattern, json!(off.clone()), &words).is_ok(), off == code);
    }

    /// A choice the words name is taken; another choice they do not name is
    /// refused when they name one, and left to a model when they name none.
    #[test]
    fn a_choice_is_taken_when_named(
        choices in prop::collection::btree_set("[a-z]{3,8}", 2..5), pick in any::<prop::sample::Index>(), before in filler(),
    ) {
        let choices: Vec<String> = choices.into_iter().collect();
        prop_assume!(choices.iter().all(|c| !["we", "are", "ok", "sure", "the", "gate", "is", "blue", "hi"].contains(&c.as_str())));
        let spec = format!("choice:{}", choices.join("|"));
        let chosen = pick.get(&choices);
        let words = format!("{before} {}!", chosen.to_uppercase());
        prop_assert_eq!(read_on(&spec, json!(chosen), &words), Ok(Reading::Verbatim));
        for other in choices.iter().filter(|c| *c != chosen) {
            prop_assert!(read_on(&spec, json!(other), &words).is_err());
            prop_assert_eq!(read_on(&spec, json!(other), &before), Ok(Reading::Unreadable));
        }
    }

    /// A weekday named is the next such day (or today, or a week on when
    /// "next"), in English, Spanish or Portuguese; no other day is.
    #[test]
    fn a_weekday_resolves_to_its_next_date_and_no_other(
        offset in 0u64..400, weekday in 0usize..7, language in 0usize..3, next in any::<bool>(), shift in 1u64..7,
    ) {
        const NAMES: [[&str; 7]; 3] = [
            ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"],
            ["lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"],
            ["segunda-feira", "terça-feira", "quarta-feira", "quinta-feira", "sexta-feira", "sábado", "domingo"],
        ];
        let today = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + Days::new(offset);
        let name = NAMES[language][weekday];
        let words = if next { format!("next {name}") } else { format!("the {name}") };
        let target = Weekday::try_from(weekday as u8).unwrap();
        let first = (0..7).map(|d| today + Days::new(d)).find(|d| d.weekday() == target).unwrap();
        let said = Said { words: &words, on: today, zone: chrono_tz::UTC };
        let date = |d: NaiveDate| json!(d.format("%Y-%m-%d").to_string());
        prop_assert_eq!(read(&schema("date"), &date(first), said), Ok(Reading::Resolved), "{} on {}", words, today);
        prop_assert!(read(&schema("date"), &date(first + Days::new(shift)), said).is_err());
        prop_assert!(read(&schema("date"), &date(first + Days::new(14)), said).is_err());
    }

    /// A date written out is taken as itself; any other date is refused.
    #[test]
    fn a_written_date_is_that_date(offset in 0u64..3000, other in 1u64..3000) {
        let day = NaiveDate::from_ymd_opt(2024, 1, 1).unwrap() + Days::new(offset);
        let text = day.format("%Y-%m-%d").to_string();
        let words = format!("on {text} please");
        prop_assert_eq!(read_on("date", json!(text), &words), Ok(Reading::Verbatim));
        let wrong = (day + Days::new(other)).format("%Y-%m-%d").to_string();
        prop_assert!(read_on("date", json!(wrong), &words).is_err());
    }

    /// A yes or no is never read by rule: a model decides.
    #[test]
    fn a_yes_or_no_is_left_to_a_model(words in ".{0,40}", value in any::<bool>()) {
        prop_assert_eq!(read_on("yes-no", json!(value), &words), Ok(Reading::Unreadable));
    }
}
