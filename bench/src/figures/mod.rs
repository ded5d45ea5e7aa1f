//! One module per figure of docs/benchmarks.md.

pub mod catchup;
pub mod cli;
pub mod connections;
pub mod heartbeat;
pub mod months;
pub mod overhead;
pub mod scale;
pub mod start;
