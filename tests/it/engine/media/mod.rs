//! Contacts' photos, voice notes and files (issue 28), at the engine's
//! seam on the sandbox channel: the message is recorded at once, the file
//! fetched beside the conversation (retried, capped, checked), stored
//! owner-only under relay's name, and the reply waits for it and reads its
//! label. Nothing is dropped: a file that cannot be had is recorded so.

mod fixtures;
mod heard;
mod received;
mod sent;
