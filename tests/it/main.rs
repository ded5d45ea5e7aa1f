//! relay's integration tests, one crate (one binary to build and link,
//! instead of one per file). Each module is one concern; `support` holds
//! what they share: the harness that runs the real `relay` binary on a
//! temporary home and a free port, the scripted models, and for the
//! in-process engine tests one world (engine, home), one fake channel and
//! one test agent; and the design's invariant checkers, run by the
//! property, crash and soak tests.
//!
//! Run one concern with its module path: `cargo test --test it crash::`.

mod support;

mod agent;
mod api;
mod budget;
mod catch_up;
mod cli_conventions;
mod cli_truth;
mod code_size;
mod connections;
mod contact_acts;
mod containment;
mod conversations;
mod courtesy;
mod crash;
mod delivery;
mod docs;
mod doctor;
mod ended;
mod engine;
mod engine_channel;
mod engine_properties;
mod eval;
mod event_log;
mod example_home;
mod first_contact;
mod fuzz_api;
mod layers;
mod lifecycle;
mod main_agent;
mod mcp;
mod mcp_sdk;
mod media;
mod model_settings;
mod openapi;
mod operator_phone;
mod optout;
mod paging;
mod private_context;
mod providers;
mod reliability;
mod soak;
mod strict_schemas;
mod tool_calls;
mod typed_answers;
mod whatsapp_session;
