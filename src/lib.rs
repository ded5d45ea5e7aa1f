//! relay: a sandboxed WhatsApp conversation agent that a Main Agent drives
//! from the shell.
//!
//! One binary, `relay`. Most subcommands are thin clients of a background
//! daemon's REST API on 127.0.0.1; the daemon holds the channel (WhatsApp or
//! the sandbox) and runs, for each conversation, a small agent whose only
//! powers are six conversation-scoped tools.
//!
//! Where each concept lives:
//!
//! | module | what it is |
//! |---|---|
//! | [`api`] | the contract: every type on the wire, shared by daemon, CLI and OpenAPI |
//! | [`engine`] | conversations: the state machine table ([`engine::fsm`]), one actor per contact (events one at a time, the FIFO queue), heartbeats, the six tools |
//! | [`agent`] | the `Agent` seam the engine calls for a turn; the LLM agent (prompt, tools, rig-core loop, providers) |
//! | [`channel`] | the `Channel` seam, and the sandbox channel |
//! | [`store`] | crash-safe files in the relay home |
//! | [`daemon`] | the HTTP server, its guards, routes and lifecycle |
//! | [`cli`] | one file per subcommand, and output formatting |
//! | [`mcp`] | `relay mcp`'s Model Context Protocol server: relay's commands as tools for an AI agent |
//! | [`home`], [`config`] | where files live, and `config.json` |
//! | [`contact`], [`duration`] | E.164 numbers and `30m`-style durations |
//! | [`template`] | conversations written once with `{{placeholders}}`, started many times |
//! | [`webhooks`] | events POSTed, signed, in order, to the URLs the operator registered |
//! | [`scripted_model`] | a scripted Chat Completions server, for tests and trying relay without a key |

pub mod agent;
pub mod api;
pub mod channel;
pub mod cli;
pub mod config;
pub mod contact;
pub mod daemon;
pub mod duration;
pub mod engine;
pub mod home;
pub mod mcp;
pub mod scripted_model;
pub mod store;
pub mod template;
pub mod util;
pub mod webhooks;
