//! The days and times a contact's words name: written out ("2026-12-04",
//! "4/12", "December 4th", "4 de diciembre", "15:30", "3pm") or relative to
//! the day they wrote ("tomorrow", "Friday", "next Monday", "mañana", "el
//! viernes", "sexta-feira"), resolved against that day in their zone.
//! Where the words allow more than one reading ("4/12" as the 4th of
//! December or April 12th, "at 3" as 03:00 or 15:00, "Friday" said on a
//! Friday), every reading is given: a value matches if it is one of them.

use chrono::{Datelike, Days, NaiveDate, NaiveTime, Weekday};
use regex::Regex;
use std::sync::LazyLock;

use crate::courtesy::normalise;

/// The days `text`, written on `today`, names.
pub fn days_in(text: &str, today: NaiveDate) -> Vec<NaiveDate> {
    // Digits of any width or script as ASCII ones.
    let text = &crate::courtesy::fold(text);
    let mut days = written_days(text, today);
    let words: Vec<String> = normalise(text).split(' ').map(str::to_string).collect();
    let mut at = 0;
    while at < words.len() {
        let rest: Vec<&str> = words[at..].iter().map(String::as_str).collect();
        if let Some((ahead, used)) = relative_day(&rest, at.checked_sub(1).map(|b| words[b].as_str())) {
            days.extend(today.checked_add_signed(chrono::Duration::days(ahead)));
            at += used;
            continue;
        }
        if let Some(weekday) = weekday(&rest) {
            let before = at.checked_sub(1).map(|b| words[b].as_str());
            let after = rest.iter().skip_while(|w| **w != "feira").nth(1).or(rest.get(1)).copied();
            let last = matches!(before, Some("last")) || matches!(after, Some("pasado" | "passado" | "passada"));
            let next = matches!(before, Some("next" | "proximo" | "proxima"))
                || matches!(rest.get(1..3), Some(["que", "viene" | "vem"]));
            let first = (0..7).map(|d| today + Days::new(d)).find(|d| d.weekday() == weekday).expect("a week");
            if last {
                // The one before today ("last Friday", "el viernes pasado").
                days.extend((1..=7).map(|d| today - Days::new(d)).find(|d| d.weekday() == weekday));
            } else {
                days.push(first);
                if next || first == today {
                    days.push(first + Days::new(7));
                }
            }
        }
        at += 1;
    }
    days
}

/// "today", "tomorrow", "yesterday", "the day after tomorrow" and their
/// Spanish and Portuguese words: how many days ahead (or back), and how
/// many words they take. "mañana" after "la" is the morning, not tomorrow.
fn relative_day(words: &[&str], before: Option<&str>) -> Option<(i64, usize)> {
    let starts = |phrase: &[&str]| words.len() >= phrase.len() && words[..phrase.len()] == *phrase;
    let phrases: &[(&[&str], i64)] = &[
        (&["day", "before", "yesterday"], -2),
        (&["antes", "de", "ayer"], -2),
        (&["anteayer"], -2),
        (&["anteontem"], -2),
        (&["yesterday"], -1),
        (&["ayer"], -1),
        (&["ontem"], -1),
        (&["day", "after", "tomorrow"], 2),
        (&["pasado", "manana"], 2),
        (&["depois", "de", "amanha"], 2),
        (&["today"], 0),
        (&["hoy"], 0),
        (&["hoje"], 0),
        (&["tonight"], 0),
        (&["tomorrow"], 1),
        (&["amanha"], 1),
        (&["manana"], 1),
    ];
    let (phrase, ahead) = phrases.iter().find(|(phrase, _)| starts(phrase))?;
    if phrase == &["manana"] && matches!(before, Some("la" | "las" | "de" | "esta")) {
        return None;
    }
    Some((*ahead, phrase.len()))
}

fn weekday(words: &[&str]) -> Option<Weekday> {
    use Weekday::*;
    let day = match *words.first()? {
        "monday" | "lunes" => Mon,
        "tuesday" | "martes" => Tue,
        "wednesday" | "miercoles" => Wed,
        "thursday" | "jueves" => Thu,
        "friday" | "viernes" => Fri,
        "saturday" | "sabado" => Sat,
        "sunday" | "domingo" => Sun,
        // Portuguese weekdays are ordinals: only with "feira" ("sexta-feira").
        "segunda" | "terca" | "quarta" | "quinta" | "sexta" if words.get(1) == Some(&"feira") => match words[0] {
            "segunda" => Mon,
            "terca" => Tue,
            "quarta" => Wed,
            "quinta" => Thu,
            _ => Fri,
        },
        _ => return None,
    };
    Some(day)
}

fn month(word: &str) -> Option<u32> {
    let month = match word {
        "january" | "jan" | "enero" | "janeiro" => 1,
        "february" | "feb" | "febrero" | "fevereiro" => 2,
        "march" | "marzo" | "marco" => 3,
        "april" | "apr" | "abril" => 4,
        "may" | "mayo" | "maio" => 5,
        "june" | "jun" | "junio" | "junho" => 6,
        "july" | "jul" | "julio" | "julho" => 7,
        "august" | "aug" | "agosto" => 8,
        "september" | "sep" | "sept" | "septiembre" | "setiembre" | "setembro" => 9,
        "october" | "oct" | "octubre" | "outubro" => 10,
        "november" | "nov" | "noviembre" | "novembro" => 11,
        "december" | "dec" | "diciembre" | "dezembro" => 12,
        _ => return None,
    };
    Some(month)
}

/// A day of the month as written: "4", "4th", "1st", "1o" (from "1º").
fn day_number(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    let day: u32 = digits.parse().ok()?;
    (matches!(suffix, "" | "st" | "nd" | "rd" | "th" | "o" | "er") && (1..=31).contains(&day)).then_some(day)
}

/// Days written out: ISO dates; day/month (or month/day) with or without a
/// year; a named month with its day before it ("4 de diciembre", "4th of
/// december") or after it ("december 4"). Without a year, this year's or
/// the next.
fn written_days(text: &str, today: NaiveDate) -> Vec<NaiveDate> {
    static ISO: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b").expect("regex"));
    static NUMERIC: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(\d{1,2})[/.-](\d{1,2})(?:[/.-](\d{4}|\d{2}))?\b").expect("regex"));
    let mut days = Vec::new();
    for c in ISO.captures_iter(text) {
        days.extend(ymd(&c[1], &c[2], &c[3]));
    }
    for c in NUMERIC.captures_iter(text) {
        // Not the month and day of an ISO date ("2024-03-01" holds "03-01").
        let start = c.get(0).expect("the match").start();
        if text[..start].ends_with(['-', '/', '.']) {
            continue;
        }
        let years = match c.get(3) {
            Some(y) if y.as_str().len() == 2 => vec![2000 + y.as_str().parse::<i32>().unwrap_or(0)],
            Some(y) => vec![y.as_str().parse().unwrap_or(0)],
            None => vec![today.year(), today.year() + 1],
        };
        let (a, b) = (c[1].parse::<u32>().unwrap_or(0), c[2].parse::<u32>().unwrap_or(0));
        for year in years {
            days.extend(NaiveDate::from_ymd_opt(year, b, a));
            days.extend(NaiveDate::from_ymd_opt(year, a, b));
        }
    }
    let words: Vec<String> = normalise(text).split(' ').map(str::to_string).collect();
    for (at, word) in words.iter().enumerate() {
        let Some(m) = month(word) else { continue };
        // The day before the month ("4 de diciembre", "4th of december") or after it ("december 4").
        let before = words[..at].iter().rev().take(3).filter(|w| !matches!(w.as_str(), "de" | "of" | "the"));
        let day = before.take(1).find_map(|w| day_number(w)).or_else(|| words.get(at + 1).and_then(|w| day_number(w)));
        let Some(day) = day else { continue };
        let after: Vec<&str> = words[at + 1..].iter().take(4).map(String::as_str).collect();
        let year = after.iter().filter(|w| w.len() == 4).find_map(|w| w.parse::<i32>().ok());
        let years = year.map_or(vec![today.year(), today.year() + 1], |y| vec![y]);
        days.extend(years.into_iter().filter_map(|y| NaiveDate::from_ymd_opt(y, m, day)));
    }
    days
}

fn ymd(y: &str, m: &str, d: &str) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
}

/// The times of day `text` names: "15:30", "3:30pm", "3pm", "15h", "15h30",
/// "noon", "mediodía"; a bare hour after "at", "a las", "às" ("at 3") is
/// either half of the day unless the words say which ("de la tarde").
pub fn times_in(text: &str) -> Vec<NaiveTime> {
    let text = &crate::courtesy::fold(text);
    static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(\d{1,2})(?:[:h.](\d{2})|\s*h\b)?\s*(a\.?\s?m\.?|p\.?\s?m\.?)?").expect("regex")
    });
    let mut times = Vec::new();
    let folded = normalise(text);
    for c in CLOCK.captures_iter(text) {
        let Ok(hour) = c[1].parse::<u32>() else { continue };
        let minute = c.get(2).map_or(0, |m| m.as_str().parse().unwrap_or(99));
        let meridiem = c.get(3).map(|m| m.as_str().to_ascii_lowercase());
        let clock = c.get(2).is_some() || c[0].trim_end().ends_with(['h', 'H']);
        let hours: Vec<u32> = match meridiem.as_deref().map(|m| m.starts_with('p')) {
            Some(pm) if (1..=12).contains(&hour) => vec![hour % 12 + if pm { 12 } else { 0 }],
            Some(_) => Vec::new(),
            None if clock => vec![hour],
            // A bare number is an hour only where the words say so.
            None if said_as_hour(&folded, &c[1]) => match afternoon(&folded) {
                Some(true) if hour < 12 => vec![hour + 12],
                Some(_) => vec![hour],
                None if hour <= 12 => vec![hour % 12, hour % 12 + 12],
                None => vec![hour],
            },
            None => Vec::new(),
        };
        times.extend(hours.into_iter().filter_map(|h| NaiveTime::from_hms_opt(h, minute, 0)));
    }
    let named: &[(&str, u32)] =
        &[("noon", 12), ("midday", 12), ("mediodia", 12), ("meio dia", 12), ("midnight", 0), ("medianoche", 0)];
    let spaced = format!(" {folded} ");
    for (name, hour) in named {
        if spaced.contains(&format!(" {name} ")) {
            times.extend(NaiveTime::from_hms_opt(*hour, 0, 0));
        }
    }
    times
}

/// Whether `number` stands in `folded` as an hour: after "at", "a las",
/// "as", "by", "around", or before "o'clock" / "oclock" / "horas".
fn said_as_hour(folded: &str, number: &str) -> bool {
    let spaced = format!(" {folded} ");
    ["at", "a las", "a la", "as", "by", "around", "tipo", "sobre las", "hacia las", "desde las", "hasta las"]
        .iter()
        .any(|lead| spaced.contains(&format!(" {lead} {number} ")))
        || ["o'clock", "oclock", "horas", "hrs", "hs"].iter().any(|tail| spaced.contains(&format!(" {number} {tail} ")))
}

/// Whether the words place a bare hour after noon ("in the afternoon", "de
/// la tarde", "da tarde", "de la noche") or before it ("in the morning",
/// "de la mañana", "da manhã"); None when they do not say.
fn afternoon(folded: &str) -> Option<bool> {
    let spaced = format!(" {folded} ");
    let has = |words: &[&str]| words.iter().any(|w| spaced.contains(&format!(" {w} ")));
    if has(&["afternoon", "evening", "tarde", "noche", "noite", "tonight"]) {
        Some(true)
    } else if has(&["morning", "la manana", "da manha", "de manha"]) {
        Some(false)
    } else {
        None
    }
}
