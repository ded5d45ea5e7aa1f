//! Quiet hours: a daily window, in the contact's own time, in which relay
//! starts nothing on its own ("21:00-09:00").

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// From `start` (included) to `end` (excluded), local time; the window
/// wraps midnight when `end` comes before `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    pub start: NaiveTime,
    pub end: NaiveTime,
}

impl QuietHours {
    /// Whether local time `t` is quiet.
    pub fn contains(&self, t: NaiveTime) -> bool {
        if self.start < self.end { self.start <= t && t < self.end } else { t >= self.start || t < self.end }
    }

    /// The first instant at or after `at` that is not quiet in `tz`: `at`
    /// itself when it is not, else the window's end (on a day whose clocks
    /// skip that hour, the first minute after it that exists).
    pub fn next_open(&self, at: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
        let local = at.with_timezone(&tz);
        if !self.contains(local.time()) {
            return at;
        }
        // The end is later today, or (in the evening part of a window
        // that wraps midnight) tomorrow.
        let mut day = local.date_naive();
        if self.start > self.end && local.time() >= self.start {
            day = day.succ_opt().unwrap_or(day);
        }
        let mut end = day.and_time(self.end);
        // A clock change can skip the end's local time: step to the first
        // minute that exists and is open. When the jump swallows the whole
        // open part of that day (03:00-03:09 on a day whose clocks go from
        // 02:45 to 03:45), that is the next day's: two days of minutes.
        for _ in 0..2 * 24 * 60 {
            // An hour the clocks repeat has two instants: the first not before `at`.
            let local = tz.from_local_datetime(&end);
            for open in [local.earliest(), local.latest()].into_iter().flatten() {
                let open = open.with_timezone(&Utc);
                if open >= at && !self.contains(open.with_timezone(&tz).time()) {
                    return open;
                }
            }
            end += Duration::minutes(1);
        }
        at + Duration::hours(48)
    }
}

impl FromStr for QuietHours {
    type Err = String;

    /// "21:00-09:00".
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wrong =
            || format!("'{s}' is not a quiet-hours window: write it as 21:00-09:00 (from-to, 24-hour clock), or off");
        let (start, end) = s.trim().split_once('-').ok_or_else(wrong)?;
        let time = |t: &str| NaiveTime::parse_from_str(t.trim(), "%H:%M").map_err(|_| wrong());
        let (start, end) = (time(start)?, time(end)?);
        if start == end {
            return Err(format!("'{s}' is an empty window: its start and end are the same time"));
        }
        Ok(QuietHours { start, end })
    }
}

impl fmt::Display for QuietHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hm = |t: NaiveTime| format!("{:02}:{:02}", t.hour(), t.minute());
        write!(f, "{}-{}", hm(self.start), hm(self.end))
    }
}

impl Serialize for QuietHours {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for QuietHours {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Quiet hours as a setting: a window, or "off".
pub fn parse_setting(s: &str) -> Result<Option<QuietHours>, String> {
    match s.trim() {
        off if off.eq_ignore_ascii_case("off") => Ok(None),
        window => window.parse().map(Some),
    }
}

/// The JSON Schema `pattern` of what [`parse_setting`] takes, in its
/// plainest form: `off` in any case, or a window `HH:MM-HH:MM` (24-hour
/// clock, two digits each) whose start and end differ. It takes more
/// (spaces, one-digit hours); every string the pattern matches it takes.
pub fn pattern() -> String {
    // Two times differ in one of their four digits: for each digit and each
    // value of it, a start with that value there and an end without it.
    let (tens, units): (Digit, Digit) = (|n| n / 10, |n| n % 10);
    let digits = [(tens, true), (units, true), (tens, false), (units, false)];
    let mut windows = Vec::new();
    for (digit, of_the_hour) in digits {
        for value in 0..10 {
            let time = |keep: &dyn Fn(u32) -> bool| {
                let (hours, minutes) = if of_the_hour { (keep, &any as _) } else { (&any as _, keep) };
                Some(format!("{}:{}", two_digits(24, hours)?, two_digits(60, minutes)?))
            };
            if let (Some(start), Some(end)) = (time(&|n| digit(n) == value), time(&|n| digit(n) != value)) {
                windows.push(format!("{start}-{end}"));
            }
        }
    }
    format!("^(?:{}|{})$", crate::fsm::any_case("off"), windows.join("|"))
}

/// One digit of a two-digit number: its tens, or its units.
type Digit = fn(u32) -> u32;

fn any(_: u32) -> bool {
    true
}

/// A regular expression of the two-digit numbers below `below` that `keep`
/// takes (none if it takes none): tens that take the same units share a
/// class, as `[0-5][0-9]`.
fn two_digits(below: u32, keep: &dyn Fn(u32) -> bool) -> Option<String> {
    let class = |digits: &[u32]| -> String {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &d in digits {
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == d => *last = d,
                _ => runs.push((d, d)),
            }
        }
        let runs: String = runs.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
        format!("[{runs}]")
    };
    let mut groups: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    for tens in 0..below.div_ceil(10) {
        let units: Vec<u32> = (0..10).filter(|u| tens * 10 + u < below && keep(tens * 10 + u)).collect();
        if units.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(same, _)| *same == units) {
            Some((_, tens_of)) => tens_of.push(tens),
            None => groups.push((units, vec![tens])),
        }
    }
    let forms: Vec<String> = groups.iter().map(|(units, tens)| format!("{}{}", class(tens), class(units))).collect();
    (!forms.is_empty()).then(|| format!("(?:{})", forms.join("|")))
}

/// Serde for `Option<QuietHours>` written as a window or "off" (never null):
/// an operator reading config.json sees that quiet hours can be turned off.
pub mod setting {
    use super::QuietHours;

    pub fn serialize<S: serde::Serializer>(value: &Option<QuietHours>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(window) => serializer.collect_str(window),
            None => serializer.serialize_str("off"),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<QuietHours>, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        super::parse_setting(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ZONES: &[Tz] = &[
        Tz::America__Santiago,
        Tz::Europe__Madrid,
        Tz::America__New_York,
        Tz::Australia__Lord_Howe,
        Tz::Asia__Kolkata,
        Tz::Pacific__Chatham,
        Tz::UTC,
    ];

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn the_window_is_read_and_written_back_and_wrong_ones_are_refused_in_words() {
        let q: QuietHours = "21:00-09:00".parse().unwrap();
        assert_eq!(q.to_string(), "21:00-09:00");
        assert_eq!(parse_setting("OFF"), Ok(None));
        for wrong in ["21-9", "25:00-09:00", "9pm-9am", "", "21:00-21:00"] {
            assert!(parse_setting(wrong).is_err(), "{wrong}");
        }
        assert!(parse_setting("nine").unwrap_err().contains("21:00-09:00"));
    }

    /// Found by the property below: on 2028-09-24 Chatham's clocks go from
    /// 02:45 to 03:45, so a window open only 03:00-03:09 has no open minute
    /// that day; the next open instant is the next day's 03:00.
    #[test]
    fn a_clock_change_that_swallows_the_open_part_waits_for_the_next_day() {
        let q: QuietHours = "03:09-03:00".parse().unwrap();
        let tz = Tz::Pacific__Chatham;
        let at = utc("2028-09-22T14:24:00Z"); // 03:09 on the 23rd, Chatham time
        let open = q.next_open(at, tz);
        assert_eq!(open.with_timezone(&tz).to_rfc3339(), "2028-09-25T03:00:00+13:45");
    }

    #[test]
    fn a_time_in_quiet_hours_waits_for_the_mornings_end_in_the_contacts_zone() {
        let q: QuietHours = "21:00-09:00".parse().unwrap();
        // 23:00 in Santiago (UTC-3 in January) is 02:00 UTC; 09:00 is 12:00 UTC.
        let tz = Tz::America__Santiago;
        assert_eq!(q.next_open(utc("2026-01-15T02:00:00Z"), tz), utc("2026-01-15T12:00:00Z"));
        // 02:00 the same night: the same morning.
        assert_eq!(q.next_open(utc("2026-01-15T05:00:00Z"), tz), utc("2026-01-15T12:00:00Z"));
        // 15:00: now.
        assert_eq!(q.next_open(utc("2026-01-15T18:00:00Z"), tz), utc("2026-01-15T18:00:00Z"));
    }

    /// The pattern takes a window exactly when its start and end differ,
    /// every hour and minute tried as a start, and `off` in any case.
    #[test]
    fn the_pattern_takes_the_windows_parse_takes() {
        let pattern = regex::Regex::new(&pattern()).unwrap();
        for (h, m) in (0..24).flat_map(|h| (0..60).map(move |m| (h, m))) {
            let start = format!("{h:02}:{m:02}");
            for end in [start.clone(), format!("{:02}:{m:02}", (h + 1) % 24), format!("{h:02}:{:02}", (m + 1) % 60)] {
                let window = format!("{start}-{end}");
                assert_eq!(pattern.is_match(&window), start != end, "{window}");
                assert_eq!(parse_setting(&window).is_ok(), start != end, "{window}");
            }
        }
        for taken in ["off", "OFF", "Off", "22:00-08:00", "00:00-23:59"] {
            assert!(pattern.is_match(taken) && parse_setting(taken).is_ok(), "{taken}");
        }
        for refused in ["", "of", "24:00-08:00", "22:60-08:00", "22:00", "22:00-08:00-09:00", "9:00-10:00"] {
            assert!(!pattern.is_match(refused), "{refused}");
        }
    }

    proptest! {
        /// A client that writes quiet hours as the schema's pattern says is
        /// never refused.
        #[test]
        fn every_string_the_pattern_matches_parses(
            text in proptest::string::string_regex(pattern().trim_start_matches('^').trim_end_matches('$')).unwrap(),
        ) {
            prop_assert!(regex::Regex::new(&pattern()).unwrap().is_match(&text), "{}", text);
            prop_assert!(parse_setting(&text).is_ok(), "{}: {:?}", text, parse_setting(&text));
        }
    }

    fn window() -> impl Strategy<Value = QuietHours> {
        (0u32..24, 0u32..60, 0u32..24, 0u32..60)
            .prop_filter("a window has length", |(a, b, c, d)| (a, b) != (c, d))
            .prop_map(|(a, b, c, d)| QuietHours {
                start: NaiveTime::from_hms_opt(a, b, 0).unwrap(),
                end: NaiveTime::from_hms_opt(c, d, 0).unwrap(),
            })
    }

    proptest! {
        /// For any window, zone and instant (DST changes included): the
        /// answer is not quiet, not before `at`, at most a day later (two
        /// when a clock change swallowed that day's open part), and the
        /// earliest such instant (a minute before it was quiet).
        #[test]
        fn the_next_open_instant_is_the_first_that_is_not_quiet(
            q in window(),
            zone in 0..ZONES.len(),
            secs in 1_700_000_000i64..1_900_000_000,
        ) {
            let (tz, at) = (ZONES[zone], DateTime::from_timestamp(secs, 0).unwrap());
            let open = q.next_open(at, tz);
            prop_assert!(open >= at);
            prop_assert!(open - at <= Duration::hours(49), "{} after {}", open, at);
            prop_assert!(!q.contains(open.with_timezone(&tz).time()), "{} is quiet", open);
            if open > at {
                let before = open - Duration::minutes(1);
                prop_assert!(before < at || q.contains(before.with_timezone(&tz).time()), "{} was already open", before);
            }
        }
    }
}
