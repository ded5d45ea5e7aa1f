//! The do-not-contact list: what callers send to add a number, and what
//! adding answers. The entries themselves are `courtesy::OptOut`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::courtesy::OptOut;

/// `POST /opt-outs`: put a number on the do-not-contact list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OptOutRequest {
    /// A phone number in international format, as `target_contact` takes
    /// it; normalised to E.164.
    pub contact: String,
    /// Why (kept with the entry; trimmed, not empty).
    #[schema(min_length = 1, max_length = 1000)]
    pub reason: String,
}

/// `POST /opt-outs` answers this: the entry as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OptOutAdded {
    #[serde(flatten)]
    pub opt_out: OptOut,
    /// False when the number was on the list already: the entry is kept as
    /// it was (its date, source and reason), and the number's conversations
    /// have ended all the same.
    pub added: bool,
}
