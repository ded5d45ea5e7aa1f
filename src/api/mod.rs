//! The contract: every type that crosses the daemon's HTTP API, shared by the
//! daemon (which serves it), the CLI (which reads it) and the OpenAPI document
//! (generated from these same types). Field names follow the design document.
//!
//! One file per resource; everything is re-exported here, so callers name
//! `api::ConversationInstance`, never the file it lives in.

mod answer;
mod conversation;
mod daemon;
mod error;
mod events;
pub mod limits;
mod media;
mod optouts;
pub mod paging;
mod requests;
mod sandbox;
pub mod start_at;
mod transcript;
mod ui;
mod webhooks;

pub use answer::*;
pub use conversation::*;
pub use daemon::*;
pub use error::*;
pub use events::*;
pub use media::*;
pub use optouts::*;
pub use requests::*;
pub use sandbox::*;
pub use start_at::StartTime;
pub use transcript::*;
pub use ui::*;
pub use webhooks::*;

pub use crate::courtesy::{OptOut, OptOutOverride, OptOutSource, ZoneSource};
pub use crate::fsm::{Event, State};
