//! The conversation state machine: the 11 states, the events that move them,
//! and [`TABLE`], the one place that says which event moves which state where.
//!
//! Rows marked `addition` are not in the seeds' table; `docs/state-machine.md`
//! explains each one. Everything else about a transition (persisting it,
//! timers, the agent, the queue) lives in the conversation actor
//! (`engine/actor/`); this module only answers "is this allowed, and
//! where does it lead?".
//!
//! Longer than most files, on purpose: the table is data a reader checks row
//! by row against the seeds, and its unit tests sit beside it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a conversation is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum State {
    /// Created; the agent is about to write the first message.
    Created,
    /// Another conversation with the same contact is live; waits its turn (FIFO).
    Queued,
    /// The agent is taking a turn.
    Active,
    /// relay spoke; waiting for the contact, with a heartbeat armed.
    WaitingForReply,
    /// The contact replied; the agent is about to take a turn.
    WaitingForAgent,
    /// The contact stayed silent; the agent is writing follow-up N of M.
    HeartbeatScheduled,
    /// Suspended by the operator; `previous_state` says where resume returns.
    Paused,
    /// The agent asked for a human, or could not go on.
    NeedsHumanIntervention,
    /// The agent ended the conversation. Terminal.
    Completed,
    /// relay stopped pursuing it: the contact never answered the last
    /// follow-up, asked not to be contacted, or its budget or deadline ran
    /// out (`ended_by` says which). Terminal.
    Abandoned,
    /// Cancelled by the operator, or an unrecoverable error. Terminal.
    Failed,
}

impl State {
    pub const ALL: [State; 11] = [
        State::Created,
        State::Queued,
        State::Active,
        State::WaitingForReply,
        State::WaitingForAgent,
        State::HeartbeatScheduled,
        State::Paused,
        State::NeedsHumanIntervention,
        State::Completed,
        State::Abandoned,
        State::Failed,
    ];

    /// Terminal states absorb every event.
    pub fn is_terminal(self) -> bool {
        matches!(self, State::Completed | State::Abandoned | State::Failed)
    }

    /// One word of a list of states: a state's name (any case, `-` for
    /// `_`), or `terminal` for COMPLETED, ABANDONED and FAILED.
    pub fn parse_group(word: &str) -> Result<Vec<State>, String> {
        match word.trim().eq_ignore_ascii_case("terminal") {
            true => Ok(State::ALL.into_iter().filter(|s| s.is_terminal()).collect()),
            false => word
                .parse::<State>()
                .map(|s| vec![s])
                .map_err(|e| format!("{e}; or `terminal` (COMPLETED, ABANDONED, FAILED)")),
        }
    }

    /// A comma-separated list of [`State::parse_group`] words
    /// (`WAITING_FOR_REPLY,paused`, `terminal`), each state once.
    pub fn parse_list(text: &str) -> Result<Vec<State>, String> {
        let mut states = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            for state in State::parse_group(word)? {
                if !states.contains(&state) {
                    states.push(state);
                }
            }
        }
        match states.is_empty() {
            true => Err("name at least one state, or `terminal`".into()),
            false => Ok(states),
        }
    }

    /// A regular expression of what [`State::parse_list`] reads: `terminal`
    /// and state names, in any case, `-` or `_` between words, separated by
    /// commas with spaces around them. Every string this matches the parser
    /// takes (it also takes empty items between commas, which this leaves out).
    pub fn list_regex() -> String {
        let words: Vec<String> =
            std::iter::once("terminal").chain(State::ALL.iter().map(|s| s.as_str())).map(any_case).collect();
        let word = words.join("|");
        format!(" *(?:{word}) *(?:, *(?:{word}) *)*")
    }

    /// [`State::list_regex`] as a JSON Schema `pattern` (the whole value).
    pub fn list_pattern() -> String {
        format!("^{}$", State::list_regex())
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Created => "CREATED",
            State::Queued => "QUEUED",
            State::Active => "ACTIVE",
            State::WaitingForReply => "WAITING_FOR_REPLY",
            State::WaitingForAgent => "WAITING_FOR_AGENT",
            State::HeartbeatScheduled => "HEARTBEAT_SCHEDULED",
            State::Paused => "PAUSED",
            State::NeedsHumanIntervention => "NEEDS_HUMAN_INTERVENTION",
            State::Completed => "COMPLETED",
            State::Abandoned => "ABANDONED",
            State::Failed => "FAILED",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A regular expression of `word` (letters and `_`) in any case, `-` or
/// `_` where it has `_`: JSON Schema's patterns have no flag for case.
pub fn any_case(word: &str) -> String {
    word.chars()
        .map(|c| match c {
            '_' => "[-_]".to_string(),
            c => format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()),
        })
        .collect()
}

impl FromStr for State {
    type Err = String;

    /// Accepts `WAITING_FOR_REPLY`, `waiting_for_reply` and `waiting-for-reply`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_uppercase().replace('-', "_");
        State::ALL.into_iter().find(|st| st.as_str() == wanted).ok_or_else(|| {
            let names: Vec<_> = State::ALL.iter().map(|s| s.as_str()).collect();
            format!("unknown state '{s}' (expected one of {})", names.join(", "))
        })
    }
}

/// Something that happened to a conversation. The name is recorded as the
/// `trigger` of each transition in the instance's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// The agent starts its first turn on a new conversation.
    AgentSendsFirstMessage,
    /// A new conversation finds its contact busy with another one.
    ContactHasActiveInstance,
    /// The contact's live conversation ended; the oldest queued one starts.
    PriorInstanceTerminal,
    /// A turn (or an operator's `send`) delivered a message; wait for the contact.
    MessageSent,
    /// A turn ended without sending anything; wait for the contact anyway. (addition)
    AgentWaits,
    /// The agent called `end_conversation`.
    EndConversation,
    /// The agent called `request_human_intervention`.
    RequestIntervention,
    /// The agent could not run its turn (no model, provider down). (addition)
    AgentError,
    /// Something relay cannot recover from (the channel refused a send for good).
    UnrecoverableError,
    /// The contact wrote while relay was waiting for them.
    ContactReplies,
    /// The agent starts a turn on the contact's reply.
    AgentProcessesReply,
    /// The heartbeat expired without a reply.
    HeartbeatFires,
    /// No message of the conversation reached the contact's phone within
    /// `delivery.timeout`. (addition)
    NotDelivered,
    /// The agent sent its follow-up.
    FollowupSent,
    /// The heartbeat fired once more than `max_followups` allows.
    MaxFollowupsExceeded,
    /// Operator: `relay pause`.
    Pause,
    /// Operator: `relay resume`.
    Resume,
    /// Operator: `relay cancel`.
    Cancel,
    /// Operator: `relay send`.
    ManualSend,
    /// Operator: `relay answer`, to the agent's question. (addition)
    OperatorAnswers,
    /// The operator wrote to the contact on their own WhatsApp (the phone,
    /// WhatsApp Desktop), not through relay: they take the conversation
    /// over, and the agent is silent until resumed. (addition)
    OperatorWrites,
    /// The contact asked not to be contacted (an opt-out word, or the
    /// agent's `contact_opted_out`), or the operator put the number on the
    /// do-not-contact list. (addition)
    OptedOut,
    /// WhatsApp refused the conversation's first message with error 463
    /// (its reach-out lock): nothing reached the contact, so the
    /// conversation starts again when the lock ends. (addition)
    FirstMessageRefused,
    /// The conversation's turn or token budget is spent: relay stops it
    /// instead of starting another turn. (addition)
    BudgetExhausted,
    /// The conversation's deadline passed. (addition)
    Expired,
}

impl Event {
    pub const ALL: [Event; 25] = [
        Event::AgentSendsFirstMessage,
        Event::ContactHasActiveInstance,
        Event::PriorInstanceTerminal,
        Event::MessageSent,
        Event::AgentWaits,
        Event::EndConversation,
        Event::RequestIntervention,
        Event::AgentError,
        Event::UnrecoverableError,
        Event::ContactReplies,
        Event::AgentProcessesReply,
        Event::HeartbeatFires,
        Event::NotDelivered,
        Event::FollowupSent,
        Event::MaxFollowupsExceeded,
        Event::Pause,
        Event::Resume,
        Event::Cancel,
        Event::ManualSend,
        Event::OperatorAnswers,
        Event::OperatorWrites,
        Event::OptedOut,
        Event::FirstMessageRefused,
        Event::BudgetExhausted,
        Event::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::AgentSendsFirstMessage => "agent_sends_first_message",
            Event::ContactHasActiveInstance => "contact_has_active_instance",
            Event::PriorInstanceTerminal => "prior_instance_terminal",
            Event::MessageSent => "message_sent",
            Event::AgentWaits => "agent_waits",
            Event::EndConversation => "end_conversation",
            Event::RequestIntervention => "request_intervention",
            Event::AgentError => "agent_error",
            Event::UnrecoverableError => "unrecoverable_error",
            Event::ContactReplies => "contact_replies",
            Event::AgentProcessesReply => "agent_processes_reply",
            Event::HeartbeatFires => "heartbeat_fires",
            Event::NotDelivered => "not_delivered",
            Event::FollowupSent => "followup_sent",
            Event::MaxFollowupsExceeded => "max_followups_exceeded",
            Event::Pause => "pause",
            Event::Resume => "resume",
            Event::Cancel => "cancel",
            Event::ManualSend => "manual_send",
            Event::OperatorAnswers => "operator_answers",
            Event::OperatorWrites => "operator_writes",
            Event::OptedOut => "opted_out",
            Event::FirstMessageRefused => "first_message_refused",
            Event::BudgetExhausted => "budget_exhausted",
            Event::Expired => "expired",
        }
    }
}

impl Event {
    /// What the event does, in the words of whoever asked for it: the
    /// operator's command for theirs, plain words for relay's own.
    pub fn verb(self) -> &'static str {
        match self {
            Event::Pause => "pause",
            Event::Resume => "resume",
            Event::Cancel => "cancel",
            Event::ManualSend => "send",
            Event::OperatorAnswers => "answer",
            Event::OperatorWrites => "hand the conversation to the operator",
            Event::AgentSendsFirstMessage | Event::PriorInstanceTerminal => "start the conversation",
            Event::ContactHasActiveInstance => "queue the conversation",
            Event::MessageSent | Event::FollowupSent => "record a sent message",
            Event::AgentWaits => "wait for the contact",
            Event::EndConversation => "end the conversation",
            Event::RequestIntervention | Event::AgentError | Event::NotDelivered => "hand the conversation to a person",
            Event::UnrecoverableError => "fail the conversation",
            Event::ContactReplies | Event::AgentProcessesReply => "answer the contact",
            Event::HeartbeatFires => "follow up",
            Event::MaxFollowupsExceeded => "abandon the conversation",
            Event::OptedOut => "stop writing to the contact",
            Event::FirstMessageRefused => "start again once WhatsApp allows first messages",
            Event::BudgetExhausted | Event::Expired => "end the conversation",
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What caused an entry of a conversation's history: its creation, or an
/// event. On the wire it is the event's name, or `create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trigger {
    Create,
    Event(Event),
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Create => "create",
            Trigger::Event(event) => event.as_str(),
        }
    }

    /// The trigger named `name` as the wire writes it.
    pub fn parse(name: &str) -> Option<Trigger> {
        match name {
            "create" => Some(Trigger::Create),
            _ => Event::ALL.into_iter().find(|event| event.as_str() == name).map(Trigger::Event),
        }
    }

    /// Every name a trigger has on the wire.
    fn names() -> impl Iterator<Item = &'static str> {
        std::iter::once("create").chain(Event::ALL.into_iter().map(Event::as_str))
    }
}

impl From<Event> for Trigger {
    fn from(event: Event) -> Trigger {
        Trigger::Event(event)
    }
}

impl PartialEq<Event> for Trigger {
    fn eq(&self, event: &Event) -> bool {
        *self == Trigger::Event(*event)
    }
}

impl PartialEq<&str> for Trigger {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

impl PartialEq<Trigger> for &str {
    fn eq(&self, trigger: &Trigger) -> bool {
        *self == trigger.as_str()
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Trigger {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Trigger {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Trigger, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Trigger::parse(&name).ok_or_else(|| {
            let names: Vec<&str> = Trigger::names().collect();
            serde::de::Error::custom(format!("unknown trigger {name:?}: one of {}", names.join(", ")))
        })
    }
}

impl utoipa::PartialSchema for Trigger {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("The event that caused the entry (`pause`, `heartbeat_fires`, ...), or `create`."))
            .enum_values(Some(Trigger::names()))
            .into()
    }
}

impl ToSchema for Trigger {}

/// Where an allowed event leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// To this state.
    To(State),
    /// Back to the state recorded in `previous_state` (resume from PAUSED).
    Previous,
    /// The event is allowed and changes nothing about the state (an operator
    /// `send` while relay waits for a reply). Not recorded in the history.
    Stay,
}

use Event as E;
use State as S;
use Target::{Previous, Stay, To};

/// The transition table: `(from, event, target)`. A pair that is not here is
/// an invalid transition (HTTP 409). Terminal states have no rows.
#[rustfmt::skip]
pub const TABLE: &[(State, Event, Target)] = &[
    (S::Created,                E::AgentSendsFirstMessage,   To(S::Active)),
    (S::Created,                E::ContactHasActiveInstance, To(S::Queued)),
    (S::Created,                E::Pause,                    To(S::Paused)),
    (S::Created,                E::OperatorWrites,           To(S::Paused)),                 // addition
    (S::Created,                E::Cancel,                   To(S::Failed)),
    (S::Created,                E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::Created,                E::Expired,                  To(S::Abandoned)),              // addition

    (S::Queued,                 E::PriorInstanceTerminal,    To(S::Created)),
    (S::Queued,                 E::Pause,                    To(S::Paused)),
    (S::Queued,                 E::Cancel,                   To(S::Failed)),
    (S::Queued,                 E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::Queued,                 E::Expired,                  To(S::Abandoned)),              // addition

    (S::Active,                 E::MessageSent,              To(S::WaitingForReply)),
    (S::Active,                 E::AgentWaits,               To(S::WaitingForReply)),        // addition
    (S::Active,                 E::EndConversation,          To(S::Completed)),
    (S::Active,                 E::RequestIntervention,      To(S::NeedsHumanIntervention)),
    (S::Active,                 E::AgentError,               To(S::NeedsHumanIntervention)), // addition
    (S::Active,                 E::UnrecoverableError,       To(S::Failed)),
    (S::Active,                 E::ManualSend,               Stay),                          // addition
    (S::Active,                 E::Pause,                    To(S::Paused)),
    (S::Active,                 E::OperatorWrites,           To(S::Paused)),                 // addition
    (S::Active,                 E::Cancel,                   To(S::Failed)),
    (S::Active,                 E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::Active,                 E::BudgetExhausted,          To(S::Abandoned)),              // addition
    (S::Active,                 E::Expired,                  To(S::Abandoned)),              // addition

    (S::WaitingForReply,        E::ContactReplies,           To(S::WaitingForAgent)),
    (S::WaitingForReply,        E::HeartbeatFires,           To(S::HeartbeatScheduled)),
    (S::WaitingForReply,        E::EndConversation,          To(S::Completed)),
    (S::WaitingForReply,        E::UnrecoverableError,       To(S::Failed)),                 // addition
    (S::WaitingForReply,        E::ManualSend,               Stay),                          // addition
    (S::WaitingForReply,        E::NotDelivered,             To(S::NeedsHumanIntervention)), // addition
    (S::WaitingForReply,        E::Pause,                    To(S::Paused)),
    (S::WaitingForReply,        E::OperatorWrites,           To(S::Paused)),                 // addition
    (S::WaitingForReply,        E::Cancel,                   To(S::Failed)),
    (S::WaitingForReply,        E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::WaitingForReply,        E::FirstMessageRefused,      To(S::Created)),                // addition
    (S::WaitingForReply,        E::BudgetExhausted,          To(S::Abandoned)),              // addition
    (S::WaitingForReply,        E::Expired,                  To(S::Abandoned)),              // addition

    (S::WaitingForAgent,        E::AgentProcessesReply,      To(S::Active)),
    (S::WaitingForAgent,        E::EndConversation,          To(S::Completed)),
    (S::WaitingForAgent,        E::UnrecoverableError,       To(S::Failed)),                 // addition
    (S::WaitingForAgent,        E::ManualSend,               Stay),                          // addition
    (S::WaitingForAgent,        E::Pause,                    To(S::Paused)),
    (S::WaitingForAgent,        E::OperatorWrites,           To(S::Paused)),                 // addition
    (S::WaitingForAgent,        E::Cancel,                   To(S::Failed)),
    (S::WaitingForAgent,        E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::WaitingForAgent,        E::BudgetExhausted,          To(S::Abandoned)),              // addition
    (S::WaitingForAgent,        E::Expired,                  To(S::Abandoned)),              // addition

    (S::HeartbeatScheduled,     E::FollowupSent,             To(S::WaitingForReply)),
    (S::HeartbeatScheduled,     E::AgentWaits,               To(S::WaitingForReply)),        // addition
    (S::HeartbeatScheduled,     E::MaxFollowupsExceeded,     To(S::Abandoned)),
    (S::HeartbeatScheduled,     E::EndConversation,          To(S::Completed)),              // addition
    (S::HeartbeatScheduled,     E::RequestIntervention,      To(S::NeedsHumanIntervention)), // addition
    (S::HeartbeatScheduled,     E::AgentError,               To(S::NeedsHumanIntervention)), // addition
    (S::HeartbeatScheduled,     E::UnrecoverableError,       To(S::Failed)),                 // addition
    (S::HeartbeatScheduled,     E::ManualSend,               Stay),                          // addition
    (S::HeartbeatScheduled,     E::Pause,                    To(S::Paused)),
    (S::HeartbeatScheduled,     E::OperatorWrites,           To(S::Paused)),                 // addition
    (S::HeartbeatScheduled,     E::Cancel,                   To(S::Failed)),
    (S::HeartbeatScheduled,     E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::HeartbeatScheduled,     E::BudgetExhausted,          To(S::Abandoned)),              // addition
    (S::HeartbeatScheduled,     E::Expired,                  To(S::Abandoned)),              // addition

    (S::Paused,                 E::Resume,                   Previous),
    (S::Paused,                 E::ManualSend,               Stay),                          // addition
    (S::Paused,                 E::OperatorWrites,           Stay),                          // addition
    (S::Paused,                 E::Cancel,                   To(S::Failed)),
    (S::Paused,                 E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::Paused,                 E::Expired,                  To(S::Abandoned)),              // addition

    (S::NeedsHumanIntervention, E::Resume,                   To(S::Active)),
    (S::NeedsHumanIntervention, E::ManualSend,               To(S::Active)),
    (S::NeedsHumanIntervention, E::OperatorAnswers,          To(S::Active)),                 // addition
    (S::NeedsHumanIntervention, E::Pause,                    To(S::Paused)),
    (S::NeedsHumanIntervention, E::OperatorWrites,           Stay),                          // addition
    (S::NeedsHumanIntervention, E::Cancel,                   To(S::Failed)),
    (S::NeedsHumanIntervention, E::OptedOut,                 To(S::Abandoned)),              // addition
    (S::NeedsHumanIntervention, E::Expired,                  To(S::Abandoned)),              // addition
];

/// Why an event was refused. It reads in the operator's words: "cannot
/// answer: the conversation is ACTIVE, not waiting for you".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {}: the conversation is {state}{}", event.verb(), why(*state, *event))]
pub struct InvalidTransition {
    pub state: State,
    pub event: Event,
}

/// The rest of the sentence: why `event` cannot happen in `state`.
fn why(state: State, event: Event) -> &'static str {
    match (state, event) {
        (s, _) if s.is_terminal() => ", which has ended",
        (_, E::OperatorAnswers) => ", not waiting for you",
        (_, E::Resume) => ", not paused or waiting for you",
        (S::Paused, E::Pause) => " already",
        (S::Created, E::ManualSend) => ": it has not started yet",
        (S::Queued, E::ManualSend) => ": it waits for the contact's earlier conversation to end",
        (S::Paused, E::ManualSend) => " before it started: resume it first",
        _ => "",
    }
}

/// Looks `(state, event)` up in [`TABLE`]. `previous` is the recorded
/// `previous_state`, needed only to resolve [`Target::Previous`].
pub fn next(state: State, event: Event, previous: Option<State>) -> Result<Target, InvalidTransition> {
    let refused = InvalidTransition { state, event };
    let target = TABLE
        .iter()
        .find(|(from, ev, _)| *from == state && *ev == event)
        .map(|(_, _, target)| *target)
        .ok_or(refused.clone())?;
    match target {
        // A PAUSED instance without a previous state would break an
        // invariant; refuse rather than guess where to go.
        Previous if previous.is_none() => Err(refused),
        // The operator may write while paused, as in the state paused from,
        // where the conversation has started (see `why`).
        Stay if state == S::Paused && matches!(previous, None | Some(S::Created | S::Queued)) => Err(refused),
        other => Ok(other),
    }
}

/// The state a `Target` resolves to, given where the instance is now.
pub fn resolve(state: State, target: Target, previous: Option<State>) -> State {
    match target {
        To(s) => s,
        Previous => previous.unwrap_or(state),
        Stay => state,
    }
}

#[cfg(test)]
mod tests;
