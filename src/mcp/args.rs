//! The tools' arguments: what each takes, with the limits the daemon
//! enforces stated in its input schema.

use super::*;

/// The longest path `attach` takes (Linux's PATH_MAX).
const MAX_PATH_CHARS: usize = 4096;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// What the conversation should achieve, in plain words (relay's agent reads it).
    #[schemars(length(min = 1, max = limits::MAX_OBJECTIVE_CHARS))]
    pub objective: String,
    /// The contact's phone number in international format, e.g. +56912345678.
    /// The form is `+` and the digits, with spaces, dashes, dots or brackets between
    /// them (the pattern); the number must also be possible in its country (a
    /// known country code, a length used there), or it is refused.
    #[schemars(regex(pattern = crate::contact::pattern()))]
    pub contact: String,
    /// The things to get done, in order (they get ids "1", "2", ...). At least one.
    #[schemars(length(min = 1, max = limits::MAX_TODOS), inner(length(min = 1, max = limits::MAX_TODO_CHARS)))]
    pub todos: Vec<String>,
    /// What some todos' answers are, by todo id, so the report gives each a
    /// typed `value`: {"1": "date", "2": "yes-no", "3": "choice:morning|afternoon"}
    /// (also time, date-time, email, number, integer, text, or a JSON schema as a string).
    #[serde(default)]
    #[schemars(extend("propertyNames" = {"pattern": todo_id_pattern()}, "maxProperties" = limits::MAX_TODOS))]
    pub answers: Option<std::collections::BTreeMap<String, String>>,
    /// How long to wait for a reply before a follow-up, e.g. "90s", "30m", "2h" (default 30m).
    #[serde(default)]
    pub heartbeat_interval: Option<String>,
    /// Follow-ups before the conversation is ABANDONED (default 5).
    #[serde(default)]
    #[schemars(range(max = limits::MAX_FOLLOWUPS))]
    pub max_followups: Option<u32>,
    /// The contact's IANA time zone, e.g. "America/Santiago" (default: their
    /// number's country's, or the operator's default zone).
    #[serde(default)]
    pub time_zone: Option<String>,
    /// Quiet hours in the contact's time, e.g. "22:00-08:00", or "off"
    /// (default: the operator's setting, 21:00-09:00 unless changed).
    #[serde(default)]
    pub quiet_hours: Option<String>,
    /// Only when a human (the operator) has said so: write to a number on the
    /// do-not-contact list anyway, for this reason (theirs, e.g. "she phoned
    /// on 3 March and asked us to write"). It is recorded in the conversation
    /// and the list. Never set it on your own judgement.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub override_opt_out: Option<String>,
    /// Agent turns at most (first message, each reply, each follow-up); then
    /// the conversation ends ABANDONED with ended_by "budget" (default: the
    /// operator's setting, none unless set).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_turns: Option<u32>,
    /// Model tokens at most (input + output); no turn starts once they are
    /// used: ended_by "budget" (default: the operator's setting, none unless set).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// End the conversation this long from now, whatever it is doing, e.g.
    /// "3d", "12h": ended_by "expired" (default: the operator's setting).
    /// Not with expires_at.
    #[serde(default)]
    pub expires_in: Option<String>,
    /// End the conversation at this time, RFC 3339 (e.g.
    /// "2026-03-01T18:00:00-03:00"). Not with expires_in.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: Option<String>,
    /// Start later: the first message waits until then (and then for quiet
    /// hours and relay's other limits on first messages). A time with its
    /// offset ("2026-12-01T10:00:00-03:00"), a time on the contact's clock,
    /// read in their zone ("2026-12-01 10:00", "tomorrow 10:00", "today
    /// 3pm"), or how long from now ("in 2h"); not past, at most 30 days
    /// ahead. The answer's `start`
    /// says the instant and the zone it was read in.
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub start_at: Option<String>,
    /// Facts relay's agent may use but must never write to the contact (an
    /// account note, an internal reference): relay refuses any message of
    /// its agent's that repeats one. Put here what the contact must not
    /// hear; the objective and todos are what they may.
    #[serde(default)]
    #[schemars(length(max = limits::MAX_PRIVATE_FACTS), inner(length(min = 1, max = limits::MAX_PRIVATE_CHARS)))]
    pub private_context: Option<Vec<String>>,
    /// Files on this machine (paths) relay's agent may send the contact with
    /// its `send_attachment` tool: an invoice, a photo. Each is copied into
    /// relay's home when the conversation is created (images go as photos,
    /// anything else as a document under its file name).
    #[serde(default)]
    #[schemars(length(max = limits::MAX_ATTACHMENTS), inner(length(min = 1, max = MAX_PATH_CHARS)))]
    pub attach: Option<Vec<String>>,
    /// Makes a retry safe: the same key again returns the conversation the
    /// first call created and creates nothing (keys are kept 24 hours).
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_IDEMPOTENCY_KEY_CHARS), regex(pattern = limits::IDEMPOTENCY_KEY_PATTERN))]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptOutAddArgs {
    /// The phone number in international format, e.g. +56912345678.
    /// The form is `+` and the digits, with spaces, dashes, dots or brackets between
    /// them (the pattern); the number must also be possible in its country (a
    /// known country code, a length used there), or it is refused.
    #[schemars(regex(pattern = crate::contact::pattern()))]
    pub contact: String,
    /// Why (kept with the entry), e.g. "asked by phone not to be written to".
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
}

/// A tool without arguments still refuses ones it does not have.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactArgs {
    /// The phone number in international format, e.g. +56912345678.
    /// The form is `+` and the digits, with spaces, dashes, dots or brackets between
    /// them (the pattern); the number must also be possible in its country (a
    /// known country code, a length used there), or it is refused.
    #[schemars(regex(pattern = crate::contact::pattern()))]
    pub contact: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The conversation id, or a unique prefix of at least 4 characters.
    #[schemars(length(min = limits::MIN_ID_PREFIX), regex(pattern = limits::ID_PATTERN))]
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TranscriptArgs {
    /// The conversation id, or a unique prefix of at least 4 characters.
    #[schemars(length(min = limits::MIN_ID_PREFIX), regex(pattern = limits::ID_PATTERN))]
    pub id: String,
    /// How many messages to return (1 to 1000; default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous answer, for the page after it.
    #[serde(default)]
    #[schemars(regex(pattern = crate::api::paging::MESSAGE_CURSOR_PATTERN))]
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsArgs {
    /// The conversation id, or a unique prefix of at least 4 characters.
    #[schemars(length(min = limits::MIN_ID_PREFIX), regex(pattern = limits::ID_PATTERN))]
    pub id: String,
    /// Only events after this sequence number (`seq`), e.g. the last one a
    /// previous call returned (default: from the conversation's start).
    #[serde(default)]
    pub after: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only conversations in these states, comma-separated, e.g.
    /// NEEDS_HUMAN_INTERVENTION or WAITING_FOR_REPLY,PAUSED; "terminal" for
    /// the ended ones (COMPLETED, ABANDONED, FAILED).
    #[serde(default)]
    #[schemars(regex(pattern = State::list_pattern()))]
    pub state: Option<String>,
    /// Only conversations with this contact (a phone number in international
    /// format, e.g. +56912345678, as `create_conversation` takes it).
    #[serde(default)]
    #[schemars(regex(pattern = crate::contact::pattern()))]
    pub contact: Option<String>,
    /// How many conversations to return (1 to 1000; default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous answer, for the page after it.
    #[serde(default)]
    #[schemars(regex(pattern = crate::api::paging::CURSOR_PATTERN))]
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// The conversation id, or a unique prefix of at least 4 characters.
    #[schemars(length(min = limits::MIN_ID_PREFIX), regex(pattern = limits::ID_PATTERN))]
    pub id: String,
    /// What to wait for, comma-separated: state names ("COMPLETED,PAUSED"),
    /// "terminal" (COMPLETED, ABANDONED or FAILED) or "change" (any change).
    /// Default: "terminal,NEEDS_HUMAN_INTERVENTION", i.e. until the
    /// conversation ends or needs you.
    #[serde(default)]
    #[schemars(regex(pattern = crate::engine::wait::Until::pattern()))]
    pub until: Option<String>,
    /// How long to wait at most, in seconds (default 50, at most 3600). Keep
    /// it below your MCP client's timeout for a tool call.
    #[serde(default)]
    #[schemars(range(max = MAX_WAIT.as_secs()))]
    pub timeout_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerArgs {
    /// The conversation id, or a unique prefix of at least 4 characters.
    #[schemars(length(min = limits::MIN_ID_PREFIX), regex(pattern = limits::ID_PATTERN))]
    pub id: String,
    /// Your answer to the agent's pending_question (for relay's agent, never sent to the contact).
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub answer: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    /// The conversation id, or a unique prefix of at least 4 characters.
    #[schemars(length(min = limits::MIN_ID_PREFIX), regex(pattern = limits::ID_PATTERN))]
    pub id: String,
    /// The text to send to the contact, exactly as it should arrive; with
    /// `file`, the words under the file (optional then).
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_MESSAGE_CHARS))]
    pub message: Option<String>,
    /// A file on this machine to send (a path): an image goes as a photo,
    /// anything else as a document under its file name.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_PATH_CHARS))]
    pub file: Option<String>,
    /// Makes a retry safe: the same key again returns the message the first
    /// call sent and sends nothing (keys are kept 24 hours).
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_IDEMPOTENCY_KEY_CHARS), regex(pattern = limits::IDEMPOTENCY_KEY_PATTERN))]
    pub idempotency_key: Option<String>,
}

/// How often a wait tells a client where the conversation stands, unless
/// `relay mcp --progress-every` says otherwise.
pub const DEFAULT_PROGRESS_EVERY: Duration = Duration::from_secs(15);

/// The JSON Schema `pattern` of `answers`' keys: a todo id, "1" to
/// [`limits::MAX_TODOS`] at most (no more digits than it has).
pub(super) fn todo_id_pattern() -> String {
    format!("^[1-9][0-9]{{0,{}}}$", limits::MAX_TODOS.to_string().len() - 1)
}
