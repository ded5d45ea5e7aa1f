//! The account-wide side of first contact (the rules are
//! [`crate::courtesy::first_contact`]): which numbers relay knows, asking
//! the channel whether WhatsApp's reach-out lock is in force, a refused
//! first message (error 463) setting the same lock, and the day's first
//! contacts. What a conversation does about it is the actor's
//! (`actor/courtesy.rs`).
//!
//! The lock and the day's first contacts are shared by every contact's
//! actor: one question to WhatsApp at a time, whose answer wakes them all.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::Shared;
use super::actor::Msg;
use crate::contact::Contact;
use crate::courtesy::first_contact::Gate;
use crate::store::{FirstContactBook, StoreError};

/// How recently a contact must have written for relay's first message to
/// them to count as a reply (quiet hours do not hold it).
pub(crate) const JUST_WROTE: chrono::Duration = chrono::Duration::hours(1);

/// The contacts heard from are pruned to the last hour past this many.
const HEARD_PRUNE_AT: usize = 1024;

/// What relay asked WhatsApp last, in memory only: a restart asks again.
#[derive(Debug, Default)]
pub(super) struct LockQuery {
    /// When WhatsApp last said no lock is in force.
    clear_since: Option<DateTime<Utc>>,
    /// A question is under way.
    asking: bool,
}

/// A home from before `first-contact.json`: the numbers its conversations
/// reached or heard from are not new.
pub(super) fn learn_from<'a>(
    book: &FirstContactBook,
    reached: impl Iterator<Item = &'a str>,
) -> Result<(), StoreError> {
    if !book.is_fresh() {
        return Ok(());
    }
    let known: Vec<String> = reached.map(str::to_string).collect();
    book.change(|b| b.known.extend(known))
}

impl Shared {
    /// For a first message to `contact`: `None` if the contact is not new
    /// (it goes), else what the lock, the cap and WhatsApp's last answer say.
    pub(super) fn first_contact_gate(&self, contact: &Contact) -> Option<Gate> {
        let clear_since = self.reach_out.lock().expect("question lock").clear_since;
        let cap = self.settings.courtesy.max_new_contacts_per_day;
        self.first_contacts
            .read(|book| book.is_new(contact.as_str()).then(|| book.gate(crate::clock::now(), cap, clear_since)))
    }

    /// Whether a question to WhatsApp about its lock is under way.
    pub(super) fn asking_reach_out(&self) -> bool {
        self.reach_out.lock().expect("question lock").asking
    }

    /// Whether a send to `contact` now would be a first contact held by a
    /// lock known to be in force (until when).
    pub(super) fn locked_for(&self, contact: &Contact) -> Option<DateTime<Utc>> {
        let now = crate::clock::now();
        self.first_contacts.read(|book| {
            let lock = book.lock.as_ref().filter(|_| book.is_new(contact.as_str()))?;
            Some(lock.look_again_at()).filter(|at| *at > now)
        })
    }

    /// Asks the channel whether the reach-out lock is in force, unless a
    /// question is under way; the answer is kept, and wakes every actor.
    pub(super) fn ask_reach_out(self: &Arc<Self>) {
        {
            let mut question = self.reach_out.lock().expect("question lock");
            if question.asking {
                return;
            }
            question.asking = true;
        }
        let shared = self.clone();
        tokio::spawn(async move {
            let answer = shared.channel.reach_out_lock().await;
            let now = crate::clock::now();
            let kept = match answer {
                Ok(Some(lock)) => {
                    tracing::warn!(lock = %lock.describe(), "first messages to new contacts wait");
                    shared.first_contacts.change(|b| b.lock = Some(lock))
                }
                Ok(None) => shared.first_contacts.change(|b| b.lock = None),
                // No answer (WhatsApp did not say): go on, as before the
                // question existed. A first message refused with 463
                // still sets the lock.
                Err(error) => {
                    tracing::warn!(%error, "cannot ask WhatsApp about its reach-out lock; going on without its answer");
                    shared.first_contacts.change(|b| {
                        if b.lock.as_ref().is_some_and(|l| l.look_again_at() <= now) {
                            b.lock = None;
                        }
                    })
                }
            };
            if let Err(error) = kept {
                tracing::error!(%error, "cannot record what WhatsApp said of its reach-out lock");
            }
            {
                let mut question = shared.reach_out.lock().expect("question lock");
                question.asking = false;
                let locked = shared.first_contacts.read(|b| b.lock.is_some());
                question.clear_since = (!locked).then_some(now);
            }
            shared.wake_all();
        });
    }

    /// WhatsApp refused a message to a new contact with error 463: every
    /// first contact waits, as for a lock WhatsApp told of.
    pub(super) fn reach_out_refused(&self) {
        let now = crate::clock::now();
        let kept = self.first_contacts.change(|b| b.refused(now));
        if let Err(error) = kept {
            tracing::error!(%error, "cannot record WhatsApp's reach-out lock");
        }
        self.reach_out.lock().expect("question lock").clear_since = None;
        tracing::warn!("WhatsApp refused a first message (error 463): first messages to new contacts wait");
        self.wake_all();
    }

    /// What relay knew of the lock is stale (the channel said it changed):
    /// the next first message asks again.
    pub(super) fn forget_reach_out(&self) {
        if let Err(error) = self.first_contacts.change(|b| b.lock = None) {
            tracing::error!(%error, "cannot record that WhatsApp's reach-out lock changed");
        }
        self.reach_out.lock().expect("question lock").clear_since = None;
        self.wake_all();
    }

    /// A first contact starts now, if the gate still lets it (it counts
    /// towards the day's cap). Checked and counted under one lock: actors of
    /// other contacts decide at the same time, and the cap is for them all.
    pub(super) fn start_first_contact(&self) -> Result<bool, StoreError> {
        let clear_since = self.reach_out.lock().expect("question lock").clear_since;
        let cap = self.settings.courtesy.max_new_contacts_per_day;
        let now = crate::clock::now();
        self.first_contacts.change(|b| {
            let go = b.gate(now, cap, clear_since) == Gate::Go;
            if go {
                b.start(now);
            }
            go
        })
    }

    /// `contact` wrote: it is not new.
    pub(super) fn know(&self, contact: &Contact) {
        if let Err(error) = self.first_contacts.know(contact.as_str()) {
            tracing::error!(%error, "cannot record that a number is known");
        }
    }

    /// `contact` wrote, just now or at `written_at` (a message WhatsApp
    /// held while relay was away is no sign they are awake now).
    pub(super) fn heard_from(&self, contact: &Contact, written_at: Option<DateTime<Utc>>) {
        let now = crate::clock::now();
        let at = written_at.map_or(now, |at| at.min(now));
        let mut heard = self.heard.lock().expect("heard lock");
        // Only the last hour matters: the map holds the contacts who wrote in it.
        if heard.len() >= HEARD_PRUNE_AT {
            heard.retain(|_, at| now - *at < JUST_WROTE);
        }
        heard.insert(contact.clone(), at);
    }

    /// Whether `contact` wrote within [`JUST_WROTE`]: relay's first message
    /// to them is then a reply, and goes out even in their quiet hours.
    pub(crate) fn just_wrote(&self, contact: &Contact) -> bool {
        let heard = self.heard.lock().expect("heard lock");
        heard.get(contact).is_some_and(|at| crate::clock::now() - *at < JUST_WROTE)
    }

    /// A message reached `contact`'s phone: it is not new, and if it was, a
    /// first contact got through (refusals in a row start again from none).
    pub(super) fn reached(&self, contact: &Contact) {
        if !self.first_contacts.read(|b| b.is_new(contact.as_str())) {
            return;
        }
        let refused_before = self.first_contacts.read(|b| b.refusals > 0);
        match self.first_contacts.change(|b| b.reached(contact.as_str())) {
            // First contacts held behind the one that got through may go.
            Ok(true) if refused_before => self.wake_all(),
            Ok(_) => {}
            Err(error) => tracing::error!(%error, "cannot record that a number is known"),
        }
    }

    /// Every actor looks again at what holds its conversations.
    pub(super) fn wake_all(&self) {
        for handle in self.actors.lock().expect("actors lock").values() {
            let _ = handle.tx.send(Box::new(Msg::ChannelChanged));
        }
    }
}
