//! First contact: writing first to a number that has never heard from this
//! one, the act WhatsApp locks (the "reach-out time lock", refused sends
//! with error 463) and bans for. The rules, kept apart from where they are
//! stored (`store::FirstContactBook`) and from the actor that applies them
//! (`engine/actor/courtesy.rs`):
//!
//! - a **new contact** is a number relay has never had a message delivered
//!   to, nor a message from ([`FirstContacts::known`]);
//! - while WhatsApp's reach-out lock is in force ([`ReachOutLock`]), nothing
//!   is started for a new contact; when its end passes, relay asks again;
//! - at most `courtesy.max_new_contacts_per_day` first contacts are started
//!   in any 24 hours ([`FirstContacts::cap_frees_at`]).

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How long an answer of WhatsApp's that no lock is in force is taken as
/// true: first contacts started together (a burst of creates) share one
/// question, and any later one asks again.
pub const CLEAR_ANSWER_LASTS: Duration = Duration::seconds(60);

/// When a lock comes with no end (WhatsApp gave none, or a refused send
/// revealed it), relay asks again after this long; after each refusal in a
/// row, twice as long, up to [`LONGEST_WAIT`].
pub const ASK_AGAIN_AFTER: Duration = Duration::hours(1);
pub const LONGEST_WAIT: Duration = Duration::hours(24);

/// WhatsApp's restriction on writing first to new contacts, as relay knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReachOutLock {
    /// When WhatsApp says it ends; null when it said nothing (relay asks
    /// again an hour after `since`, and after each answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// When relay learned of it (or last asked and was told it holds).
    pub since: DateTime<Utc>,
    /// How relay learned of it.
    pub source: LockSource,
    /// WhatsApp's name for the kind of enforcement, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LockSource {
    /// relay asked WhatsApp before a first message, and it said so.
    Asked,
    /// WhatsApp refused a first message with error 463.
    Refused,
}

impl ReachOutLock {
    /// When relay looks again: the lock's end, or an hour after it last
    /// heard of a lock with no end.
    pub fn look_again_at(&self) -> DateTime<Utc> {
        self.until.unwrap_or(self.since + ASK_AGAIN_AFTER)
    }

    /// In words, for `relay status` and `relay doctor`.
    pub fn describe(&self) -> String {
        let at = self.look_again_at().format("%Y-%m-%d %H:%M UTC");
        match (self.source, self.until) {
            (LockSource::Asked, Some(_)) => {
                format!("WhatsApp says this number may not write first to new contacts until {at}")
            }
            (LockSource::Asked, None) => format!(
                "WhatsApp says this number may not write first to new contacts; it gave no end, relay asks again at \
                 {at}"
            ),
            (LockSource::Refused, _) => {
                format!("WhatsApp refused a first message to a new contact (error 463); relay tries again at {at}")
            }
        }
    }

    /// The lock a refused first message reveals, the `refusals`th in a row:
    /// relay tries again after an hour, then twice as long each time.
    pub fn refused(now: DateTime<Utc>, refusals: u32) -> ReachOutLock {
        let wait = (0..refusals.saturating_sub(1)).fold(ASK_AGAIN_AFTER, |wait, _| (wait * 2).min(LONGEST_WAIT));
        ReachOutLock { until: Some(now + wait), since: now, source: LockSource::Refused, enforcement: None }
    }
}

/// What relay remembers of first contacts (`first-contact.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FirstContacts {
    /// Numbers (E.164) relay has had a message delivered to, or a message from.
    pub known: BTreeSet<String>,
    /// The reach-out lock, while relay takes it to be in force.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<ReachOutLock>,
    /// When each first contact of the last 24 hours was started, oldest first.
    pub started: Vec<DateTime<Utc>>,
    /// First messages refused with 463 since one last reached a new
    /// contact: each makes relay wait twice as long before trying again.
    #[serde(skip_serializing_if = "is_zero")]
    pub refusals: u32,
    /// While first messages are being refused (`refusals` > 0), one first
    /// contact at a time tries the water: when it started. It ends when it
    /// reaches its contact, is refused, or an hour has passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<DateTime<Utc>>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What may happen to a first message to a new contact, now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// It may start.
    Go,
    /// It waits until then: the lock holds, or the day's cap is reached.
    Hold(Hold, DateTime<Utc>),
    /// Ask WhatsApp first whether a lock is in force.
    Ask,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    Lock,
    Cap,
}

impl FirstContacts {
    pub fn is_new(&self, contact: &str) -> bool {
        !self.known.contains(contact)
    }

    /// Whether a first message to a new contact may start at `now`, given
    /// the daily `cap` (0: none) and when WhatsApp last said no lock holds.
    pub fn gate(&self, now: DateTime<Utc>, cap: u32, clear_since: Option<DateTime<Utc>>) -> Gate {
        if let Some(at) = self.lock.as_ref().map(ReachOutLock::look_again_at).filter(|at| *at > now) {
            return Gate::Hold(Hold::Lock, at);
        }
        if let Some(at) = self.probe.map(|p| p + ASK_AGAIN_AFTER).filter(|at| self.refusals > 0 && *at > now) {
            return Gate::Hold(Hold::Lock, at);
        }
        if let Some(frees) = self.cap_frees_at(now, cap) {
            return Gate::Hold(Hold::Cap, frees);
        }
        match clear_since {
            // The lock's end has passed: is it over?
            _ if self.lock.is_some() => Gate::Ask,
            Some(at) if now - at < CLEAR_ANSWER_LASTS && at <= now => Gate::Go,
            _ => Gate::Ask,
        }
    }

    /// When the daily cap lets one more first contact start, if it is
    /// reached at `now`: 24 hours after the oldest of the last `cap`.
    pub fn cap_frees_at(&self, now: DateTime<Utc>, cap: u32) -> Option<DateTime<Utc>> {
        if cap == 0 {
            return None;
        }
        let day_ago = now - Duration::hours(24);
        let recent: Vec<&DateTime<Utc>> = self.started.iter().filter(|at| **at > day_ago).collect();
        (recent.len() >= cap as usize).then(|| *recent[recent.len() - cap as usize] + Duration::hours(24))
    }

    /// A first contact starts at `now`; starts older than a day are
    /// forgotten.
    pub fn start(&mut self, now: DateTime<Utc>) {
        let day_ago = now - Duration::hours(24);
        self.started.retain(|at| *at > day_ago);
        self.started.push(now);
        if self.refusals > 0 {
            self.probe = Some(now);
        }
    }

    /// A first message was refused with 463 (the `refusals`th in a row):
    /// the lock it reveals holds every first contact.
    pub fn refused(&mut self, now: DateTime<Utc>) {
        self.refusals += 1;
        self.probe = None;
        let lock = ReachOutLock::refused(now, self.refusals);
        // A lock with a known, later end is the better account.
        if self.lock.as_ref().is_none_or(|l| l.look_again_at() < lock.look_again_at()) {
            self.lock = Some(lock);
        }
    }

    /// A message reached `contact`'s phone. Returns whether it was a new
    /// contact: then a first contact got through, and refusals in a row
    /// start again from none.
    pub fn reached(&mut self, contact: &str) -> bool {
        let new = self.known.insert(contact.to_string());
        if new {
            self.refusals = 0;
            self.probe = None;
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        "2026-11-26T12:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
    }

    #[test]
    fn a_lock_holds_until_its_end_then_relay_asks_again() {
        let lock = ReachOutLock { until: Some(at(120)), since: at(0), source: LockSource::Asked, enforcement: None };
        let book = FirstContacts { lock: Some(lock), ..Default::default() };
        assert_eq!(book.gate(at(1), 10, Some(at(1))), Gate::Hold(Hold::Lock, at(120)));
        assert_eq!(book.gate(at(120), 10, Some(at(1))), Gate::Ask);
    }

    #[test]
    fn each_refusal_in_a_row_waits_twice_as_long_up_to_a_day() {
        let waits: Vec<i64> =
            (1..=7).map(|n| (ReachOutLock::refused(at(0), n).look_again_at() - at(0)).num_hours()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 24, 24]);
    }

    #[test]
    fn a_lock_with_no_end_is_asked_about_an_hour_later() {
        let lock = ReachOutLock { until: None, since: at(0), source: LockSource::Refused, enforcement: None };
        let book = FirstContacts { lock: Some(lock), ..Default::default() };
        assert_eq!(book.gate(at(59), 0, None), Gate::Hold(Hold::Lock, at(60)));
        assert_eq!(book.gate(at(60), 0, None), Gate::Ask);
    }

    #[test]
    fn a_clear_answer_is_trusted_for_a_minute() {
        let book = FirstContacts::default();
        assert_eq!(book.gate(at(0), 10, None), Gate::Ask);
        assert_eq!(book.gate(at(0), 10, Some(at(0))), Gate::Go);
        assert_eq!(book.gate(at(1), 10, Some(at(0))), Gate::Ask);
    }

    #[test]
    fn after_a_refusal_one_first_contact_at_a_time_tries_until_one_gets_through() {
        let mut book = FirstContacts::default();
        book.refused(at(0));
        assert_eq!(book.gate(at(30), 0, Some(at(30))), Gate::Hold(Hold::Lock, at(60)));
        book.lock = None; // asked at 60: WhatsApp says nothing
        assert_eq!(book.gate(at(60), 0, Some(at(60))), Gate::Go);
        book.start(at(60));
        assert_eq!(book.gate(at(61), 0, Some(at(61))), Gate::Hold(Hold::Lock, at(120)), "one probe at a time");
        assert!(book.reached("+56912345678"));
        assert_eq!(book.gate(at(62), 0, Some(at(62))), Gate::Go, "it got through: all may go");
        assert_eq!(book.refusals, 0);
    }

    proptest! {
        /// However first contacts are started over time, with the cap
        /// obeyed: no 24 hours ever hold more than `cap` of them, and a
        /// held one may go exactly when the cap frees.
        #[test]
        fn no_day_holds_more_first_contacts_than_the_cap(
            cap in 1u32..6,
            gaps in proptest::collection::vec(0i64..600, 1..60),
        ) {
            let mut book = FirstContacts::default();
            let mut now = at(0);
            let mut all = Vec::new();
            for gap in gaps {
                now += Duration::minutes(gap);
                if let Some(frees) = book.cap_frees_at(now, cap) {
                    prop_assert!(frees > now);
                    now = frees;
                    prop_assert_eq!(book.cap_frees_at(now, cap), None);
                }
                book.start(now);
                all.push(now);
            }
            for (i, first) in all.iter().enumerate() {
                let within = all[i..].iter().filter(|t| **t < *first + Duration::hours(24)).count();
                prop_assert!(within <= cap as usize, "{} first contacts within a day of {}", within, first);
            }
        }
    }
}
