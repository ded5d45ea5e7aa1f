//! The read side: every instance as last persisted, shared by all actors.
//! Reads (`get`, `list`, waits) never wait for an actor; each actor
//! publishes every instance it has persisted here, and the change counters
//! tell whoever waits.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::Shared;
use crate::api::ConversationInstance;

impl Shared {
    pub(super) fn read_view<T>(&self, f: impl FnOnce(&BTreeMap<String, Arc<ConversationInstance>>) -> T) -> T {
        f(&self.view.read().expect("view lock"))
    }

    pub(crate) fn snapshot(&self, id: Uuid) -> Option<Arc<ConversationInstance>> {
        self.read_view(|view| view.get(&id.to_string()).cloned())
    }

    /// Called by actors after every successful write. The view and the
    /// actor share the one copy.
    pub(crate) fn publish(&self, instance: &Arc<ConversationInstance>) {
        let mut view = self.view.write().expect("view lock");
        view.insert(instance.id.to_string(), instance.clone());
        drop(view);
        self.changes.send_modify(|n| *n += 1);
        if let Some(watch) = self.watched.lock().expect("watched lock").get(&instance.id) {
            watch.send_modify(|n| *n += 1);
        }
    }
}
