//! End to end: each test runs the real `relay` binary (`support::Relay`) on a
//! temporary RELAY_HOME and a free port, and drives it as a user, an operator
//! or a Main Agent would: the CLI, the local HTTP API, `relay sandbox` for the
//! contacts' side, and the scripted model server (`support::model`) for the
//! model. A test here may use anything in `support` that works through the
//! binary, its files and its API; what it needs in-process (the engine
//! started by the test itself) belongs in `engine`.

mod agent;
mod budget;
mod catch_up;
mod cli_conventions;
mod cli_truth;
mod connections;
mod contact_acts;
mod containment;
mod conversations;
mod courtesy;
mod crash;
mod delivery;
mod doctor;
mod ended;
mod eval;
mod event_log;
mod first_contact;
mod lifecycle;
mod main_agent;
mod media;
mod model_settings;
mod operator_phone;
mod optout;
mod paging;
mod private_context;
mod providers;
mod reliability;
mod service;
mod service_systemd;
mod soak;
mod start_at;
mod tool_calls;
mod typed_answers;
mod ui;
