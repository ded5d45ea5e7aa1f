//! The actors: one per contact with conversations not yet ended, found by
//! contact, started on demand, retired when their contact has none left.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::actor::{self, Msg};
use super::{EngineError, Shared};

use crate::contact::Contact;
use crate::store::ConversationRecord;

pub(super) struct ActorHandle {
    pub(super) tx: mpsc::UnboundedSender<Box<Msg>>,
    /// Ends with the number of sends whose outcome it never learned.
    pub(super) task: JoinHandle<usize>,
}

impl Shared {
    /// The live conversations of one contact, oldest first (an actor's state at spawn).
    pub(super) fn live_of(&self, contact: &Contact) -> Vec<Arc<ConversationRecord>> {
        let mut live: Vec<Arc<ConversationRecord>> =
            self.read_view(|view| view.live_of(contact.as_str()).cloned().collect());
        live.sort_by_key(|a| (a.created_at, a.id));
        live
    }

    /// Starts the actor of `contact`, which owns its `live` conversations.
    pub(super) fn spawn_actor(
        self: &Arc<Self>,
        actors: &mut HashMap<Contact, ActorHandle>,
        contact: Contact,
        live: Vec<Arc<ConversationRecord>>,
    ) {
        // Messages travel boxed: an unbounded channel keeps its messages in
        // blocks of 32 slots, the first allocated with the channel and the
        // ones it has used kept for reuse, so each contact's actor held 32
        // (then 64) times the largest message, several KB, idle or not.
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(actor::run(self.clone(), contact.clone(), live, tx.clone(), rx));
        actors.insert(contact, ActorHandle { tx, task });
    }

    /// Sends a message to the contact's actor (spawning it if needed) and
    /// waits for the answer. Sending under the map lock means an actor that
    /// retires (see [`Shared::retire`]) can never miss a message.
    pub(super) async fn ask<T>(
        self: &Arc<Self>,
        contact: &Contact,
        msg: impl FnOnce(oneshot::Sender<T>) -> Msg,
    ) -> Result<T, EngineError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut actors = self.actors.lock().expect("actors lock");
            if self.stop.is_cancelled() {
                return Err(EngineError::ShuttingDown);
            }
            if !actors.contains_key(contact) {
                let live = self.live_of(contact);
                self.spawn_actor(&mut actors, contact.clone(), live);
            }
            let handle = actors.get(contact).expect("actor just ensured");
            handle.tx.send(Box::new(msg(reply))).map_err(|_| EngineError::ShuttingDown)?;
        }
        answer.await.map_err(|_| EngineError::ShuttingDown)
    }

    /// An actor with nothing left to do removes itself, unless a message is
    /// already waiting for it. Returns whether it may exit.
    pub(crate) fn retire(&self, contact: &Contact, rx: &mpsc::UnboundedReceiver<Box<Msg>>) -> bool {
        let mut actors = self.actors.lock().expect("actors lock");
        if !rx.is_empty() {
            return false;
        }
        actors.remove(contact);
        true
    }
}

pub(crate) fn contact_of(instance: &ConversationRecord) -> Contact {
    Contact::stored(&instance.target_contact)
}
