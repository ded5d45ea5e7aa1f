//! The interfaces against what they promise: the OpenAPI document the daemon
//! serves (routes, parameters, closed request objects), the request schemas
//! as strict as the handlers, every answer checked against the document
//! (`support::contract`), MCP as a client speaks it (message by message, and
//! through the official Rust SDK), and the HTTP API fuzzed in-process and
//! over TCP. A test here may run the real binary (`support::Relay`) or the
//! real router in-process; what it asserts is what a client may rely on, not
//! a user's workflow (that is `e2e`).

mod api;
mod fuzz_api;
mod mcp;
mod mcp_sdk;
mod openapi;
mod record_format;
mod strict_schemas;
