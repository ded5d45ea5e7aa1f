//! Sending like a person, not a script: "typing…" for a while that grows
//! with the message, a gap between messages to the same contact, and a cap
//! on messages per minute across all contacts. WhatsApp's anti-abuse
//! systems watch for machine-like bursts; pacing is the first defence.
//!
//! The [`Pacer`] only computes times; the channel sleeps until them. Every
//! instant is passed in, so tests drive it with a clock they control.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

pub use crate::config::PacingSettings;

/// When one message goes out: typing from `typing_from`, sent at `send_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub typing_from: Instant,
    pub send_at: Instant,
}

const MINUTE: Duration = Duration::from_secs(60);

/// Hands out send times that respect the settings. Each reservation counts
/// as sent, so messages queued together are spread out, not bunched.
pub struct Pacer {
    settings: PacingSettings,
    /// Per contact (its address), when the last reserved message goes out.
    last_to: HashMap<String, Instant>,
    /// Every reserved send time within the last minute, oldest first.
    recent: VecDeque<Instant>,
}

impl Pacer {
    pub fn new(settings: PacingSettings) -> Pacer {
        Pacer { settings, last_to: HashMap::new(), recent: VecDeque::new() }
    }

    /// Reserves the next slot for a message of `chars` characters to `to`.
    pub fn reserve(&mut self, to: &str, chars: usize, now: Instant) -> Slot {
        let typing = self.settings.typing_time(chars);
        while self.recent.front().is_some_and(|t| *t + MINUTE <= now) {
            self.recent.pop_front();
        }
        let mut send_at = now + typing;
        if let Some(last) = self.last_to.get(to) {
            send_at = send_at.max(*last + Duration::from_millis(self.settings.min_gap_ms));
        }
        // The cap: at most N sends in the minute up to `send_at`. If the
        // minute is full, wait until its oldest send there is a minute old.
        let cap = self.settings.max_messages_per_minute as usize;
        loop {
            let within: Vec<Instant> =
                self.recent.iter().copied().filter(|t| *t + MINUTE > send_at && *t <= send_at).collect();
            if within.len() < cap {
                break;
            }
            send_at = within[within.len() - cap] + MINUTE;
        }
        let position = self.recent.partition_point(|t| *t <= send_at);
        self.recent.insert(position, send_at);
        self.last_to.insert(to.to_string(), send_at);
        Slot { typing_from: send_at - typing, send_at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacer() -> (Pacer, Instant) {
        (Pacer::new(PacingSettings::default()), Instant::now())
    }

    #[test]
    fn typing_grows_with_the_text_within_bounds() {
        let s = PacingSettings::default();
        assert_eq!(s.typing_time(1), Duration::from_millis(1_000), "at least the minimum");
        assert_eq!(s.typing_time(100), Duration::from_millis(3_000));
        assert!(s.typing_time(50) < s.typing_time(150));
        assert_eq!(s.typing_time(10_000), Duration::from_millis(6_000), "at most the maximum");
    }

    #[test]
    fn the_first_message_goes_out_after_typing() {
        let (mut p, t0) = pacer();
        let slot = p.reserve("a", 100, t0);
        assert_eq!(slot.typing_from, t0);
        assert_eq!(slot.send_at, t0 + Duration::from_secs(3));
    }

    #[test]
    fn messages_to_one_contact_keep_the_minimum_gap() {
        let (mut p, t0) = pacer();
        let first = p.reserve("a", 10, t0);
        // Asked for at once: the second waits for the gap after the first.
        let second = p.reserve("a", 10, t0);
        assert_eq!(second.send_at, first.send_at + Duration::from_millis(2_000));
        assert_eq!(second.send_at - second.typing_from, Duration::from_millis(1_000));
        // Another contact does not wait for that gap.
        let other = p.reserve("b", 10, t0);
        assert_eq!(other.send_at, t0 + Duration::from_millis(1_000));
        // Long after, no wait at all.
        let later = t0 + Duration::from_secs(600);
        assert_eq!(p.reserve("a", 10, later).send_at, later + Duration::from_millis(1_000));
    }

    #[test]
    fn the_global_cap_spreads_a_burst_over_minutes() {
        let settings = PacingSettings { max_messages_per_minute: 3, ..PacingSettings::default() };
        let mut p = Pacer::new(settings);
        let t0 = Instant::now();
        let sends: Vec<Instant> = (0..7).map(|n| p.reserve(&format!("c{n}"), 1, t0).send_at).collect();
        let second = Duration::from_secs(1);
        assert_eq!(&sends[..3], &[t0 + second; 3], "three at once are allowed");
        assert_eq!(sends[3], t0 + second + MINUTE, "the fourth waits for the minute");
        assert_eq!(sends[6], t0 + second + 2 * MINUTE);
        // No minute ever holds more than the cap.
        for start in &sends {
            let in_minute = sends.iter().filter(|t| **t >= *start && **t < *start + MINUTE).count();
            assert!(in_minute <= 3, "{in_minute} sends in one minute");
        }
    }

    #[test]
    fn old_sends_leave_the_window() {
        let settings = PacingSettings { max_messages_per_minute: 1, ..PacingSettings::default() };
        let mut p = Pacer::new(settings);
        let t0 = Instant::now();
        p.reserve("a", 1, t0);
        let later = t0 + Duration::from_secs(120);
        assert_eq!(p.reserve("b", 1, later).send_at, later + Duration::from_secs(1));
    }
}
