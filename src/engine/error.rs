//! What the engine refuses, and why, in words a caller can act on.

use uuid::Uuid;

use crate::channel::ChannelError;
use crate::fsm::InvalidTransition;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Invalid(String),
    #[error("no conversation has the id '{0}'")]
    NotFound(String),
    #[error("the id prefix '{prefix}' matches {} conversations: {}", matches.len(), matches.join(", "))]
    Ambiguous { prefix: String, matches: Vec<String> },
    /// A start of a message id that `count` of a conversation's messages have.
    #[error("'{prefix}' starts {count} of the conversation's message ids: give more of it")]
    AmbiguousMessage { prefix: String, count: usize },
    #[error("{source}")]
    Transition { id: Uuid, source: InvalidTransition },
    /// `relay answer`, but the agent asked nothing: it stopped for `reason`.
    #[error(
        "cannot answer: the agent asked no question (it stopped: {reason}); `relay resume` lets it go on, \
         `relay send` writes to the contact"
    )]
    NoQuestion { id: Uuid, reason: String },
    #[error(transparent)]
    Channel(#[from] ChannelError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("relay is shutting down")]
    ShuttingDown,
    #[error("the idempotency key '{0}' was already used for a different request; use a new key for a new request")]
    KeyReused(String),
    #[error("a request with the idempotency key '{0}' is still being handled; retry when it is done")]
    KeyInUse(String),
    /// The number is on the do-not-contact list (the words say since when).
    #[error("{}", .0.refusal())]
    OptedOut(Box<crate::courtesy::OptOut>),
    /// What the request names is not there: an upload, a message, a
    /// message's file, the contact's live conversation.
    #[error("{0}")]
    Missing(String),
    /// `opt_in` of a number (E.164) that is not on the do-not-contact list.
    #[error("{0} is not on the do-not-contact list")]
    NotListed(String),
    /// Events after `after` were removed (`events.keep`); `oldest` is kept.
    #[error(
        "events {} to {} are no longer kept (events.keep); the oldest kept is {oldest}: ask for the events after {}, \
         or after 0 for all that are kept",
        after + 1, oldest - 1, oldest - 1
    )]
    EventsGone { after: u64, oldest: u64 },
}
