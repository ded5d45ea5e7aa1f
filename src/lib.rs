//! relay: a sandboxed WhatsApp conversation agent that a Main Agent drives
//! from the shell.
//!
//! One binary, `relay`. Most subcommands are thin clients of a background
//! daemon's REST API on 127.0.0.1; the daemon holds the channel (WhatsApp or
//! the sandbox) and runs, for each conversation, a small agent whose only
//! powers are eight conversation-scoped tools.
//!
//! Where each concept lives, lowest layer first. A module uses only those
//! above it in this table (tests/it/repo/layers.rs checks it):
//!
//! | module | what it is |
//! |---|---|
//! | [`sys`] | the process-level calls to the operating system (signals, the effective user, free disk space, a child detached, the heap): the only module allowed `unsafe`, each use saying why |
//! | [`util`], [`duration`], [`contact`], [`clock`] | small shared pieces; `30m`-style durations; E.164 numbers; the wall clock (which tests can set), and times as a person reads them |
//! | [`courtesy`] | what relay enforces for the people it writes to: quiet hours in their time zone, opt-out words and entries, the disclosure |
//! | [`fsm`] | the conversation state machine: states, events and the transition table, as data |
//! | [`home`] | where files live; the daemon's lock, pid, port and token files ([`home::daemon_files`]) |
//! | [`service`] | the daemon as a service of the user's manager: the systemd user unit or launchd agent of a home, rendered, and `systemctl --user`/`launchctl` to load, start, stop and ask about it |
//! | [`api`] | the contract: every type on the wire and its limits, shared by daemon, CLI and OpenAPI |
//! | [`grounding`] | whether a todo's typed value can be read from the contact's words it rests on (numbers in digits or words, addresses, choices, days and times resolved against the day they wrote), by relay, not the model |
//! | [`store`] | crash-safe files in the relay home, and the append-only [`store::Journal`] |
//! | [`config`], [`template`] | `config.json`, checked one way for `relay init` and the daemon; conversations written once with `{{placeholders}}` |
//! | [`media`] | voice notes, photos and files: what the bytes are (by magic numbers, never by what the message says), how long a voice note plays, the labels the model reads, relay's names for the files |
//! | [`channel`] | the `Channel` seam; the sandbox and WhatsApp channels |
//! | [`agent`] | the `Agent` seam the engine calls for a turn, and the tools it acts through ([`agent::seam`]); the LLM agent (prompt, tools, rig-core loop, providers, tool calls through a JSON schema or written as text, provider errors cut short) |
//! | [`engine`] | conversations: one actor per contact (events one at a time, the FIFO queue), heartbeats, the tools' effects, delivery (receipts and the delivery timeout) |
//! | [`webhooks`], [`scripted_model`] | events POSTed, signed, in order; a scripted model server (Chat Completions, Ollama, Anthropic Messages) for tests and the demo |
//! | [`daemon`] | the HTTP server, its guards and routes |
//! | [`client`] | the one client of the daemon's API: one typed method per route, for every front end |
//! | [`trial`] | a relay of its own for one run: a temporary home, the sandbox channel, the real daemon, cleaned up however the run ends (`relay demo` and `relay eval` run on it) |
//! | [`eval`], [`doctor`] | how good a model is at relay's job (`relay eval`): scenarios, each a whole conversation on a trial relay with a scripted contact, checked by rule, and a typed scorecard; what a conversation needs, checked (`relay doctor`), each finding with its fix |
//! | [`mcp`] | relay's commands as MCP tools, each a call through the client |
//! | [`cli`] | the command line: one file per subcommand (`relay mcp` serves [`mcp`]) |

#![deny(unsafe_code)]

pub mod agent;
pub mod api;
pub mod channel;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod contact;
pub mod courtesy;
pub mod daemon;
pub mod doctor;
pub mod duration;
pub mod engine;
pub mod eval;
pub mod fsm;
pub mod grounding;
pub mod home;
pub mod mcp;
pub mod media;
pub mod scripted_model;
pub mod service;
pub mod store;
pub mod sys;
pub mod template;
pub mod trial;
pub mod util;
pub mod webhooks;
