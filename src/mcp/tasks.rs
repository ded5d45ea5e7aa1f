//! The MCP tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) for
//! clients that declare it: `create_conversation` answers with a task
//! instead of `{id, state}`, and the task *is* the conversation. Its id is
//! the conversation's id, and its status is read from the conversation
//! each time (`tasks/get`), so relay keeps no second record that could
//! disagree with the first:
//!
//! | conversation                              | task             |
//! |-------------------------------------------|------------------|
//! | CREATED, QUEUED, ACTIVE, WAITING_…, PAUSED | `working`        |
//! | NEEDS_HUMAN_INTERVENTION                  | `input_required` |
//! | COMPLETED, ABANDONED                      | `completed`      |
//! | FAILED, cancelled by the operator         | `cancelled`      |
//! | FAILED otherwise                          | `failed`         |
//!
//! While it is `input_required`, the one input request is an elicitation:
//! the agent's question (answered with `tasks/update`, which is
//! `answer_question`), or, when relay's agent handed the conversation over
//! without one, a notice whose decline hands it back (`resume_conversation`).
//! `tasks/cancel` is `cancel_conversation`. Clients without the extension
//! use the plain tools, which say the same.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ErrorCode, InputRequest, InputRequests, InputResponses, JsonObject,
    Task, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};

use crate::api::{AnswerRequest, ApiErrorResponse, ConversationInstance, Outcome, State};
use crate::client::{Client, InstanceId};

/// How often a client should ask about a task: conversations with people
/// move in minutes, not milliseconds.
const POLL_INTERVAL: Duration = Duration::from_secs(15);

/// The seed a tasks-capable client gets from `create_conversation`:
/// `working`, whatever the conversation did in the meantime (a seed carries
/// no payload, so it cannot be `input_required` with its request, nor
/// `completed` with its result); the first `tasks/get` says where it is.
pub(super) fn created(instance: &ConversationInstance) -> CreateTaskResult {
    let mut seed = task(instance).task;
    seed.status = TaskStatus::Working;
    CreateTaskResult::new(seed)
}

/// The conversation as a task: status, and the payload that status carries.
pub(super) fn task(instance: &ConversationInstance) -> DetailedTask {
    let at = |time: chrono::DateTime<chrono::Utc>| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let base =
        Task::new(instance.id.to_string(), TaskStatus::Working, at(instance.created_at), at(instance.updated_at))
            .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64)
            .with_status_message(instance.state.to_string());
    let payload = match instance.state {
        State::NeedsHumanIntervention => {
            let (key, request) = input_request(instance);
            TaskPayload::InputRequired { input_requests: InputRequests::from([(key, request)]) }
        }
        State::Completed | State::Abandoned => TaskPayload::Completed { result: result(instance) },
        State::Failed if instance.outcome == Some(Outcome::Cancelled) => TaskPayload::Cancelled,
        State::Failed => {
            let reason = instance.failure_reason.as_deref().unwrap_or("no reason was recorded");
            let error = json!({
                "code": ErrorCode::INTERNAL_ERROR.0,
                "message": format!("the conversation failed: {reason}"),
                "data": instance,
            });
            TaskPayload::Failed { error: object(error) }
        }
        _ => TaskPayload::Working,
    };
    DetailedTask::new(base, payload)
}

/// `tasks/update`: the client's answer to the outstanding input request.
/// An accepted answer to the agent's question goes to the agent
/// (`answer_question`); a declined request hands the conversation back
/// without an answer (`resume_conversation`); a cancelled one leaves it
/// waiting for you.
pub(super) async fn update(client: &Client, task_id: &str, responses: InputResponses) -> Result<(), ErrorData> {
    let id = InstanceId::parse(task_id).map_err(protocol_error)?;
    let instance = client.get(&id).await.map_err(protocol_error)?;
    if instance.state != State::NeedsHumanIntervention {
        let message = format!("task {task_id} is not waiting for input: the conversation is {}", instance.state);
        return Err(ErrorData::invalid_params(message, None));
    }
    let (outstanding, _) = input_request(&instance);
    let mut responses = responses.into_iter();
    let (key, response) = match (responses.next(), responses.next()) {
        (Some(one), None) => one,
        _ => {
            let message = format!("task {task_id} has one input request, {outstanding:?}: answer that one");
            return Err(ErrorData::invalid_params(message, None));
        }
    };
    if key != outstanding {
        let message = format!("input request {key:?} is not outstanding; the outstanding one is {outstanding:?}");
        return Err(ErrorData::invalid_params(message, None));
    }
    match response["action"].as_str() {
        Some("accept") => {
            let Some(answer) = response["content"]["answer"].as_str() else {
                let message = "an accepted response carries content.answer, the answer as text";
                return Err(ErrorData::invalid_params(message, None));
            };
            let request = AnswerRequest { answer: answer.to_string() };
            client.answer(&id, &request).await.map_err(protocol_error)?;
        }
        Some("decline") => {
            client.resume(&id).await.map_err(protocol_error)?;
        }
        Some("cancel") => {}
        _ => {
            let message = "a response's action is accept, decline or cancel (an elicitation result)";
            return Err(ErrorData::invalid_params(message, None));
        }
    }
    Ok(())
}

/// `tasks/cancel`: the conversation is cancelled for good. A task that has
/// ended cannot be cancelled.
pub(super) async fn cancel(client: &Client, task_id: &str) -> Result<(), ErrorData> {
    let id = InstanceId::parse(task_id).map_err(protocol_error)?;
    let instance = client.get(&id).await.map_err(protocol_error)?;
    if instance.state.is_terminal() {
        let message = format!("task {task_id} has ended: the conversation is {}", instance.state);
        return Err(ErrorData::invalid_params(message, None));
    }
    client.cancel(&id).await.map_err(protocol_error)?;
    Ok(())
}

/// A conversation that needs a human, as one elicitation: its key (unique
/// over the conversation's life) and the request.
fn input_request(instance: &ConversationInstance) -> (String, InputRequest) {
    let (key, message, schema) = match &instance.pending_question {
        Some(question) => {
            let asks = question.question.as_deref().unwrap_or(&question.reason);
            let message = format!("relay's agent asks you (your answer goes to it, never to the contact): {asks}");
            let schema = json!({
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Your answer", "description": asks}},
                "required": ["answer"],
            });
            (question.id.clone(), message, schema)
        }
        None => {
            let why = instance.intervention_reason.as_deref().unwrap_or("it needs a person");
            let message = format!(
                "relay's agent handed this conversation to you: {why}. Write to the contact with send_to_contact, \
                 or decline to hand it back to relay's agent."
            );
            // A new hand-over is a new request: keyed by when it happened.
            let key = format!("handover-{}", instance.updated_at.timestamp_millis());
            (key, message, json!({"type": "object", "properties": {}}))
        }
    };
    let request = json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    });
    (key, serde_json::from_value(request).expect("an elicitation relay builds is one"))
}

/// The completed task's result: what `get_conversation` answers.
fn result(instance: &ConversationInstance) -> JsonObject {
    let result = CallToolResult::structured(serde_json::to_value(instance).expect("conversations serialise"));
    object(serde_json::to_value(result).expect("results serialise"))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => unreachable!("not an object: {other}"),
    }
}

/// The daemon's refusal as a protocol error: the caller's mistake (no such
/// task, a transition the conversation refuses) is invalid params; the
/// rest (no daemon, storage) is an internal error, in the daemon's words.
pub(super) fn protocol_error(error: ApiErrorResponse) -> ErrorData {
    use crate::api::ErrorCode as Code;
    let text = super::error_text(&error);
    match error.code {
        Code::NotFound
        | Code::AmbiguousId
        | Code::InvalidRequest
        | Code::InvalidArguments
        | Code::InvalidTransition
        | Code::Ended => ErrorData::invalid_params(text, None),
        _ => ErrorData::internal_error(text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation(state: State) -> ConversationInstance {
        let mut instance = ConversationInstance::new("x".into(), "+56912345678".into(), Vec::new(), Default::default());
        instance.state = state;
        instance
    }

    #[test]
    fn each_state_is_one_task_status() {
        for state in State::ALL {
            let mut instance = conversation(state);
            let expected = match state {
                State::NeedsHumanIntervention => TaskStatus::InputRequired,
                State::Completed | State::Abandoned => TaskStatus::Completed,
                State::Failed => TaskStatus::Failed,
                _ => TaskStatus::Working,
            };
            assert_eq!(task(&instance).status(), expected, "{state}");
            if state == State::Failed {
                instance.outcome = Some(Outcome::Cancelled);
                assert_eq!(task(&instance).status(), TaskStatus::Cancelled);
            }
        }
    }

    #[test]
    fn a_question_is_an_elicitation_keyed_by_the_question() {
        let mut instance = conversation(State::NeedsHumanIntervention);
        instance.pending_question = Some(crate::api::Question {
            id: "q2".into(),
            reason: "a discount".into(),
            question: Some("May I offer 10% off?".into()),
            asked_at: instance.updated_at,
            answer: None,
            answered_at: None,
        });
        let wire = serde_json::to_value(task(&instance)).unwrap();
        let request = &wire["inputRequests"]["q2"];
        assert_eq!(request["method"], "elicitation/create", "{wire:#}");
        assert!(request["params"]["message"].as_str().unwrap().ends_with("May I offer 10% off?"), "{wire:#}");
        assert_eq!(request["params"]["requestedSchema"]["required"], json!(["answer"]), "{wire:#}");
        assert_eq!(wire["taskId"], instance.id.to_string());
    }
}
