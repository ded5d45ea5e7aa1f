//! The read side: every conversation as last persisted, shared by all
//! actors. Reads (`get`, `list`, waits) never wait for an actor; each actor
//! publishes every instance it has persisted here, and the change counters
//! tell whoever waits.
//!
//! A live conversation is held whole (its actor shares the one copy). An
//! ended one is held as its line of the ended index (id, state, contact,
//! creation) and read from its file when asked for: a daemon that runs for
//! months keeps in memory what is going on, not all it ever did.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::Shared;
use crate::api::paging::Cursor;
use crate::api::{ConversationInstance, State};
use crate::store::{EndedConversation, StoreError};

/// One conversation in the view.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// Not yet ended: as its actor last persisted it.
    Live(Arc<ConversationInstance>),
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

    pub(crate) fn live(&self) -> Option<&Arc<ConversationInstance>> {
        match self {
            Entry::Live(i) => Some(i),
            Entry::Ended(_) => None,
        }
    }

    fn of(instance: &Arc<ConversationInstance>) -> Entry {
        match instance.state.is_terminal() {
            true => Entry::Ended(EndedConversation::of(instance)),
            false => Entry::Live(instance.clone()),
        }
    }
}

impl Shared {
    pub(super) fn read_view<T>(&self, f: impl FnOnce(&BTreeMap<String, Entry>) -> T) -> T {
        f(&self.view.read().expect("view lock"))
    }

    /// The whole conversation `id` (read from its file if it has ended),
    /// `None` if there is none.
    pub(crate) fn instance(&self, id: Uuid) -> Result<Option<Arc<ConversationInstance>>, StoreError> {
        let Some(entry) = self.read_view(|view| view.get(&id.to_string()).cloned()) else { return Ok(None) };
        self.whole(&entry).map(Some)
    }

    /// An entry's whole conversation.
    pub(crate) fn whole(&self, entry: &Entry) -> Result<Arc<ConversationInstance>, StoreError> {
        match entry {
            Entry::Live(instance) => Ok(instance.clone()),
            Entry::Ended(ended) => self.store.load_instance(ended.id).map(Arc::new),
        }
    }

    /// [`Shared::instance`] where a file that cannot be read is logged and
    /// counts as none (the engine's own bookkeeping; reads for callers use
    /// `instance` and say why).
    pub(crate) fn snapshot(&self, id: Uuid) -> Option<Arc<ConversationInstance>> {
        self.instance(id).unwrap_or_else(|error| {
            tracing::error!(instance = %id, %error, "cannot read an ended conversation");
            None
        })
    }

    /// Called by actors after every successful write. The view and the
    /// actor share the one copy; an ended conversation leaves memory.
    pub(crate) fn publish(&self, instance: &Arc<ConversationInstance>) {
        let mut view = self.view.write().expect("view lock");
        view.insert(instance.id.to_string(), Entry::of(instance));
        drop(view);
        self.changes.send_modify(|n| *n += 1);
        if let Some(watch) = self.watched.lock().expect("watched lock").get(&instance.id) {
            watch.send_modify(|n| *n += 1);
        }
    }
}
