use super::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn zone(name: &str) -> Tz {
    name.parse().unwrap()
}

fn local(date: &str, time: &str) -> Asked {
    Asked::Local { day: Day::On(date.parse().unwrap()), time: NaiveTime::parse_from_str(time, "%H:%M").unwrap() }
}

/// Any zone of the tz database.
fn any_zone() -> impl Strategy<Value = Tz> {
    prop::sample::select(chrono_tz::TZ_VARIANTS.to_vec())
}

/// Any minute of 2026 and 2027, as a date and a time.
fn any_minute() -> impl Strategy<Value = NaiveDateTime> {
    (0i64..2 * 365 * 24 * 60)
        .prop_map(|m| "2026-01-01T00:00:00".parse::<NaiveDateTime>().unwrap() + chrono::TimeDelta::minutes(m))
}

/// Every clock change of `zone` in 2026 and 2027, as its clocks showed it
/// just before.
fn changes(zone: Tz) -> Vec<NaiveDateTime> {
    let start = utc("2026-01-01T00:00:00Z");
    let offset = |at: DateTime<Utc>| zone.offset_from_utc_datetime(&at.naive_utc()).fix();
    let days = (0..730).map(|d| start + chrono::TimeDelta::days(d));
    let changed = days.filter(|day| offset(*day) != offset(*day + chrono::TimeDelta::days(1)));
    let found = changed.filter_map(|day| transition_near(zone, (day + chrono::TimeDelta::hours(12)).naive_utc()));
    found.map(|(at, before, _)| at.naive_utc() + before).collect()
}

/// A zone that changes its clocks, and a minute within two hours of a change.
fn near_a_clock_change() -> impl Strategy<Value = (Tz, NaiveDateTime)> {
    static CHANGING: LazyLock<Vec<(Tz, Vec<NaiveDateTime>)>> = LazyLock::new(|| {
        let zones = chrono_tz::TZ_VARIANTS.iter().map(|zone| (*zone, changes(*zone)));
        zones.filter(|(_, changes)| !changes.is_empty()).collect()
    });
    (0..CHANGING.len(), any::<prop::sample::Index>(), -120i64..120).prop_map(|(zone, change, minutes)| {
        let (zone, changes) = &CHANGING[zone];
        (*zone, *change.get(changes) + chrono::TimeDelta::minutes(minutes))
    })
}

/// A time on the contact's clock is that time in their zone, or is refused
/// because their clocks skip it (no instant shows it: the time offered
/// instead is one they show) or show it twice (each offset it names shows
/// it, and reads back).
fn read_as_the_contacts_clock_shows_it(zone: Tz, at: NaiveDateTime) -> Result<(), TestCaseError> {
    let now = utc("2026-01-01T00:00:00Z");
    let asked = Asked::Local { day: Day::On(at.date()), time: at.time() };
    match (resolve(asked, zone, now), zone.from_local_datetime(&at)) {
        (Ok(instant), LocalResult::Single(_)) => prop_assert_eq!(instant.with_timezone(&zone).naive_local(), at),
        (Err(why), LocalResult::None) => {
            prop_assert!(why.contains("does not exist") && why.contains("go forward from"), "{}", why);
            let instead = why.split("e.g. ").nth(1).map(|rest| &rest[..5]);
            let shown = parse(&format!("{} {}", at.format("%Y-%m-%d"), instead.unwrap_or("none"))).unwrap();
            prop_assert!(resolve(shown, zone, now).is_ok(), "{}", why);
        }
        (Err(why), LocalResult::Ambiguous(first, second)) => {
            prop_assert!(why.contains("happens twice") && why.contains("go back from"), "{}", why);
            let offered = why.split(": ").last().unwrap().split(' ').filter(|w| w.contains('T'));
            let read: Vec<DateTime<Utc>> = offered.map(|o| resolve(parse(o).unwrap(), zone, now).unwrap()).collect();
            prop_assert_eq!(read, vec![first.to_utc(), second.to_utc()], "{}", why);
        }
        (got, expected) => prop_assert!(false, "{:?} for {:?}", got, expected),
    }
    Ok(())
}

#[test]
fn the_issues_forms_are_read() {
    let (santiago, now) = (zone("America/Santiago"), utc("2026-11-28T12:00:00Z"));
    let read = |text: &str| read(text, santiago, now);
    assert_eq!(read("2026-12-01 10:00"), Ok(utc("2026-12-01T13:00:00Z")));
    assert_eq!(read("tomorrow 10:00"), Ok(utc("2026-11-29T13:00:00Z")));
    assert_eq!(read("  Tomorrow 3PM "), Ok(utc("2026-11-29T18:00:00Z")));
    assert_eq!(parse("today 12am"), parse("today 00:00"), "12am is midnight");
    assert_eq!(read("2026-12-01T10:00:00+01:00"), Ok(utc("2026-12-01T09:00:00Z")));
    assert_eq!(read("2026-12-01 10:00 UTC"), Ok(utc("2026-12-01T10:00:00Z")));
    assert_eq!(read("2026-12-01t10:00:30.5z"), Ok(utc("2026-12-01T10:00:30.5Z")));
    assert_eq!(read("in 1h30m"), Ok(utc("2026-11-28T13:30:00Z")));
    assert_eq!(read("IN 3d"), Ok(utc("2026-12-01T12:00:00Z")));
}

#[test]
fn what_is_not_a_start_time_is_refused_saying_what_it_lacks() {
    let refused = |text: &str| parse(text).unwrap_err();
    assert_eq!(
        refused("soon"),
        "'soon' is not a start time: give a time with its offset (2026-12-01T10:00:00-03:00, 2026-12-01 10:00 \
         UTC), a time on the contact's clock (2026-12-01 10:00, tomorrow 10:00, today 3pm) or how long from now \
         (in 2h)"
    );
    assert_eq!(refused("10:00"), "'10:00' has no day: give today 10:00, tomorrow 10:00 or a date (2026-12-01 10:00)");
    assert_eq!(refused("tomorrow"), "'tomorrow' has no time of day: add one, e.g. 'tomorrow 10:00'");
    assert_eq!(refused("2026-02-30 10:00"), "'2026-02-30 10:00': 2026-02-30 is not a day of the calendar");
    assert_eq!(refused("2026-12-01 25:00"), "'2026-12-01 25:00' is not a time of day: give e.g. 10:00, 18:30 or 3pm");
    assert_eq!(refused("today 13pm"), "'today 13pm' is not a time of day: give e.g. 10:00, 18:30 or 3pm");
    assert!(refused("tomorrow 10:00-03:00").contains("an offset goes with a date"));
    assert!(refused("2026-12-01 10:00+24:00").contains("has an offset no clock keeps"));
    assert_eq!(
        refused("in a bit"),
        "'in a bit' is not a start time: after 'in', how long from now (in 2h, in 90m, in 3d)"
    );
    assert!(refused(&"x".repeat(500)).len() < 300, "a long text is cut in the refusal");
}

/// The daylight saving changes of 2026 in Madrid and Santiago: a time the
/// clocks skip is refused with one they show; one they show twice names
/// both, each with its offset.
#[test]
fn a_time_a_clock_change_skips_or_repeats_is_refused_saying_what_the_clocks_do() {
    let now = utc("2026-01-01T00:00:00Z");
    let madrid = zone("Europe/Madrid");
    assert_eq!(
        resolve(local("2026-03-29", "02:30"), madrid, now).unwrap_err(),
        "2026-03-29 02:30 does not exist in Europe/Madrid: the clocks go forward from 02:00 to 03:00 on 2026-03-29 \
         (daylight saving time); give a time the clocks show, e.g. 03:30, or a time with its offset"
    );
    assert_eq!(
        resolve(local("2026-10-25", "02:30"), madrid, now).unwrap_err(),
        "2026-10-25 02:30 happens twice in Europe/Madrid: the clocks go back from 03:00 to 02:00 on 2026-10-25 \
         (daylight saving time); say which with its offset: 2026-10-25T02:30:00+02:00 (the first) or \
         2026-10-25T02:30:00+01:00 (the second)"
    );
    let santiago = zone("America/Santiago");
    let skipped = resolve(local("2026-09-06", "00:30"), santiago, now).unwrap_err();
    assert!(skipped.contains("the clocks go forward from 00:00 to 01:00 on 2026-09-06"), "{skipped}");
    assert!(skipped.contains("give a time the clocks show, e.g. 01:30"), "{skipped}");
    let twice = resolve(local("2026-04-04", "23:30"), santiago, now).unwrap_err();
    assert!(
        twice.ends_with(
            "say which with its offset: 2026-04-04T23:30:00-03:00 (the first) or 2026-04-04T23:30:00-04:00 (the \
             second)"
        ),
        "{twice}"
    );
}

#[test]
fn a_time_past_or_too_far_ahead_is_refused_saying_when_it_is() {
    let (santiago, now) = (zone("America/Santiago"), utc("2026-11-28T14:05:00Z"));
    assert_eq!(
        read("today 10:00", santiago, now).unwrap_err(),
        "the start time 'today 10:00' (2026-11-28 10:00 -03:00 in America/Santiago) has already passed: it is \
         2026-11-28 11:05 -03:00 there now"
    );
    assert_eq!(
        read("2027-01-02 10:00", santiago, now).unwrap_err(),
        "the start time '2027-01-02 10:00' (2027-01-02 10:00 -03:00 in America/Santiago) is more than 30 days \
         ahead: a conversation waits at most 30 days to start (it holds its contact's queue meanwhile)"
    );
}

/// Every unit of the pattern's alphabet, for texts near the grammar.
fn near_the_grammar() -> impl Strategy<Value = String> {
    let pieces = vec![
        "2026", "-", "12", "01", "31", "02", "29", " ", "T", "t", ":", "10", "00", "59", "60", "24", "23", "Z", "+",
        "-03:00", "UTC", "today", "tomorrow", "am", "pm", ".", "5", "\t", "x",
    ];
    prop::collection::vec(prop::sample::select(pieces), 0..9).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn every_string_the_pattern_matches_parses(
        text in proptest::string::string_regex(pattern().trim_start_matches('^').trim_end_matches('$')).unwrap(),
    ) {
        prop_assert!(parse(&text).is_ok(), "{:?}: {:?}", text, parse(&text));
    }

    /// Near the grammar too, what the pattern matches parses; and whatever
    /// is given, a refusal is words, never a panic.
    #[test]
    fn what_the_pattern_matches_near_the_grammar_parses(text in near_the_grammar()) {
        let pattern = Regex::new(&pattern()).unwrap();
        if pattern.is_match(&text) {
            prop_assert!(parse(&text).is_ok(), "{:?}: {:?}", text, parse(&text));
        }
        if let Err(why) = parse(&text) {
            prop_assert!(!why.is_empty());
        }
    }

    /// A date and time written any of the ways the grammar takes reads back
    /// as that date and time, with the offset when one was written.
    #[test]
    fn a_written_time_reads_back_as_written(
        at in any_minute(),
        seconds in any::<bool>(),
        t in any::<bool>(),
        offset in prop::option::of(-23 * 60..=23 * 60i32),
        upper in any::<bool>(),
    ) {
        let time = if seconds { at.format("%H:%M:%S") } else { at.format("%H:%M") };
        let sign = if offset.unwrap_or(0) < 0 { '-' } else { '+' };
        let written = offset.map_or(String::new(), |m| format!("{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60));
        let text = format!("{}{}{time}{written}", at.format("%Y-%m-%d"), if t { "T" } else { " " });
        let text = if upper { text.to_uppercase() } else { text.to_lowercase() };
        let expected = match offset {
            Some(m) => Asked::Exact(FixedOffset::east_opt(m * 60).unwrap().from_local_datetime(&at).unwrap()),
            None => Asked::Local { day: Day::On(at.date()), time: at.time() },
        };
        prop_assert_eq!(parse(&text), Ok(expected));
    }

    /// A 12-hour time is the 24-hour one it names: 12am is midnight, 12pm noon.
    #[test]
    fn a_12_hour_time_is_its_24_hour_one(hour in 1u32..=12, minute in 0u32..60, pm in any::<bool>(), spaced in any::<bool>()) {
        let text = format!("today {hour}:{minute:02}{}{}", if spaced { " " } else { "" }, if pm { "pm" } else { "am" });
        let expected = NaiveTime::from_hms_opt(hour % 12 + if pm { 12 } else { 0 }, minute, 0).unwrap();
        prop_assert_eq!(parse(&text), Ok(Asked::Local { day: Day::Today, time: expected }));
    }

    #[test]
    fn a_local_time_is_the_contacts(zone in any_zone(), at in any_minute()) {
        read_as_the_contacts_clock_shows_it(zone, at)?;
    }

    /// Near a clock change, in every zone that has one in 2026 or 2027.
    #[test]
    fn a_local_time_near_a_clock_change_is_the_contacts_or_refused_saying_why((zone, at) in near_a_clock_change()) {
        read_as_the_contacts_clock_shows_it(zone, at)?;
    }

    /// A time with its offset is one instant, whatever the contact's zone.
    #[test]
    fn an_offset_names_one_instant_whatever_the_zone(zone in any_zone(), at in any_minute(), offset in -12 * 60..=14 * 60i32) {
        let exact = FixedOffset::east_opt(offset * 60).unwrap().from_local_datetime(&at).unwrap();
        prop_assert_eq!(resolve(Asked::Exact(exact), zone, utc("2026-01-01T00:00:00Z")), Ok(exact.to_utc()));
    }

    /// "today" and "tomorrow" are the contact's: the day it is where they are.
    #[test]
    fn today_and_tomorrow_are_the_contacts(zone in any_zone(), now in any_minute(), tomorrow in any::<bool>()) {
        let now = now.and_utc();
        let (day, ahead) = if tomorrow { (Day::Tomorrow, 1) } else { (Day::Today, 0) };
        let noon = NaiveTime::from_hms_opt(12, 0, 0).unwrap();
        let at = resolve(Asked::Local { day, time: noon }, zone, now).unwrap();
        let theirs = now.with_timezone(&zone).date_naive() + Days::new(ahead);
        prop_assert_eq!(at.with_timezone(&zone).naive_local(), theirs.and_time(noon));
    }

    /// "in" and a duration is that long from now; one past the bounds is
    /// refused, however long, never a panic.
    #[test]
    fn in_a_duration_is_that_long_from_now(now in any_minute(), seconds in any::<u64>(), unit in prop::sample::select(vec![("s", 1u64), ("m", 60), ("h", 3600), ("d", 86_400)])) {
        let now = now.and_utc();
        let (name, size) = unit;
        let count = seconds % 5_000_000;
        let read = read(&format!("in {count}{name}"), zone("Asia/Kolkata"), now);
        match count * size {
            total if total <= 30 * 86_400 => prop_assert_eq!(read, Ok(now + chrono::TimeDelta::seconds(total as i64))),
            _ => prop_assert!(read.unwrap_err().contains("is more than 30 days ahead")),
        }
        let far = super::read(&format!("in {seconds}w"), zone("Asia/Kolkata"), now);
        prop_assert!(seconds <= 4 || far.is_err(), "{:?}", far);
    }

    /// A start is taken from a minute before now to 30 days ahead, and
    /// refused outside, saying which.
    #[test]
    fn a_start_is_taken_within_its_bounds(now in any_minute(), ahead in -3_000_000i64..3_000_000) {
        let now = now.and_utc();
        let at = now + chrono::TimeDelta::seconds(ahead);
        let read = read(&at.to_rfc3339(), zone("Europe/Madrid"), now);
        match ahead {
            -60..=2_592_000 => prop_assert_eq!(read, Ok(at)),
            ..-60 => prop_assert!(read.unwrap_err().contains("has already passed")),
            _ => prop_assert!(read.unwrap_err().contains("is more than 30 days ahead")),
        }
    }
}
