//! The read side: every conversation as last persisted, shared by all
//! actors. Reads (`get`, `list`, waits) never wait for an actor; each actor
//! publishes every instance it has persisted here, and the change counters
//! tell whoever waits.
//!
//! A live conversation is held whole (its actor shares the one copy). An
//! ended one is held as its line of the ended index (id, state, contact,
//! creation) and read from its file when asked for: a daemon that runs for
//! months keeps in memory what is going on, not all it ever did.
//!
//! The view is kept in the list's order, with the live conversations
//! indexed by contact, so that what a request touches does not grow with
//! the conversations a home has ended: a page of the list walks the newest
//! entries, not all of them, and a contact's first message of the day
//! finds its live conversations without a pass over every one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use uuid::Uuid;

use super::Shared;
use crate::api::State;
use crate::api::paging::{Cursor, Page};
use crate::store::ConversationRecord;
use crate::store::{EndedConversation, StoreError};

/// One conversation in the view.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// Not yet ended: as its actor last persisted it.
    Live(Arc<ConversationRecord>),
    /// Ended: what lists and lookups need; the rest is on disk.
    Ended(EndedConversation),
}

impl Entry {
    pub(crate) fn state(&self) -> State {
        match self {
            Entry::Live(i) => i.state,
            Entry::Ended(e) => e.state,
        }
    }

    pub(crate) fn contact(&self) -> &str {
        match self {
            Entry::Live(i) => &i.target_contact,
            Entry::Ended(e) => &e.target_contact,
        }
    }

    pub(crate) fn id(&self) -> Uuid {
        match self {
            Entry::Live(i) => i.id,
            Entry::Ended(e) => e.id,
        }
    }

    /// Its place in the list's order.
    pub(crate) fn cursor(&self) -> Cursor {
        match self {
            Entry::Live(i) => Cursor::of(i),
            Entry::Ended(e) => Cursor::at(e.created_at, e.id),
        }
    }

    /// The contact sent it files.
    pub(crate) fn has_media(&self) -> bool {
        match self {
            Entry::Live(i) => i.media_received > 0,
            Entry::Ended(e) => e.has_media,
        }
    }

    pub(crate) fn live(&self) -> Option<&Arc<ConversationRecord>> {
        match self {
            Entry::Live(i) => Some(i),
            Entry::Ended(_) => None,
        }
    }

    fn of(instance: &Arc<ConversationRecord>) -> Entry {
        match instance.state.is_terminal() {
            true => Entry::Ended(EndedConversation::of(instance)),
            false => Entry::Live(instance.clone()),
        }
    }
}

/// Every conversation as last persisted.
#[derive(Debug, Default)]
pub(crate) struct View {
    /// Every entry, in the list's order (oldest first).
    order: BTreeMap<Cursor, Entry>,
    /// Where each is in `order`, by its hyphenated id (so a prefix lookup
    /// is a range scan).
    by_id: BTreeMap<String, Cursor>,
    /// The live ones, by contact, oldest first (a contact has one or a
    /// few: a sorted `Vec` holds one in 24 bytes, a `BTreeSet` in a node
    /// of 11).
    live: HashMap<String, Vec<Cursor>>,
}

impl View {
    pub(crate) fn new(entries: impl IntoIterator<Item = Entry>) -> View {
        let mut view = View::default();
        for entry in entries {
            view.insert(entry);
        }
        view
    }

    /// Adds `entry`, or replaces the entry of its conversation.
    pub(crate) fn insert(&mut self, entry: Entry) {
        let at = entry.cursor();
        // A conversation's creation, and so its place, never changes: its
        // id is written out (allocated) once, when it is first seen.
        let mut buffer = Uuid::encode_buffer();
        let key = key(entry.id(), &mut buffer);
        if !self.by_id.contains_key(key) {
            self.by_id.insert(key.to_string(), at);
        }
        let contact = entry.contact();
        match (entry.live(), self.live.get_mut(contact)) {
            (Some(_), Some(live)) => {
                if let Err(place) = live.binary_search(&at) {
                    live.insert(place, at);
                }
            }
            (Some(_), None) => {
                self.live.insert(contact.to_string(), vec![at]);
            }
            (None, Some(live)) => {
                live.retain(|c| *c != at);
                if live.is_empty() {
                    self.live.remove(contact);
                }
            }
            (None, None) => {}
        }
        self.order.insert(at, entry);
    }

    pub(crate) fn get(&self, id: Uuid) -> Option<&Entry> {
        self.by_id.get(key(id, &mut Uuid::encode_buffer())).and_then(|at| self.order.get(at))
    }

    pub(crate) fn contains(&self, id: Uuid) -> bool {
        self.by_id.contains_key(key(id, &mut Uuid::encode_buffer()))
    }

    /// The ids that start with `prefix` (lowercase, hyphenated), in order.
    pub(crate) fn ids_starting_with<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> {
        self.by_id.range(prefix.to_string()..).map(|(id, _)| id.as_str()).take_while(move |id| id.starts_with(prefix))
    }

    /// Every entry, oldest first.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.order.values()
    }

    /// Every live conversation.
    pub(crate) fn live(&self) -> impl Iterator<Item = &Arc<ConversationRecord>> {
        self.live.values().flatten().filter_map(|at| self.order.get(at)?.live())
    }

    /// The live conversations with `contact`, oldest first.
    pub(crate) fn live_of(&self, contact: &str) -> impl Iterator<Item = &Arc<ConversationRecord>> {
        self.live.get(contact).into_iter().flatten().filter_map(|at| self.order.get(at)?.live())
    }

    /// (conversations not yet ended, all conversations)
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.live.values().map(Vec::len).sum(), self.order.len())
    }

    /// One page of the entries in `states` (any, when empty) with
    /// `contact`, newest first, after `after`: at most `limit`. It walks
    /// from `after` until the page is full. What follows is counted by
    /// walking the rest under a filter; with none, it is every entry but
    /// those from the page's last on, which are the ones walked already.
    pub(crate) fn page(
        &self,
        states: &[State],
        contact: Option<&str>,
        after: Option<Cursor>,
        limit: usize,
    ) -> Page<&Entry> {
        let filtered = !states.is_empty() || contact.is_some();
        let wanted =
            |e: &Entry| (states.is_empty() || states.contains(&e.state())) && contact.is_none_or(|c| e.contact() == c);
        let mut newest_first = match after {
            Some(after) => self.order.range(..after),
            None => self.order.range(..),
        }
        .rev()
        .filter(|(_, entry)| wanted(entry));
        let items: Vec<(&Cursor, &Entry)> = newest_first.by_ref().take(limit).collect();
        let remaining = match (filtered, items.last()) {
            (true, _) => newest_first.count(),
            (false, Some((last, _))) => self.order.len() - self.order.range(**last..).count(),
            (false, None) => 0,
        };
        let next = items.last().map(|(at, _)| **at).filter(|_| remaining > 0);
        Page { items: items.into_iter().map(|(_, entry)| entry).collect(), next, remaining }
    }
}

/// `id` as the view's key (hyphenated, lowercase), written into `buffer`.
fn key(id: Uuid, buffer: &mut [u8; 45]) -> &str {
    id.hyphenated().encode_lower(buffer)
}

impl Shared {
    pub(super) fn read_view<T>(&self, f: impl FnOnce(&View) -> T) -> T {
        f(&self.view.read().expect("view lock"))
    }

    /// The whole conversation `id` (read from its file if it has ended),
    /// `None` if there is none.
    pub(crate) fn instance(&self, id: Uuid) -> Result<Option<Arc<ConversationRecord>>, StoreError> {
        let Some(entry) = self.read_view(|view| view.get(id).cloned()) else { return Ok(None) };
        self.whole(&entry).map(Some)
    }

    /// An entry's whole conversation.
    pub(crate) fn whole(&self, entry: &Entry) -> Result<Arc<ConversationRecord>, StoreError> {
        match entry {
            Entry::Live(instance) => Ok(instance.clone()),
            Entry::Ended(ended) => self.store.load_instance(ended.id).map(Arc::new),
        }
    }

    /// [`Shared::instance`] where a file that cannot be read is logged and
    /// counts as none (the engine's own bookkeeping; reads for callers use
    /// `instance` and say why).
    pub(crate) fn snapshot(&self, id: Uuid) -> Option<Arc<ConversationRecord>> {
        self.instance(id).unwrap_or_else(|error| {
            tracing::error!(instance = %id, %error, "cannot read an ended conversation");
            None
        })
    }

    /// Called by actors after every successful write. The view and the
    /// actor share the one copy; an ended conversation leaves memory.
    pub(crate) fn publish(&self, instance: &Arc<ConversationRecord>) {
        let mut view = self.view.write().expect("view lock");
        view.insert(Entry::of(instance));
        drop(view);
        self.changes.send_modify(|n| *n += 1);
        if let Some(watch) = self.watched.lock().expect("watched lock").get(&instance.id) {
            watch.send_modify(|n| *n += 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::api::HeartbeatConfig;

    const STATES: [State; 5] = [State::Created, State::WaitingForReply, State::Paused, State::Completed, State::Failed];

    /// Conversation `n`, with `contact` c and created in second `at`, in `state`.
    fn entry(n: u8, contact: u8, at: i64, state: State) -> Entry {
        let mut i = ConversationRecord::new(
            "o".into(),
            format!("+5691234567{contact}"),
            Vec::new(),
            HeartbeatConfig::default(),
        );
        i.id = Uuid::from_u128(u128::from(n) * 0x1234_5678_9abc_def1);
        i.created_at = chrono::DateTime::from_timestamp(1_800_000_000 + at, 0).unwrap();
        i.state = state;
        Entry::of(&Arc::new(i))
    }

    proptest! {
        /// Whatever was inserted and replaced, the view answers as a pass
        /// over all its entries would: each page (against `Page::of`, the
        /// list as it was written before the index), the live ones of each
        /// contact, the counts; and walking every page gives each match
        /// once, newest first.
        #[test]
        fn the_view_answers_as_a_pass_over_every_entry_would(
            // (conversation, contact, second, state): a conversation
            // inserted again keeps its contact and creation.
            inserts in prop::collection::vec((0u8..40, 0u8..4, 0i64..12, 0usize..5), 0..120),
            states in prop::collection::vec(0usize..5, 0..3),
            contact in prop::option::of(0u8..4),
            limit in 1usize..6,
            after in prop::option::of(0usize..40),
        ) {
            let mut view = View::default();
            let mut first: BTreeMap<u8, (u8, i64)> = BTreeMap::new();
            let mut all: BTreeMap<Uuid, Entry> = BTreeMap::new();
            for (n, c, at, state) in inserts {
                let (c, at) = *first.entry(n).or_insert((c, at));
                let e = entry(n, c, at, STATES[state]);
                all.insert(e.id(), e.clone());
                view.insert(e);
            }
            let live_of = |c: &str| all.values().filter(|e| e.live().is_some() && e.contact() == c).count();
            prop_assert_eq!(view.counts(), (all.values().filter(|e| e.live().is_some()).count(), all.len()));
            prop_assert_eq!(view.live().count(), view.counts().0);
            for c in 0..4 {
                let c = format!("+5691234567{c}");
                prop_assert_eq!(view.live_of(&c).count(), live_of(&c));
                prop_assert!(view.live_of(&c).all(|i| i.target_contact == c));
            }

            let states: Vec<State> = states.into_iter().map(|s| STATES[s]).collect();
            let contact = contact.map(|c| format!("+5691234567{c}"));
            let wanted = |e: &Entry| {
                (states.is_empty() || states.contains(&e.state())) && contact.as_deref().is_none_or(|c| e.contact() == c)
            };
            let after = after.and_then(|k| all.values().nth(k)).map(Entry::cursor);
            let reference = Page::of(all.values().filter(|e| wanted(e)).map(|e| (e.cursor(), e.id())), after, limit);
            let page = view.page(&states, contact.as_deref(), after, limit).map(Entry::id);
            prop_assert_eq!(&page, &reference);

            let mut walked = Vec::new();
            let mut at = None;
            loop {
                let page = view.page(&states, contact.as_deref(), at, limit);
                walked.extend(page.items.iter().map(|e| e.cursor()));
                prop_assert_eq!(page.remaining, all.values().filter(|e| wanted(e)).count() - walked.len());
                match page.next {
                    Some(next) => at = Some(next),
                    None => break,
                }
            }
            let mut expected: Vec<Cursor> = all.values().filter(|e| wanted(e)).map(Entry::cursor).collect();
            expected.sort_unstable_by(|a, b| b.cmp(a));
            prop_assert_eq!(walked, expected);
        }
    }
}
