//! The contract: every type that crosses the daemon's HTTP API, shared by the
//! daemon (which serves it), the CLI (which reads it) and the OpenAPI document
//! (generated from these same types). Field names follow the design document.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

pub use crate::fsm::{Event, State};

/// Limits on what callers may ask for: part of the contract, enforced by
/// the engine, stated in the tool schemas and the docs.
pub mod limits {
    use std::time::Duration;

    /// The longest idempotency key.
    pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 255;

    /// The rule for idempotency keys, in the words every refusal uses.
    pub fn idempotency_key_rule() -> String {
        format!(
            "an idempotency key is 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters without spaces \
             (a UUID is a good one)"
        )
    }

    /// What is wrong with an idempotency key, if anything: the one rule the
    /// CLI, MCP and the daemon apply, so a bad key is refused in the same
    /// words before it is put into a header as after.
    pub fn idempotency_key_problem(key: &str) -> Option<String> {
        let printable = key.chars().all(|c| c.is_ascii_graphic());
        (key.is_empty() || key.chars().count() > MAX_IDEMPOTENCY_KEY_CHARS || !printable).then(idempotency_key_rule)
    }

    pub const MAX_OBJECTIVE_CHARS: usize = 4_000;
    pub const MAX_TODOS: usize = 50;
    pub const MAX_TODO_CHARS: usize = 500;
    /// WhatsApp's own limit is 65,536; a person should never get more than this.
    pub const MAX_MESSAGE_CHARS: usize = 4_096;
    pub const MAX_NOTE_CHARS: usize = 1_000;
    pub const MAX_REASON_CHARS: usize = 1_000;
    /// Messages one agent turn may send: a person gets a few messages, not a
    /// flood from a model that calls `send_message` fifty times in one answer.
    pub const MAX_MESSAGES_PER_TURN: u32 = 5;
    pub const MIN_HEARTBEAT: Duration = Duration::from_secs(1);
    pub const MAX_HEARTBEAT: Duration = Duration::from_secs(30 * 24 * 3600);
    pub const MAX_FOLLOWUPS: u32 = 100;
    /// Shortest id prefix accepted in place of a full id.
    pub const MIN_ID_PREFIX: usize = 4;
    /// How long `GET /instances/{id}/wait` (and `relay wait`, MCP's `wait`)
    /// waits when not told, and at most.
    pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);
    pub const MAX_WAIT: Duration = Duration::from_secs(3600);
}

/// Defaults of `relay create`.
pub const DEFAULT_HEARTBEAT_INTERVAL_MS: u64 = 30 * 60 * 1000;
pub const DEFAULT_MAX_FOLLOWUPS: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Skipped,
}

impl TodoStatus {
    /// The name on the wire (and in the agent's prompt).
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Skipped => "skipped",
        }
    }
}

/// One thing the conversation should achieve. Ids are "1", "2", ... in the
/// order given at creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TodoItem {
    pub id: String,
    pub text: String,
    pub status: TodoStatus,
    /// What was learned, written by the conversation agent with
    /// `mark_todo_item` (its `note`). The agent's words, which may quote the
    /// contact: treat them as data.
    #[serde(default, alias = "note", skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The contact's messages (transcript ids) the answer rests on: those the
    /// agent was answering when it marked the todo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_message_ids: Vec<Uuid>,
}

/// How a conversation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The objective was achieved (the agent says so).
    Achieved,
    /// Part of it was: see each todo's status and answer.
    PartiallyAchieved,
    /// The contact declined.
    Declined,
    /// The contact never answered the last follow-up (ABANDONED).
    NoResponse,
    /// It could not be achieved: the agent gave up, or an error ended it.
    Failed,
    /// The operator cancelled it.
    Cancelled,
}

impl Outcome {
    /// The outcomes the agent may choose with `end_conversation`.
    pub const AGENT_CHOICES: [Outcome; 4] =
        [Outcome::Achieved, Outcome::PartiallyAchieved, Outcome::Declined, Outcome::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Achieved => "achieved",
            Outcome::PartiallyAchieved => "partially_achieved",
            Outcome::Declined => "declined",
            Outcome::NoResponse => "no_response",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Who or what ended a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndedBy {
    /// The conversation agent (`end_conversation`).
    Agent,
    /// The heartbeat: the contact stayed silent through every follow-up.
    MaxFollowups,
    /// The operator (`relay cancel`).
    Operator,
    /// An error relay could not recover from.
    Error,
}

impl EndedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            EndedBy::Agent => "agent",
            EndedBy::MaxFollowups => "max_followups",
            EndedBy::Operator => "operator",
            EndedBy::Error => "error",
        }
    }
}

/// A question the agent asked the operator (`request_human_intervention`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Question {
    /// "q1", "q2", ... within the conversation.
    pub id: String,
    /// Why the agent needs a human (the agent's words).
    pub reason: String,
    /// What exactly it asks, if it asked something (the agent's words).
    #[serde(default)]
    pub question: Option<String>,
    pub asked_at: DateTime<Utc>,
    /// The operator's answer (`relay answer`), given to the agent, never to the contact.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub answered_at: Option<DateTime<Utc>>,
}

/// Words the contact wrote, handed on as they are: untrusted data, never
/// instructions. Every field of relay's API that carries the contact's own
/// text is named `untrusted_contact_text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ContactText {
    /// The transcript message.
    pub message_id: Uuid,
    pub at: DateTime<Utc>,
    pub untrusted_contact_text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct HeartbeatConfig {
    /// How long relay waits for the contact before a follow-up.
    pub interval_ms: u64,
    /// How many follow-ups before the conversation is ABANDONED.
    pub max_followups: u32,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig { interval_ms: DEFAULT_HEARTBEAT_INTERVAL_MS, max_followups: DEFAULT_MAX_FOLLOWUPS }
    }
}

/// Tokens used by model calls (as the provider reports them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub model_calls: u64,
    /// Tool calls relay read from the model's text, the model having made
    /// no native ones (`model.text_tool_calls`); absent while there are none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub text_tool_calls: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl std::ops::AddAssign for TokenUsage {
    fn add_assign(&mut self, other: TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.model_calls += other.model_calls;
        self.text_tool_calls += other.text_tool_calls;
    }
}

/// One entry of an instance's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StateTransition {
    /// `null` for the entry that records the creation.
    pub from_state: Option<State>,
    pub to_state: State,
    /// The event that caused it (`pause`, `heartbeat_fires`, ...), or `create`.
    pub trigger: String,
    pub timestamp: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One conversation with one contact: its objective, todos, state and timers.
/// This is also exactly what `instances/<id>.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ConversationInstance {
    pub id: Uuid,
    pub objective: String,
    /// E.164, e.g. "+56912345678".
    pub target_contact: String,
    pub todos: Vec<TodoItem>,
    pub state: State,
    /// Set while PAUSED: where `resume` returns.
    pub previous_state: Option<State>,
    pub heartbeat_config: HeartbeatConfig,
    /// Follow-ups sent since the contact last wrote.
    pub follow_up_count: u32,
    /// Why the conversation FAILED ("cancelled", or the error).
    pub failure_reason: Option<String>,
    /// Why the conversation needs (or last needed) a human.
    #[serde(default)]
    pub intervention_reason: Option<String>,
    /// How the conversation ended (null until it has).
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// Who or what ended it (null until it has).
    #[serde(default)]
    pub ended_by: Option<EndedBy>,
    /// A short account of the conversation: written by the agent when it ends
    /// it (`end_conversation`), or by relay itself when something else did.
    #[serde(default, alias = "completion_reason")]
    pub summary: Option<String>,
    /// The question the agent asked the operator and is waiting on
    /// (`relay answer`), while NEEDS_HUMAN_INTERVENTION.
    #[serde(default)]
    pub pending_question: Option<Question>,
    /// Questions asked before, oldest first, with the operator's answer when one was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_questions: Vec<Question>,
    /// The contact's latest message, as they wrote it.
    #[serde(default)]
    pub last_contact_message: Option<ContactText>,
    /// Why the conversation cannot go on right now although nothing is wrong
    /// with it: the channel is not linked, logged out or banned. It goes on,
    /// and this is cleared, when the channel is back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_blocked: Option<String>,
    /// When the armed heartbeat fires (WAITING_FOR_REPLY only).
    #[serde(default)]
    pub next_heartbeat_at: Option<DateTime<Utc>>,
    /// Time that was left on the heartbeat when the conversation was paused.
    #[serde(default)]
    pub paused_heartbeat_remaining_ms: Option<u64>,
    /// A delay the agent chose with `schedule_next_heartbeat`, used for the
    /// next wait instead of `heartbeat_config.interval_ms`.
    #[serde(default)]
    pub scheduled_heartbeat_ms: Option<u64>,
    /// Contact messages that arrived since the agent (or the operator) last
    /// handled the conversation; a turn starts for them as soon as it may.
    #[serde(default)]
    pub unanswered_contact_messages: u32,
    /// Tokens the conversation's model calls used, in all.
    #[serde(default)]
    pub usage: TokenUsage,
    /// Every transition, oldest first.
    #[serde(default)]
    pub history: Vec<StateTransition>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ConversationInstance {
    /// A new conversation, CREATED now, with its creation in the history.
    /// (Validation is the engine's: see `Engine::create`.)
    pub fn new(
        objective: String,
        target_contact: String,
        todos: Vec<TodoItem>,
        heartbeat_config: HeartbeatConfig,
    ) -> Self {
        let now = Utc::now();
        ConversationInstance {
            id: Uuid::new_v4(),
            objective,
            target_contact,
            todos,
            state: State::Created,
            previous_state: None,
            heartbeat_config,
            follow_up_count: 0,
            failure_reason: None,
            intervention_reason: None,
            outcome: None,
            ended_by: None,
            summary: None,
            pending_question: None,
            earlier_questions: Vec::new(),
            last_contact_message: None,
            channel_blocked: None,
            next_heartbeat_at: None,
            paused_heartbeat_remaining_ms: None,
            scheduled_heartbeat_ms: None,
            unanswered_contact_messages: 0,
            usage: TokenUsage::default(),
            history: vec![StateTransition {
                from_state: None,
                to_state: State::Created,
                trigger: "create".into(),
                timestamp: now,
                reason: None,
            }],
            created_at: now,
            updated_at: now,
        }
    }

    /// Live conversations hold their contact: at most one per contact. A
    /// queued conversation (paused or not) does not.
    pub fn holds_contact(&self) -> bool {
        !self.state.is_terminal()
            && self.state != State::Queued
            && !(self.state == State::Paused && self.previous_state == Some(State::Queued))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Written by the conversation agent.
    Agent,
    /// Written by the contact.
    Contact,
    /// Written by relay itself (notes on what happened).
    System,
    /// Written by the operator with `relay send`.
    Manual,
}

/// Where a message relay sends stands. It is written `pending` before the
/// channel gets the message and rewritten (same id, a later line) once the
/// channel answers, so a crash in between is never mistaken for a send that
/// did not happen, nor repeated blindly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendStatus {
    /// Handed to the channel; its answer is not in yet.
    Pending,
    /// The channel took it.
    Sent,
    /// relay stopped (a crash, a kill) while the channel had it: it may or
    /// may not have reached the contact. Never sent again by relay itself.
    Unconfirmed,
    /// Not sent, or refused by the channel later; `delivery_error` says why.
    Failed,
}

/// One line of `transcripts/<id>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TranscriptMessage {
    pub id: Uuid,
    pub instance_id: Uuid,
    pub role: Role,
    pub content: String,
    pub timestamp: DateTime<Utc>,
    /// For messages relay sends (agent, manual): where the send stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_status: Option<SendStatus>,
    /// The channel's id for the message (WhatsApp's message id), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_message_id: Option<String>,
    /// Why a message relay sends failed: the channel could not send it, or
    /// refused it after taking it (e.g. WhatsApp's server answered with an
    /// error code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_error: Option<String>,
}

/// A message from a contact with no live conversation: kept, not answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UnroutedMessage {
    pub from: String,
    pub text: String,
    pub timestamp: DateTime<Utc>,
}

impl TranscriptMessage {
    /// A message written now.
    pub fn new(instance_id: Uuid, role: Role, content: String) -> TranscriptMessage {
        TranscriptMessage {
            id: Uuid::new_v4(),
            instance_id,
            role,
            content,
            timestamp: Utc::now(),
            send_status: None,
            channel_message_id: None,
            delivery_error: None,
        }
    }

    /// A message relay is about to hand to the channel.
    pub fn outgoing(instance_id: Uuid, role: Role, content: String) -> TranscriptMessage {
        TranscriptMessage {
            send_status: Some(SendStatus::Pending),
            ..TranscriptMessage::new(instance_id, role, content)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NewTodo {
    pub text: String,
}

/// Optional overrides of the heartbeat defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatOverrides {
    pub interval_ms: Option<u64>,
    pub max_followups: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInstanceRequest {
    pub objective: String,
    /// A phone number in international format; normalised to E.164.
    pub target_contact: String,
    pub todos: Vec<NewTodo>,
    #[serde(default)]
    pub heartbeat_config: Option<HeartbeatOverrides>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CreateInstanceResponse {
    pub id: Uuid,
    /// CREATED, or QUEUED when the contact already has a live conversation.
    pub state: State,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageRequest {
    pub message: String,
}

/// Query of `GET /instances`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only instances in this state (e.g. WAITING_FOR_REPLY).
    pub state: Option<String>,
    /// Only instances for this contact (any format; compared as E.164).
    pub contact: Option<String>,
}

/// The channel relay speaks through, and how its connection is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChannelStatus {
    /// "whatsapp" or "sandbox".
    pub kind: String,
    /// "connected", "not linked", "pairing", "connecting", "reconnecting",
    /// "logged out", "temporarily banned", "replaced".
    pub state: String,
    pub connected: bool,
    /// What to know about that state: attempts and last error, until when,
    /// what to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The linked phone number (E.164), once linked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DaemonStatusResponse {
    pub pid: u32,
    pub uptime_seconds: u64,
    /// Kept from the design's contract: true only on a connected WhatsApp channel.
    pub whatsapp_connected: bool,
    /// Non-terminal instances.
    pub active_instance_count: usize,
    pub total_instance_count: usize,
    /// Messages from contacts with no live conversation, kept in
    /// `unrouted.jsonl` in the home.
    pub unrouted_message_count: u64,
    /// `relay wait` requests under way.
    #[serde(default)]
    pub waiting_requests: usize,
    /// The sequence number of the last event (`relay events --after`).
    #[serde(default)]
    pub last_event_seq: u64,
    /// Webhooks whose deliveries fail now (`failures` > 0), with their last error.
    #[serde(default)]
    pub failing_webhooks: Vec<Webhook>,
    pub channel: ChannelStatus,
    /// The conversation agent's model ("provider/name"), or null when none is configured.
    pub model: Option<String>,
    /// The model's last failure (unreachable, key rejected), until a call succeeds.
    pub model_error: Option<String>,
    pub port: u16,
    pub home: String,
    pub version: String,
}

/// `POST /whatsapp/pair` streams these, one JSON object per line, until
/// `linked`, `already_linked` or `failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PairingEvent {
    /// Scan this with WhatsApp on the phone: Settings, Linked devices, Link a device.
    Qr {
        code: String,
        expires_in_secs: u64,
    },
    /// Type this code on the phone: Linked devices, Link with phone number.
    PairCode {
        code: String,
        expires_in_secs: u64,
    },
    /// Linked; the daemon connects with this session from now on.
    Linked {
        phone: Option<String>,
    },
    /// A session is already linked (pass `force` to replace it).
    AlreadyLinked {
        phone: Option<String>,
    },
    Failed {
        reason: String,
    },
}

/// `POST /whatsapp/pair`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PairRequest {
    /// Link with a code typed on this phone (E.164) instead of a QR code.
    #[serde(default)]
    pub phone: Option<String>,
    /// Unlink the current session first and link anew.
    #[serde(default)]
    pub force: bool,
}

/// `GET /health`: the only route that needs no token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HealthResponse {
    pub status: String,
    pub pid: u32,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ShutdownResponse {
    pub pid: u32,
}

/// A stable code for a program, one per kind of error. The daemon sends the
/// API's codes; the CLI adds its own (marked "CLI only") for what goes wrong
/// before or around a request, and maps every code to its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidRequest,
    NotFound,
    AmbiguousId,
    InvalidTransition,
    /// A wait for a state the conversation, having ended, will never reach.
    Ended,
    Unauthorized,
    Forbidden,
    UnsupportedMediaType,
    PayloadTooLarge,
    MethodNotAllowed,
    ChannelUnavailable,
    NotSent,
    ShuttingDown,
    NotSandbox,
    NotWhatsapp,
    IdempotencyKeyReused,
    IdempotencyKeyInUse,
    /// A full disk or read-only home: nothing was changed.
    StorageUnavailable,
    Internal,
    /// CLI only: anything else that failed (I/O, an unreadable answer).
    Failure,
    /// CLI only: the command line itself is wrong.
    InvalidArguments,
    /// CLI only: no daemon answers.
    DaemonNotRunning,
    /// CLI only: the daemon stopped while followed.
    DaemonStopped,
    /// CLI only: no config.json (run `relay init`).
    NotInitialised,
    /// CLI only: config.json cannot be read.
    InvalidConfig,
    /// CLI only: `relay wait` timed out.
    TimedOut,
    /// CLI only: stdout's reader went away.
    ReaderGone,
}

impl ErrorCode {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            InvalidRequest => "invalid_request",
            NotFound => "not_found",
            AmbiguousId => "ambiguous_id",
            InvalidTransition => "invalid_transition",
            Ended => "ended",
            Unauthorized => "unauthorized",
            Forbidden => "forbidden",
            UnsupportedMediaType => "unsupported_media_type",
            PayloadTooLarge => "payload_too_large",
            MethodNotAllowed => "method_not_allowed",
            ChannelUnavailable => "channel_unavailable",
            NotSent => "not_sent",
            ShuttingDown => "shutting_down",
            NotSandbox => "not_sandbox",
            NotWhatsapp => "not_whatsapp",
            IdempotencyKeyReused => "idempotency_key_reused",
            IdempotencyKeyInUse => "idempotency_key_in_use",
            StorageUnavailable => "storage_unavailable",
            Internal => "internal",
            Failure => "failure",
            InvalidArguments => "invalid_arguments",
            DaemonNotRunning => "daemon_not_running",
            DaemonStopped => "daemon_stopped",
            NotInitialised => "not_initialised",
            InvalidConfig => "invalid_config",
            TimedOut => "timed_out",
            ReaderGone => "reader_gone",
        }
    }

    pub const ALL: [ErrorCode; 27] = {
        use ErrorCode::*;
        [
            InvalidRequest,
            NotFound,
            AmbiguousId,
            InvalidTransition,
            Ended,
            Unauthorized,
            Forbidden,
            UnsupportedMediaType,
            PayloadTooLarge,
            MethodNotAllowed,
            ChannelUnavailable,
            NotSent,
            ShuttingDown,
            NotSandbox,
            NotWhatsapp,
            IdempotencyKeyReused,
            IdempotencyKeyInUse,
            StorageUnavailable,
            Internal,
            Failure,
            InvalidArguments,
            DaemonNotRunning,
            DaemonStopped,
            NotInitialised,
            InvalidConfig,
            TimedOut,
            ReaderGone,
        ]
    };
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every error the API returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApiErrorResponse {
    /// One sentence for a person.
    pub error: String,
    /// A stable code for a program.
    pub code: ErrorCode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// For `invalid_transition` and `ended`: the instance's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_state: Option<State>,
    /// For `invalid_transition`: the refused event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
}

impl ApiErrorResponse {
    pub fn new(code: ErrorCode, error: impl Into<String>) -> ApiErrorResponse {
        ApiErrorResponse { error: error.into(), code, details: None, current_state: None, event: None }
    }
}

/// `relay sandbox say`: a message from a simulated contact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSayRequest {
    pub contact: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SandboxSayResponse {
    /// The conversation the message reached, or null when the contact has no
    /// live conversation (the message is logged and ignored, as on WhatsApp).
    pub instance_id: Option<Uuid>,
    pub contact: String,
}

/// One message relay sent to a contact on the sandbox channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboxEntry {
    pub contact: String,
    pub text: String,
    pub timestamp: DateTime<Utc>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct OutboxQuery {
    /// Only messages to this contact.
    pub contact: Option<String>,
}

/// Query of `GET /instances/{id}/wait`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    /// What to wait for, comma-separated: state names (`COMPLETED,PAUSED`),
    /// `terminal` (any of COMPLETED, ABANDONED, FAILED) or `change` (any
    /// change after the request arrives). Default: `terminal,NEEDS_HUMAN_INTERVENTION`,
    /// i.e. until the conversation ends or needs you.
    pub until: Option<String>,
    /// How long to wait at most, in milliseconds (default 50,000; at most 3,600,000).
    pub timeout_ms: Option<u64>,
}

/// `GET /instances/{id}/wait`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WaitResponse {
    /// True when the conversation reached what was waited for; false when
    /// the wait timed out first.
    pub reached: bool,
    /// The conversation as it is now.
    pub instance: ConversationInstance,
}

/// `POST /instances/{id}/answer`: the operator answers the agent's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    pub answer: String,
}

/// One event of the event log (`GET /events`, `relay events`, webhooks).
/// `seq` increases by one with every event, across all conversations, and
/// survives restarts: resume with `after=<last seq seen>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ConversationEvent {
    pub seq: u64,
    pub at: DateTime<Utc>,
    pub instance_id: Uuid,
    #[serde(flatten)]
    pub data: EventData,
}

/// What happened. The contact's own words are only ever in
/// `untrusted_contact_text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventData {
    /// A conversation was created (CREATED or QUEUED).
    Created { state: State, target_contact: String },
    /// The conversation moved from one state to another.
    Transition {
        from: State,
        to: State,
        /// The event that moved it (`heartbeat_fires`, `pause`, ...).
        trigger: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The contact wrote.
    MessageIn { message_id: Uuid, untrusted_contact_text: String },
    /// relay wrote to the contact (the agent, or the operator with `relay send`),
    /// once the channel answered: `sent` or `failed`.
    MessageOut {
        message_id: Uuid,
        role: Role,
        text: String,
        send_status: SendStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery_error: Option<String>,
    },
    /// The agent updated a todo.
    Todo {
        todo_id: String,
        status: TodoStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
    },
    /// The agent asked the operator something.
    Question { question: Question },
    /// The operator answered it.
    Answer { question_id: String, answer: String },
}

impl EventData {
    /// The name of the event's type, as in `type` and `--events` filters.
    pub fn kind(&self) -> &'static str {
        match self {
            EventData::Created { .. } => "created",
            EventData::Transition { .. } => "transition",
            EventData::MessageIn { .. } => "message_in",
            EventData::MessageOut { .. } => "message_out",
            EventData::Todo { .. } => "todo",
            EventData::Question { .. } => "question",
            EventData::Answer { .. } => "answer",
        }
    }

    pub const KINDS: [&'static str; 7] =
        ["created", "transition", "message_in", "message_out", "todo", "question", "answer"];
}

/// Query of `GET /events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Only events after this sequence number (default 0: from the start).
    /// For Server-Sent Events, a `Last-Event-ID` header does the same.
    pub after: Option<u64>,
    /// Only the events of this conversation (id or unique prefix).
    pub instance: Option<String>,
    /// Keep the stream open and send new events as they happen (default
    /// false: send what is stored, then end).
    pub follow: Option<bool>,
}

/// `POST /webhooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookRequest {
    /// Where to POST each event (http or https).
    pub url: String,
    /// Only these event types (`transition`, `message_in`, ...); empty or
    /// absent: all of them.
    #[serde(default)]
    pub events: Vec<String>,
}

/// A registered webhook and how its deliveries go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    /// "wh_" and 12 hex digits.
    pub id: String,
    pub url: String,
    /// The event types it gets (empty: all).
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
    /// The last event delivered (or skipped by the filter); delivery goes on after it.
    pub delivered_seq: u64,
    /// Events stored after `delivered_seq`, not yet delivered.
    #[serde(default)]
    pub pending: u64,
    /// Failed attempts in a row for the event being delivered (0 when healthy).
    #[serde(default)]
    pub failures: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_attempt_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// `POST /webhooks` answers this: the secret once, when the webhook is
/// created; it is not shown again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookCreated {
    #[serde(flatten)]
    pub webhook: Webhook,
    /// The key of the `Relay-Signature` HMAC-SHA256 (hex). Keep it; it is
    /// shown only now. Null when `created` is false.
    pub secret: Option<String>,
    /// False when the URL was registered already (for the same events):
    /// this is that webhook, unchanged, and its secret is the one shown
    /// when it was added.
    pub created: bool,
}

#[cfg(test)]
mod error_code_tests {
    use super::ErrorCode;

    #[test]
    fn every_code_is_on_the_wire_as_its_name() {
        for code in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(code.as_str()));
            assert_eq!(serde_json::from_value::<ErrorCode>(serde_json::json!(code.as_str())).unwrap(), code);
        }
    }
}
