//! In-process: relay linked as a library, no binary spawned. The engine and
//! its actors run in the test's own runtime, mostly on tokio's paused clock
//! (30-minute heartbeats run instantly and exactly), on the sandbox channel
//! or a channel that misbehaves on cue (`support::channel`), with a scripted
//! test agent acting through the real tools (`support::test_agent`) or a
//! scripted model. A test here may use `support::engine` (one world: engine
//! and home), `support::channel`, `support::test_agent`, `support::model`'s
//! responders and `support::invariants`; one that needs the real binary
//! belongs in `e2e`. The real WhatsApp session, driven against a local
//! socket, is here too.

mod budget;
mod catch_up;
mod channel_faults;
mod contact_acts;
mod conversations;
mod courtesy;
mod delivery;
mod first_contact;
mod media;
mod properties;
mod start_at;
mod whatsapp_session;
