//! A conversation's start time as callers write it (`relay create
//! --start-at`, MCP's and the API's `start_at`): a time with its offset
//! ("2026-12-01T10:00:00-03:00", "2026-12-01 10:00 UTC"), a time on the
//! contact's clock, read in their zone ("2026-12-01 10:00", "tomorrow
//! 10:00", "today 3pm"), or how long from now ("in 2h"). Read in two
//! steps: [`parse`] says what the words say, whatever the zone (the CLI
//! checks that much before it asks the daemon); [`read`] makes them an
//! instant in the contact's zone and refuses one that cannot start: a local
//! time that does not exist there or happens twice (a daylight saving
//! change), one already passed, one more than [`MAX_START_AHEAD`] ahead.

use std::sync::LazyLock;

use chrono::{
    DateTime, Days, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeDelta, TimeZone, Utc,
};
use chrono_tz::Tz;
use regex::Regex;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ConversationInstance;
pub use super::limits::{MAX_START_AHEAD, START_SLACK};

/// [`MAX_START_AHEAD`] and [`START_SLACK`] as spans of the calendar.
fn ahead() -> TimeDelta {
    TimeDelta::from_std(MAX_START_AHEAD).expect("30 days")
}

fn slack() -> TimeDelta {
    TimeDelta::from_std(START_SLACK).expect("a minute")
}
use crate::courtesy::ZoneSource;

/// What a start time says, before a zone reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// An instant: the text gave its offset.
    Exact(DateTime<FixedOffset>),
    /// This long from now ("in 2h").
    In(std::time::Duration),
    /// A time on the contact's clock.
    Local { day: Day, time: NaiveTime },
}

/// The day of a time on the contact's clock: theirs, not the caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Day {
    Today,
    Tomorrow,
    On(NaiveDate),
}

/// The forms a start time takes, for every refusal.
pub const FORMS: &str = "a time with its offset (2026-12-01T10:00:00-03:00, 2026-12-01 10:00 UTC), a time on the \
                         contact's clock (2026-12-01 10:00, tomorrow 10:00, today 3pm) or how long from now (in 2h)";

/// The whole grammar, on the text trimmed and in lower case.
static GRAMMAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:(?P<date>\d{4}-\d{2}-\d{2})(?:t|\s+)|(?P<word>today|tomorrow)\s+)",
        r"(?:(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:\.(?P<frac>\d{1,9}))?)?",
        r"\s*(?P<offset>z|utc|[+-]\d{2}(?::?\d{2})?)?",
        r"|(?P<h12>\d{1,2})(?::(?P<m12>\d{2}))?\s*(?P<half>am|pm))$",
    ))
    .expect("the grammar is a regex")
});

/// A time of day alone, and a date alone: forms that say half of it.
static NO_DAY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{1,2}(?::\d{2}){1,2}\s*(?:am|pm)?$|^\d{1,2}\s*(?:am|pm)$").unwrap());
static NO_TIME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:\d{4}-\d{2}-\d{2}|today|tomorrow)$").unwrap());

/// What `text` says, or why it says no start time.
pub fn parse(text: &str) -> Result<Asked, String> {
    let said = text.trim().to_ascii_lowercase();
    if let Some(how_long) = said.strip_prefix("in ") {
        return crate::duration::parse(how_long).map(Asked::In).map_err(|_| {
            format!("'{}' is not a start time: after 'in', how long from now (in 2h, in 90m, in 3d)", shown(text))
        });
    }
    let Some(parts) = GRAMMAR.captures(&said) else {
        let given = shown(text.trim());
        return Err(if NO_DAY.is_match(&said) {
            format!("'{given}' has no day: give today {given}, tomorrow {given} or a date (2026-12-01 {given})")
        } else if NO_TIME.is_match(&said) {
            format!("'{given}' has no time of day: add one, e.g. '{given} 10:00'")
        } else {
            format!("'{given}' is not a start time: give {FORMS}")
        });
    };
    let number = |name: &str| parts.name(name).map(|m| m.as_str().parse::<u32>().expect("digits"));
    let day = match (parts.name("date"), parts.name("word").map(|m| m.as_str())) {
        (Some(date), _) => Day::On(
            NaiveDate::parse_from_str(date.as_str(), "%Y-%m-%d")
                .map_err(|_| format!("'{}': {} is not a day of the calendar", shown(text), date.as_str()))?,
        ),
        (None, Some("today")) => Day::Today,
        (None, _) => Day::Tomorrow,
    };
    let time = match (number("h"), number("h12")) {
        (Some(hours), _) => {
            let nanos = parts.name("frac").map_or(0, |f| format!("{:0<9}", f.as_str()).parse().expect("digits"));
            NaiveTime::from_hms_nano_opt(hours, number("m").unwrap_or(0), number("s").unwrap_or(0), nanos)
        }
        (None, Some(hours)) if (1..=12).contains(&hours) => {
            let afternoon = parts.name("half").is_some_and(|h| h.as_str() == "pm");
            NaiveTime::from_hms_opt(hours % 12 + if afternoon { 12 } else { 0 }, number("m12").unwrap_or(0), 0)
        }
        _ => None,
    };
    let time = time.ok_or_else(|| format!("'{}' is not a time of day: give e.g. 10:00, 18:30 or 3pm", shown(text)))?;
    let Some(offset) = parts.name("offset").map(|o| offset(o.as_str())) else {
        return Ok(Asked::Local { day, time });
    };
    let offset = offset.ok_or_else(|| format!("'{}' has an offset no clock keeps: give e.g. -03:00", shown(text)))?;
    match day {
        Day::On(date) => Ok(Asked::Exact(
            offset.from_local_datetime(&date.and_time(time)).single().expect("a fixed offset maps one to one"),
        )),
        _ => Err(format!(
            "'{}': an offset goes with a date (2026-12-01T10:00:00-03:00); today and tomorrow are the contact's, \
             read in their zone",
            shown(text)
        )),
    }
}

/// An offset as written: `z`, `utc`, `-03`, `+0530`, `-03:00`.
fn offset(text: &str) -> Option<FixedOffset> {
    if matches!(text, "z" | "utc") {
        return FixedOffset::east_opt(0);
    }
    let sign = if text.starts_with('-') { -1 } else { 1 };
    let digits: String = text[1..].chars().filter(char::is_ascii_digit).collect();
    let (hours, minutes) = (digits[..2].parse::<i32>().ok()?, digits.get(2..).map_or(Some(0), |m| m.parse().ok())?);
    (hours < 24 && minutes < 60).then(|| FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))).flatten()
}

/// The instant `asked` names for a contact in `zone`, at `now`; a time on
/// their clock that a daylight saving change skips, or shows twice, is
/// refused, saying what the clocks do then.
pub fn resolve(asked: Asked, zone: Tz, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let (day, time) = match asked {
        Asked::Exact(at) => return Ok(at.to_utc()),
        // Too long for the calendar is past its end, and too far ahead.
        Asked::In(wait) => {
            let wait = TimeDelta::from_std(wait).unwrap_or(TimeDelta::MAX);
            return Ok(now.checked_add_signed(wait).unwrap_or(DateTime::<Utc>::MAX_UTC));
        }
        Asked::Local { day, time } => (day, time),
    };
    let today = now.with_timezone(&zone).date_naive();
    let date = match day {
        Day::Today => today,
        Day::Tomorrow => today.checked_add_days(Days::new(1)).ok_or("tomorrow is past the calendar's end")?,
        Day::On(date) => date,
    };
    let local = date.and_time(time);
    match zone.from_local_datetime(&local) {
        LocalResult::Single(at) => Ok(at.to_utc()),
        LocalResult::Ambiguous(first, second) => {
            let exact = |at: DateTime<Tz>| at.format("%Y-%m-%dT%H:%M:%S%:z").to_string();
            Err(format!(
                "{} happens twice in {zone}: {}; say which with its offset: {} (the first) or {} (the second)",
                local.format("%Y-%m-%d %H:%M"),
                clocks(zone, local),
                exact(first),
                exact(second)
            ))
        }
        LocalResult::None => {
            let after = transition_near(zone, local).map(|(_, before, after)| local + (after - before));
            let instead = after.map(|at| format!(", e.g. {}", at.format("%H:%M"))).unwrap_or_default();
            Err(format!(
                "{} does not exist in {zone}: {}; give a time the clocks show{instead}, or a time with its offset",
                local.format("%Y-%m-%d %H:%M"),
                clocks(zone, local)
            ))
        }
    }
}

/// What the clocks of `zone` do around `local`, in words: "the clocks go
/// forward from 00:00 to 01:00 on 2026-09-06 (daylight saving time)".
fn clocks(zone: Tz, local: NaiveDateTime) -> String {
    let Some((at, before, after)) = transition_near(zone, local) else {
        return "the clocks change there then (daylight saving time)".into();
    };
    let on = |offset: TimeDelta| (at.naive_utc() + offset).format("%H:%M").to_string();
    let way = if after > before { "forward" } else { "back" };
    let day = (at.naive_utc() + before).format("%Y-%m-%d");
    format!("the clocks go {way} from {} to {} on {day} (daylight saving time)", on(before), on(after))
}

/// The change of offset in `zone` within two days of `local`: when, and the
/// offsets before and after it (from UTC).
fn transition_near(zone: Tz, local: NaiveDateTime) -> Option<(DateTime<Utc>, TimeDelta, TimeDelta)> {
    let offset = |second: i64| {
        let at = DateTime::from_timestamp(second, 0).unwrap_or_default().naive_utc();
        TimeDelta::seconds(zone.offset_from_utc_datetime(&at).fix().local_minus_utc().into())
    };
    let around = local.and_utc().timestamp();
    let (mut early, mut late) = (around - 2 * 86_400, around + 2 * 86_400);
    let before = offset(early);
    if offset(late) == before {
        return None;
    }
    // The first second whose offset is not `before`.
    while late - early > 1 {
        let middle = early + (late - early) / 2;
        if offset(middle) == before { early = middle } else { late = middle }
    }
    Some((DateTime::from_timestamp(late, 0)?, before, offset(late)))
}

/// `text` read as a start time for a contact in `zone` at `now`: the
/// instant, or why it cannot be one. Within [`START_SLACK`] before now is
/// now (a caller's clock may be behind, and a local time names a minute).
pub fn read(text: &str, zone: Tz, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let at = resolve(parse(text)?, zone, now)?;
    let there = |at: DateTime<Utc>| on_clock(at, zone);
    let given = format!("the start time '{}' ({} in {zone})", shown(text.trim()), there(at));
    if now - at > slack() {
        return Err(format!("{given} has already passed: it is {} there now", there(now)));
    }
    if at - now > ahead() {
        let days = ahead().num_days();
        return Err(format!(
            "{given} is more than {days} days ahead: a conversation waits at most {days} days to start (it holds \
             its contact's queue meanwhile)"
        ));
    }
    Ok(at)
}

/// `at` on a clock of `zone`, with its offset: "2026-12-01 10:00 -03:00",
/// and the seconds when there are some ("in 2h" is to the second).
fn on_clock(at: DateTime<Utc>, zone: Tz) -> String {
    let format = if at.timestamp() % 60 == 0 { "%Y-%m-%d %H:%M %:z" } else { "%Y-%m-%d %H:%M:%S %:z" };
    at.with_timezone(&zone).format(format).to_string()
}

/// At most 60 characters of what was given, for a refusal.
fn shown(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The JSON Schema `pattern` of a start time in its plainest forms: a date
/// and a 24-hour time with seconds or not, and an offset (`Z`, `-03:00`)
/// or not (the contact's clock); `today`/`tomorrow` and a time; or `in`
/// and a duration of at most [`MAX_START_AHEAD`] (`in 2h`).
/// [`parse`] takes more (other spacing and case, `UTC`, 3pm); every string
/// the pattern matches it takes (every day of the pattern is a day of any
/// year: the 29th of February is left out).
pub fn pattern() -> String {
    let (hour, minute) = ("(?:[01][0-9]|2[0-3])", "[0-5][0-9]");
    let days = "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)\
                |02-(?:0[1-9]|1[0-9]|2[0-8]))";
    let time = format!("{hour}:{minute}(?::{minute})?");
    let how_long = crate::duration::pattern(MAX_START_AHEAD);
    let how_long = how_long.trim_start_matches('^').trim_end_matches('$');
    format!("^(?:[0-9]{{4}}-{days}[T ]{time}(?:Z|[+-]{hour}:{minute})?|(?:today|tomorrow) {time}|in {how_long})$")
}

/// When a conversation created with a start time starts, as relay read it
/// (`CreateInstanceResponse::start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StartTime {
    /// The instant: the first message waits for it (`waiting_for: start_at`).
    pub at: DateTime<Utc>,
    /// The same on the contact's clock, with its offset: "2026-12-01 10:00 -03:00".
    pub local: String,
    /// The zone the time was read in: the contact's.
    pub time_zone: String,
    /// Where that zone came from: `given` (`time_zone`), `country` (the
    /// number's country keeps one time) or `default` (`courtesy.default_tz`,
    /// the country keeping several times or none being known).
    pub zone_source: ZoneSource,
}

impl StartTime {
    /// The start time of `instance`, if it was created with one.
    pub fn of(instance: &ConversationInstance) -> Option<StartTime> {
        let (at, time) = (instance.start_at?, instance.contact_time.as_ref()?);
        let local = on_clock(at, time.time_zone.parse::<Tz>().unwrap_or(Tz::UTC));
        Some(StartTime { at, local, time_zone: time.time_zone.clone(), zone_source: time.zone_source })
    }
}

#[cfg(test)]
mod tests;
