//! Voice notes, photos and files: the pure parts, shared by the
//! channels, the agent and the engine.
//!
//! - [`sniff`]: what a file is, from its bytes;
//! - [`ogg`]: how long an Ogg Opus or Vorbis voice note plays;
//! - [`label`]: what the model reads for a media message;
//! - [`names`]: relay's names for the files it keeps, and a contact's file
//!   name cleaned for display;
//! - [`intake`]: a contact's file fetched, checked and stored.

pub mod intake;
pub mod label;
pub mod names;
pub mod ogg;
pub mod sniff;

pub use intake::{Fetch, FetchError, InboundMedia};
