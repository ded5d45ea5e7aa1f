//! The wall clock relay reads: what time it is, for timestamps, deadlines
//! and quiet hours.
//!
//! In the daemon this is the system's clock. A test can make the thread it
//! runs on pretend that it is another time, which then moves with tokio's
//! clock: on a paused tokio clock (`#[tokio::test(start_paused = true)]`, a
//! current-thread runtime) "23:00 in Santiago" becomes 09:00 the moment the
//! engine sleeps ten hours, and every timestamp, deadline and quiet-hours
//! check agrees on it. Nothing outside tests calls [`pretend`].

use std::cell::Cell;

use chrono::{DateTime, Utc};
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
}
