//! The conversation agent end to end: the real binary, the sandbox channel,
//! and rig-core's real OpenAI client talking to the scripted model server,
//! whose recorded requests show what relay sent.

mod conversation;
mod plain_text;
mod provider_errors;
mod refused_calls;
