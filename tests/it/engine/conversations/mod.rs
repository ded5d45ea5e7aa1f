//! The engine in-process, with a scripted test agent acting through the real
//! tools on the sandbox channel. Time is tokio's paused clock, so 30-minute
//! heartbeats run instantly and exactly.

mod fixtures;
mod follow_ups;
mod panics;
mod turns;
