//! One module per figure of docs/benchmarks.md.

pub mod cli;
pub mod heartbeat;
pub mod overhead;
pub mod scale;
pub mod start;
