//! relay's integration tests, one crate (one binary to build and link,
//! instead of one per file), grouped by level, each module one concern:
//!
//! - `e2e`: the real `relay` binary on a temporary home and a free port, as
//!   a user or a Main Agent drives it;
//! - `engine`: relay linked as a library, in-process: the engine and its
//!   actors on a fake or sandbox channel, with a scripted test agent, mostly
//!   on tokio's paused clock;
//! - `contract`: the interfaces against what they promise: the OpenAPI
//!   document, the request schemas, MCP, and the HTTP API fuzzed;
//! - `repo`: the repository against itself: the layers of `src/`, the docs
//!   and the example home against the code.
//!
//! `support` holds what they share: the harness that runs the real `relay`
//! binary, the scripted models, and for the in-process tests one world
//! (engine, home), one fake channel and one test agent; and the design's
//! invariant checkers, run by the property, crash and soak tests.
//!
//! Run one level or one concern with its module path:
//! `cargo test --test it engine::`, `cargo test --test it e2e::crash::`.

mod support;

mod contract;
mod e2e;
mod engine;
mod repo;
