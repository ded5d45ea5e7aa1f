//! What a caller may ask for: a create request checked and turned into a
//! conversation, and the bounds every text the engine takes must keep.

use chrono::{DateTime, Utc};

use super::EngineError;
use crate::api::limits;
use crate::api::{
    ContactTime, CreateInstanceRequest, HeartbeatConfig, HeartbeatOverrides, NewTodo, TodoItem, TodoStatus,
};
use crate::contact::Contact;
use crate::courtesy::{parse_zone, quiet, zone_of};
use crate::store::ConversationRecord;

/// Validates a create request and builds the instance it describes (CREATED;
/// the contact's actor may queue it).
pub(super) fn new_instance(
    request: CreateInstanceRequest,
    settings: &super::Settings,
) -> Result<ConversationRecord, EngineError> {
    let courtesy = &settings.courtesy;
    let objective = bounded_text("objective", request.objective, limits::MAX_OBJECTIVE_CHARS)?;
    let contact = Contact::parse(&request.target_contact).map_err(|e| EngineError::Invalid(e.to_string()))?;
    let todos = todos(request.todos)?;
    let heartbeat_config = heartbeat(request.heartbeat_config)?;
    let given = request.time_zone.as_deref().map(parse_zone).transpose().map_err(EngineError::Invalid)?;
    let (zone, zone_source) = zone_of(&contact, given, courtesy.default_zone());
    let quiet_hours = match request.quiet_hours.as_deref() {
        Some(text) => quiet::parse_setting(text).map_err(EngineError::Invalid)?,
        None => courtesy.quiet_hours,
    };
    let override_opt_out = request
        .override_opt_out
        .map(|reason| bounded_text("reason to override the opt-out", reason, limits::MAX_REASON_CHARS))
        .transpose()?;
    let private_context = private_facts(request.private_context)?;
    let mut instance = ConversationRecord::new(objective, contact.to_string(), todos, heartbeat_config);
    instance.private_context = private_context;
    // From the creation's own instant: `--expires-in 3d` is three days after `created_at`.
    instance.budget =
        super::budget::of_request(request.budget.unwrap_or_default(), &settings.budget, instance.created_at)
            .map_err(EngineError::Invalid)?;
    instance.start_at = request.start_at.as_deref().map(|text| start_at(text, zone, &instance)).transpose()?;
    instance.contact_time = Some(ContactTime { time_zone: zone.name().to_string(), zone_source, quiet_hours });
    instance.pending_disclosure = courtesy.disclosure_line();
    instance.opt_out_override = override_opt_out;
    Ok(instance)
}

/// The start time asked for, read in the contact's `zone`: one that would
/// come after the conversation's deadline is refused too.
fn start_at(text: &str, zone: chrono_tz::Tz, instance: &ConversationRecord) -> Result<DateTime<Utc>, EngineError> {
    let at = crate::api::start_at::read(text, zone, instance.created_at).map_err(EngineError::Invalid)?;
    match instance.budget.expires_at.filter(|end| *end <= at) {
        Some(end) => Err(EngineError::Invalid(format!(
            "the conversation would end (its deadline, {}) before it starts ({}): give a later deadline \
             (expires_in, expires_at, or config.json's budget.expires_in) or an earlier start",
            crate::clock::time(end),
            crate::clock::time(at)
        ))),
        None => Ok(at),
    }
}

/// The todos asked for, numbered from 1, each checked.
fn todos(given: Vec<NewTodo>) -> Result<Vec<TodoItem>, EngineError> {
    if given.is_empty() {
        return Err(EngineError::Invalid("give at least one todo".into()));
    }
    if given.len() > limits::MAX_TODOS {
        return Err(EngineError::Invalid(format!("at most {} todos per conversation", limits::MAX_TODOS)));
    }
    let mut todos = Vec::with_capacity(given.len());
    for (n, todo) in given.into_iter().enumerate() {
        let text = bounded_text(&format!("todo {}", n + 1), todo.text, limits::MAX_TODO_CHARS)?;
        if let Some(schema) = &todo.answer_schema {
            schema.check().map_err(|why| EngineError::Invalid(format!("todo {}'s answer_schema: {why}", n + 1)))?;
        }
        todos.push(TodoItem {
            id: (n + 1).to_string(),
            text,
            status: TodoStatus::Pending,
            answer: None,
            answer_message_ids: Vec::new(),
            answer_schema: todo.answer_schema,
            value: None,
            evidence: Vec::new(),
            check: None,
        });
    }
    Ok(todos)
}

/// The follow-ups' interval and number: the defaults under what was asked,
/// within the limits.
fn heartbeat(overrides: Option<HeartbeatOverrides>) -> Result<HeartbeatConfig, EngineError> {
    let overrides = overrides.unwrap_or_default();
    let defaults = HeartbeatConfig::default();
    let heartbeat_config = HeartbeatConfig {
        interval_ms: overrides.interval_ms.unwrap_or(defaults.interval_ms),
        max_followups: overrides.max_followups.unwrap_or(defaults.max_followups),
    };
    let (min, max) = (limits::MIN_HEARTBEAT.as_millis() as u64, limits::MAX_HEARTBEAT.as_millis() as u64);
    if !(min..=max).contains(&heartbeat_config.interval_ms) {
        return Err(EngineError::Invalid(format!(
            "the heartbeat interval must be between {} and {} (got {} ms)",
            crate::duration::format(limits::MIN_HEARTBEAT),
            crate::duration::format(limits::MAX_HEARTBEAT),
            heartbeat_config.interval_ms
        )));
    }
    if heartbeat_config.max_followups > limits::MAX_FOLLOWUPS {
        return Err(EngineError::Invalid(format!("max_followups must be at most {}", limits::MAX_FOLLOWUPS)));
    }
    Ok(heartbeat_config)
}

/// The private facts asked for, each checked.
fn private_facts(facts: Vec<String>) -> Result<Vec<String>, EngineError> {
    if facts.len() > limits::MAX_PRIVATE_FACTS {
        return Err(EngineError::Invalid(format!(
            "at most {} private facts per conversation (got {})",
            limits::MAX_PRIVATE_FACTS,
            facts.len()
        )));
    }
    facts
        .into_iter()
        .enumerate()
        .map(|(n, fact)| bounded_text(&format!("private fact {}", n + 1), fact, limits::MAX_PRIVATE_CHARS))
        .collect()
}

/// Trims `text` and checks it is neither empty nor longer than `max` characters.
pub(crate) fn bounded_text(what: &str, text: String, max: usize) -> Result<String, EngineError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(EngineError::Invalid(format!("the {what} is empty")));
    }
    let chars = trimmed.chars().count();
    if chars > max {
        return Err(EngineError::Invalid(format!("the {what} is too long ({chars} characters; at most {max})")));
    }
    Ok(trimmed.to_string())
}
