//! `relay mcp`, end to end: the real binary speaks MCP (JSON-RPC 2.0, one
//! message a line) on stdin/stdout to this test, which plays the MCP client,
//! against a real sandbox daemon.

mod arguments;
mod client;
mod schemas;
mod tasks;
mod tools;
