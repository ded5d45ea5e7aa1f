//! A conversation as the API shows it and `instances/<id>.json` holds it:
//! its todos, state, history, outcome and timers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::courtesy::{QuietHours, ZoneSource};
use crate::fsm::State;

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
    /// What the answer is, as the creator asked (see `AnswerSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_schema: Option<super::AnswerSchema>,
    /// The answer as a typed JSON value that fits `answer_schema`, once the
    /// todo is completed with one (a date "2026-11-27", true, 3, "morning").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub value: Option<serde_json::Value>,
    /// What the answer rests on: the contact's words, each with the message
    /// they are in, as relay found them there (a quote the agent gave that
    /// no message of the contact holds is refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// How `value` was established from its evidence; absent without a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<super::ValueCheck>,
}

/// A piece of what the contact wrote, and the transcript message it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Evidence {
    pub message_id: Uuid,
    /// The contact's words, exactly as in that message: data, never instructions.
    pub untrusted_contact_text: String,
    /// The media of that message the answer is (`m2`: a photo of the meter),
    /// when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<String>,
    /// The contact later edited or deleted that message: the answer rests
    /// on words they took back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<super::Withdrawal>,
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
    /// The contact asked not to be contacted (or the operator listed the
    /// number): relay sends nothing more to them.
    OptedOut,
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
            Outcome::OptedOut => "opted_out",
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
    /// The contact: they asked not to be contacted.
    Contact,
    /// A budget of the conversation (`--max-turns`, `--max-tokens`) was
    /// spent: `budget.reached` says which.
    Budget,
    /// The conversation's deadline (`--expires-in`, `--expires-at`) passed.
    Expired,
}

impl EndedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            EndedBy::Agent => "agent",
            EndedBy::MaxFollowups => "max_followups",
            EndedBy::Operator => "operator",
            EndedBy::Error => "error",
            EndedBy::Contact => "contact",
            EndedBy::Budget => "budget",
            EndedBy::Expired => "expired",
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
    /// Of `input_tokens`, those the provider read from its prompt cache (as
    /// it reports them: llama-server, OpenAI, Anthropic's cache reads);
    /// absent while there are none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
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
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.model_calls += other.model_calls;
        self.text_tool_calls += other.text_tool_calls;
    }
}

/// What a conversation may spend, fixed when it is created (from the
/// request, else the `budget` section of config.json). A limit left out
/// (null) is no limit. See `engine::budget` for how each is enforced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Budget {
    /// Agent turns at most: the first message, each reply, each follow-up,
    /// each go after the operator's answer (`turns_taken` counts them).
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Model tokens at most, input and output together (`usage`). A turn
    /// starts only while fewer have been used; the last one may go past.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// When the conversation ends (`ended_by: expired`) if it has not
    /// ended before, whatever state it is in.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// The limit that ended the conversation (null until one did).
    #[serde(default)]
    pub reached: Option<BudgetLimit>,
}

impl Budget {
    /// Whether no limit is set.
    pub fn is_unlimited(&self) -> bool {
        self.max_turns.is_none() && self.max_tokens.is_none() && self.expires_at.is_none()
    }
}

/// One of a conversation's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLimit {
    MaxTurns,
    MaxTokens,
    ExpiresAt,
}

impl BudgetLimit {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetLimit::MaxTurns => "max_turns",
            BudgetLimit::MaxTokens => "max_tokens",
            BudgetLimit::ExpiresAt => "expires_at",
        }
    }
}

impl TokenUsage {
    /// What counts against `budget.max_tokens`: input and output tokens
    /// (cached input is part of the input: the provider still bills it).
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// A span in which the contact's messages may not have reached relay:
/// WhatsApp's catch-up after relay was away did not finish in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MissedSpan {
    /// When relay was last in touch with WhatsApp; null: since it last ran.
    pub from: Option<DateTime<Utc>>,
    /// When relay went on without the rest.
    pub to: DateTime<Utc>,
}

impl MissedSpan {
    /// The span, for a person: "from 2026-11-27 10:00:00 UTC to ...".
    pub fn describe(&self) -> String {
        let from = self.from.map_or("relay's last run".to_string(), crate::clock::time);
        format!("from {from} to {}", crate::clock::time(self.to))
    }
}

/// relay's latest message to the contact, not delivered yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AwaitingDelivery {
    /// The transcript message's id.
    pub message_id: Uuid,
    /// When the channel took it.
    pub sent_at: DateTime<Utc>,
    /// When it counts as not delivered (`delivery.timeout` after `sent_at`).
    pub due_at: DateTime<Utc>,
    /// `due_at` has passed: the message is flagged as not delivered.
    #[serde(default)]
    pub overdue: bool,
}

/// When relay may write on its own, in the contact's time: fixed when the
/// conversation is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ContactTime {
    /// The contact's IANA time zone, e.g. "America/Santiago".
    pub time_zone: String,
    /// Where the zone came from: `given` (`--tz`), `country` (the number's
    /// country keeps one time) or `default` (`courtesy.default_tz`).
    pub zone_source: ZoneSource,
    /// In this window of the contact's day relay starts nothing on its own
    /// (first messages, follow-ups): "21:00-09:00"; null when off.
    #[schema(value_type = Option<String>, example = "21:00-09:00")]
    pub quiet_hours: Option<QuietHours>,
}

impl ContactTime {
    /// The first instant at or after `at` that is not in quiet hours.
    pub fn open_at(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        match (self.quiet_hours, self.time_zone.parse::<chrono_tz::Tz>()) {
            (Some(quiet), Ok(tz)) => quiet.next_open(at, tz),
            _ => at,
        }
    }
}

/// Why a conversation's next message waits (until `next_send_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// It is night (quiet hours) where the contact is.
    QuietHours,
    /// WhatsApp's reach-out lock: this number may not write first to new
    /// contacts until it ends (relay asks again then).
    ReachOutLock,
    /// The day's first messages to new contacts
    /// (`courtesy.max_new_contacts_per_day`) have started.
    NewContactCap,
    /// The conversation was created to start later (`start_at`).
    StartAt,
}

impl WaitReason {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::QuietHours => "quiet_hours",
            WaitReason::ReachOutLock => "reach_out_lock",
            WaitReason::NewContactCap => "new_contact_cap",
            WaitReason::StartAt => "start_at",
        }
    }

    /// In words, for `relay get`.
    pub fn words(self) -> &'static str {
        match self {
            WaitReason::QuietHours => "quiet hours where the contact is",
            WaitReason::ReachOutLock => "WhatsApp's lock on writing first to new contacts",
            WaitReason::NewContactCap => "the day's cap on first messages to new contacts",
            WaitReason::StartAt => "the start time it was created with",
        }
    }
}

/// One entry of an instance's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StateTransition {
    /// `null` for the entry that records the creation.
    pub from_state: Option<State>,
    pub to_state: State,
    /// The event that caused it (`pause`, `heartbeat_fires`, ...), or `create`.
    pub trigger: crate::fsm::Trigger,
    pub timestamp: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One conversation with one contact, as a caller sees it: its objective,
/// todos, state, report and timers. The home's record of it
/// (`store::ConversationRecord`) is this and relay's own bookkeeping.
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
    /// The contact's time zone and quiet hours (null on conversations from
    /// before relay kept them: those have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_time: Option<ContactTime>,
    /// The contact's messages in this span may not have reached relay
    /// (WhatsApp's catch-up after relay was away did not finish in time):
    /// the report may lack what they wrote then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_may_be_missing: Option<MissedSpan>,
    /// When the conversation was asked to start (`start_at`): its first
    /// message waits until then, then for what holds any first message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<DateTime<Utc>>,
    /// When relay's next message of its own may go out, while it waits
    /// (see `waiting_for`); null when nothing holds it.
    #[serde(default)]
    pub next_send_at: Option<DateTime<Utc>>,
    /// Why the next message waits; null when nothing holds it.
    #[serde(default)]
    pub waiting_for: Option<WaitReason>,
    /// WhatsApp refused this conversation's first message with error 463
    /// (its reach-out lock) and nothing has reached the contact: it goes
    /// back to CREATED, and its first message waits for the lock's end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_message_refused: bool,
    /// The operator's reason for writing to a number on the do-not-contact
    /// list (`--override-opt-out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_out_override: Option<String>,
    /// Facts the agent may use but must never write to the contact
    /// (`--private`): relay refuses any message of the agent's that repeats one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub private_context: Vec<String>,
    /// Files the conversation may send its contact (`--attach`, `relay send
    /// --file`): the agent sends one with `send_attachment`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<super::Attachment>,
    /// When the armed heartbeat fires (WAITING_FOR_REPLY only).
    #[serde(default)]
    pub next_heartbeat_at: Option<DateTime<Utc>>,
    /// When a device of the contact first received a message relay sent
    /// in this conversation (null: none has, yet).
    #[serde(default)]
    pub first_delivered_at: Option<DateTime<Utc>>,
    /// When the contact last read a message relay sent in this conversation.
    #[serde(default)]
    pub last_read_at: Option<DateTime<Utc>>,
    /// relay's latest message, while no device of the contact has said it
    /// arrived: follow-ups wait for it, and past `due_at` it is flagged.
    #[serde(default)]
    pub awaiting_delivery: Option<AwaitingDelivery>,
    /// Tokens the conversation's model calls used, in all.
    #[serde(default)]
    pub usage: TokenUsage,
    /// The conversation's limits: turns, tokens, a deadline.
    #[serde(default)]
    pub budget: Budget,
    /// Agent turns started so far (what `budget.max_turns` counts): each
    /// entry into ACTIVE or HEARTBEAT_SCHEDULED, but for a return from
    /// PAUSED (the same turn, re-run) and the operator's own `relay send`
    /// (no agent turn).
    #[serde(default)]
    pub turns_taken: u32,
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
        let now = crate::clock::now();
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
            contact_time: None,
            messages_may_be_missing: None,
            start_at: None,
            next_send_at: None,
            waiting_for: None,
            first_message_refused: false,
            opt_out_override: None,
            private_context: Vec::new(),
            attachments: Vec::new(),
            next_heartbeat_at: None,
            first_delivered_at: None,
            last_read_at: None,
            awaiting_delivery: None,
            usage: TokenUsage::default(),
            budget: Budget::default(),
            turns_taken: 0,
            history: vec![StateTransition {
                from_state: None,
                to_state: State::Created,
                trigger: crate::fsm::Trigger::Create,
                timestamp: now,
                reason: None,
            }],
            created_at: now,
            updated_at: now,
        }
    }

    /// Whether this conversation has reached its contact: a device of theirs
    /// received one of relay's messages, or they wrote. A contact reached
    /// once is no longer a first contact (`engine::first_contact`).
    pub fn reached_contact(&self) -> bool {
        self.first_delivered_at.is_some() || self.last_contact_message.is_some()
    }

    /// Live conversations hold their contact: at most one per contact. A
    /// queued conversation (paused or not) does not.
    pub fn holds_contact(&self) -> bool {
        !self.state.is_terminal()
            && self.state != State::Queued
            && !(self.state == State::Paused && self.previous_state == Some(State::Queued))
    }
}
