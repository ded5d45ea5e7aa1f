//! The wall clock relay reads: what time it is, for timestamps, deadlines
//! and quiet hours; and how a time is shown to a person ([`time`],
//! [`relative`]).
//!
//! In the daemon this is the system's clock. A test can make the thread it
//! runs on pretend that it is another time, which then moves with tokio's
//! clock: on a paused tokio clock (`#[tokio::test(start_paused = true)]`, a
//! current-thread runtime) "23:00 in Santiago" becomes 09:00 the moment the
//! engine sleeps ten hours, and every timestamp, deadline and quiet-hours
//! check agrees on it. Nothing outside tests calls [`pretend`].

use std::cell::Cell;

use chrono::{DateTime, Local, Utc};
use tokio::time::Instant;

thread_local! {
    /// (the time pretended, tokio's instant when it was) for this thread.
    static PRETENDED: Cell<Option<(DateTime<Utc>, Instant)>> = const { Cell::new(None) };
}

/// Now: the system's clock, or the time this thread pretends.
pub fn now() -> DateTime<Utc> {
    match PRETENDED.get() {
        None => Utc::now(),
        Some((at, since)) => at + Instant::now().duration_since(since),
    }
}

/// Makes this thread's [`now`] start at `at` and move with tokio's clock.
/// For tests on a current-thread runtime, whose tasks all run on this thread.
pub fn pretend(at: DateTime<Utc>) {
    PRETENDED.set(Some((at, Instant::now())));
}

/// How [`time`] shows times here: "UTC", or "local, UTC-03:00".
pub fn zone() -> String {
    use chrono::Offset;
    let offset = Local::now().offset().fix();
    if offset.local_minus_utc() == 0 { "UTC".into() } else { format!("local, UTC{offset}") }
}

/// A time for a person: local, with its offset from UTC, so it cannot be
/// misread ("2026-11-23 20:45:10 -03:00"); "UTC" when local time is UTC.
pub fn time(at: DateTime<Utc>) -> String {
    zoned(at.with_timezone(&Local))
}

fn zoned<Tz: chrono::TimeZone>(at: DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    use chrono::Offset;
    if at.offset().fix().local_minus_utc() == 0 {
        at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
    } else {
        at.format("%Y-%m-%d %H:%M:%S %:z").to_string()
    }
}

/// "in 4m 10s" / "4m 10s ago".
pub fn relative(at: DateTime<Utc>) -> String {
    let delta = at - now();
    let secs = delta.num_seconds();
    let span = humantime::format_duration(std::time::Duration::from_secs(secs.unsigned_abs())).to_string();
    if secs >= 0 { format!("in {span}") } else { format!("{span} ago") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_pretended_time_moves_with_tokios_clock() {
        let at = "2026-01-01T23:00:00Z".parse::<DateTime<Utc>>().unwrap();
        pretend(at);
        tokio::time::sleep(std::time::Duration::from_secs(10 * 3600)).await;
        assert_eq!(now(), "2026-01-02T09:00:00Z".parse::<DateTime<Utc>>().unwrap());
    }

    #[test]
    fn times_name_their_zone() {
        use chrono::{FixedOffset, TimeZone};
        let at = Utc.with_ymd_and_hms(2026, 11, 23, 23, 45, 10).unwrap();
        assert_eq!(zoned(at), "2026-11-23 23:45:10 UTC");
        assert_eq!(zoned(at.with_timezone(&FixedOffset::west_opt(3 * 3600).unwrap())), "2026-11-23 20:45:10 -03:00");
        assert_eq!(
            zoned(at.with_timezone(&FixedOffset::east_opt(5 * 3600 + 1800).unwrap())),
            "2026-11-24 05:15:10 +05:30"
        );
        assert_eq!(zoned(at.with_timezone(&FixedOffset::east_opt(0).unwrap())), "2026-11-23 23:45:10 UTC");
    }
}
