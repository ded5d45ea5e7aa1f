//! Conversations: create, list, read, move (cancel, pause, resume, send,
//! answer) and wait; and the `Idempotency-Key` header that makes a retried
//! create or send safe.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;

use super::{ApiResult, App, Body, Id, invalid};
use crate::api::paging;
use crate::api::*;
use crate::contact::Contact;
use crate::daemon::error::ApiError;
use crate::engine::Idempotent;
use crate::engine::wait::{Until, Waited};

/// Creates a conversation: CREATED, or QUEUED behind the contact's live one.
/// With an `Idempotency-Key`, a retry returns the same conversation (with
/// its state now) and `Idempotent-Replayed: true`, and creates nothing.
#[utoipa::path(post, path = "/instances", tag = "instances", request_body = CreateInstanceRequest,
    params(IdempotencyHeader),
    responses((status = 201, body = CreateInstanceResponse, headers(("Idempotent-Replayed" = String, description = "true when an earlier request with this Idempotency-Key produced this answer; false otherwise"))),
              (status = 400, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse),
              (status = 422, body = ApiErrorResponse), (status = 503, body = ApiErrorResponse),
              (status = 507, body = ApiErrorResponse)))]
pub(super) async fn create_instance(
    State(app): State<App>,
    headers: HeaderMap,
    Body(request): Body<CreateInstanceRequest>,
) -> ApiResult<impl IntoResponse> {
    let created = match idempotency_key(&headers)? {
        Some(key) => app.engine.create_once(key, request).await?,
        None => Idempotent { value: app.engine.create(request).await?, replayed: false },
    };
    Ok((StatusCode::CREATED, replayed(created.replayed), Json(created.value)))
}

/// A page of the conversations, newest first. Where more follow, `Link`
/// gives the next page's address (`rel="next"`) and `Relay-Remaining` how
/// many follow.
#[utoipa::path(get, path = "/instances", tag = "instances", params(ListQuery),
    responses((status = 200, body = Vec<ConversationInstance>, headers(
                  ("Link" = String, description = "`<address of the next page>; rel=\"next\"`, when more follow"),
                  ("Relay-Remaining" = u64, description = "how many conversations follow this page (with the same filters)"))),
              (status = 400, body = ApiErrorResponse)))]
pub(super) async fn list_instances(
    State(app): State<App>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<impl IntoResponse> {
    let Query(query) = query?;
    let states = query.state.as_deref().map(crate::api::State::parse_list).transpose().map_err(invalid)?;
    let contact = query.contact.as_deref().map(Contact::parse).transpose().map_err(|e| invalid(e.to_string()))?;
    let after = query.cursor.as_deref().map(str::parse::<paging::Cursor>).transpose().map_err(invalid)?;
    let limit = paging::limit(query.limit).map_err(invalid)?;
    let page = app.engine.list(&states.unwrap_or_default(), contact.as_ref(), after, limit)?;
    let next = page.next.map(|next| {
        let query = ListQuery { cursor: Some(next.to_string()), limit: Some(limit), ..query };
        format!("/instances?{}", serde_urlencoded::to_string(&query).expect("queries serialise"))
    });
    Ok((paging_headers(next, page.remaining), Json(page.items)))
}

/// One conversation. `id` may be a unique prefix of at least 4 characters.
#[utoipa::path(get, path = "/instances/{id}", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse)))]
pub(super) async fn get_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.get(&id)?))
}

/// The conversation's messages, oldest first, a page at a time.
#[utoipa::path(get, path = "/instances/{id}/transcript", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix"), TranscriptQuery),
    responses((status = 200, body = Vec<TranscriptMessage>, headers(
                  ("Link" = String, description = "`<address of the next page>; rel=\"next\"`, when more follow"),
                  ("Relay-Remaining" = u64, description = "how many messages follow this page"))),
              (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse),
              (status = 500, body = ApiErrorResponse)))]
pub(super) async fn get_transcript(
    State(app): State<App>,
    Id(id): Id,
    query: Result<Query<TranscriptQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<impl IntoResponse> {
    let Query(query) = query?;
    let after = query.cursor.as_deref().map(paging::message_cursor).transpose().map_err(invalid)?;
    let limit = paging::limit(query.limit).map_err(invalid)?;
    let id = app.engine.resolve(&id)?;
    let mut page = app.engine.transcript_page(&id.to_string(), after, limit)?;
    for media in page.items.iter_mut().filter_map(|message| message.media.as_mut()) {
        // Kept relative to the home on disk; absolute for a caller, who may run anywhere.
        if let Some(path) = media.path.as_mut() {
            *path = std::path::Path::new(app.home.as_ref()).join(&*path).to_string_lossy().into_owned();
        }
    }
    let next = page.next.map(|next| {
        let query = TranscriptQuery { cursor: Some(next.to_string()), limit: Some(limit) };
        format!("/instances/{id}/transcript?{}", serde_urlencoded::to_string(&query).expect("queries serialise"))
    });
    Ok((paging_headers(next, page.remaining), Json(page.items)))
}

/// A page's headers: how many follow, and where the next page is.
fn paging_headers(next: Option<String>, remaining: usize) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(paging::REMAINING_HEADER, remaining.into());
    if let Some(address) = next {
        let link = format!("<{address}>; rel=\"next\"");
        headers.insert(header::LINK, link.parse().expect("an encoded query is a header value"));
    }
    headers
}

/// Cancels: FAILED with reason "cancelled"; nothing is sent to the contact.
#[utoipa::path(post, path = "/instances/{id}/cancel", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse), (status = 503, body = ApiErrorResponse),
              (status = 507, body = ApiErrorResponse)))]
pub(super) async fn cancel_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.cancel(&id).await?))
}

/// Pauses: no timers, no agent; `previous_state` records where to resume.
#[utoipa::path(post, path = "/instances/{id}/pause", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse), (status = 503, body = ApiErrorResponse),
              (status = 507, body = ApiErrorResponse)))]
pub(super) async fn pause_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.pause(&id).await?))
}

/// Resumes a PAUSED conversation exactly where it was, or hands a
/// NEEDS_HUMAN_INTERVENTION one back to the agent (ACTIVE).
#[utoipa::path(post, path = "/instances/{id}/resume", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse), (status = 503, body = ApiErrorResponse),
              (status = 507, body = ApiErrorResponse)))]
pub(super) async fn resume_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.resume(&id).await?))
}

/// The operator writes to the contact (`message`), or sends a file staged
/// with `POST /media` (`file`: it becomes the conversation's next
/// attachment); recorded with role "manual". With an
/// `Idempotency-Key`, a retry returns the first message as recorded (sent,
/// or unconfirmed if relay stopped while sending it) and sends nothing.
#[utoipa::path(post, path = "/instances/{id}/send", tag = "instances", request_body = SendMessageRequest,
    params(("id" = String, Path, description = "conversation id, or a unique prefix"), IdempotencyHeader),
    responses((status = 200, body = TranscriptMessage, headers(("Idempotent-Replayed" = String, description = "true when an earlier request with this Idempotency-Key produced this answer; false otherwise"))),
              (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse),
              (status = 422, body = ApiErrorResponse), (status = 502, body = ApiErrorResponse),
              (status = 503, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn send_message(
    State(app): State<App>,
    Id(id): Id,
    headers: HeaderMap,
    Body(request): Body<SendMessageRequest>,
) -> ApiResult<impl IntoResponse> {
    let key = idempotency_key(&headers)?;
    let sent = match (request.message, request.file) {
        (Some(text), None) => match key {
            Some(key) => app.engine.send_once(key, &id, text).await?,
            None => Idempotent { value: app.engine.send(&id, text).await?, replayed: false },
        },
        (None, Some(file)) => match key {
            Some(key) => app.engine.send_file_once(key, &id, file).await?,
            None => Idempotent { value: app.engine.send_file(&id, file).await?, replayed: false },
        },
        (Some(_), Some(_)) => return Err(super::invalid("give `message` or `file`, not both".into())),
        (None, None) => return Err(super::invalid("give `message` (the text to send) or `file`".into())),
    };
    Ok((replayed(sent.replayed), Json(sent.value)))
}

/// Waits (long poll) until the conversation reaches one of the `until`
/// states, or changes at all (`until=change`), at most `timeout_ms`.
/// `reached` says which came first. Costs nothing while it waits. A
/// conversation that has ended (or ends meanwhile) in a state not waited
/// for answers at once, 409 `ended` with its `current_state`: it will never
/// get there. A daemon that stops meanwhile answers 503 `shutting_down`:
/// retry once it is back.
#[utoipa::path(get, path = "/instances/{id}/wait", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix"), WaitQuery),
    responses((status = 200, body = WaitResponse), (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse),
              (status = 503, body = ApiErrorResponse)))]
pub(super) async fn wait_instance(
    State(app): State<App>,
    Id(id): Id,
    query: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<WaitResponse>> {
    let Query(query) = query?;
    let until = match query.until.as_deref() {
        None => Until::settled(),
        Some(text) => Until::parse(text).map_err(invalid)?,
    };
    let timeout_ms = query.timeout_ms.unwrap_or(limits::DEFAULT_WAIT.as_millis() as u64);
    let max_ms = limits::MAX_WAIT.as_millis() as u64;
    if timeout_ms > max_ms {
        return Err(invalid(format!("timeout_ms is at most {max_ms} (an hour); wait again after it")));
    }
    let stop = app.stop.clone().cancelled_owned();
    let waited = app.engine.wait(&id, &until, std::time::Duration::from_millis(timeout_ms), stop).await.map_err(
        |e| match e {
            crate::engine::EngineError::ShuttingDown => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::ShuttingDown,
                "the daemon is stopping; wait again once it is back (`relay start`)".into(),
            ),
            other => other.into(),
        },
    )?;
    match waited {
        Waited::Reached(instance) => Ok(Json(WaitResponse { reached: true, instance })),
        Waited::TimedOut(instance) => Ok(Json(WaitResponse { reached: false, instance })),
        Waited::Ended(instance) => {
            let wanted = match &until {
                Until::Change => "change".to_string(),
                Until::States(states) => {
                    let names: Vec<String> = states.iter().map(ToString::to_string).collect();
                    names.join(" or ")
                }
            };
            let mut error = ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::Ended,
                format!(
                    "conversation {} has ended in {}: it will never {}{wanted}",
                    instance.id,
                    instance.state,
                    if until == Until::Change { "" } else { "be " },
                ),
            );
            error.body.current_state = Some(instance.state);
            Err(error)
        }
    }
}

/// The operator answers the agent's pending question (or the reason it
/// stopped). The answer goes to the agent, never to the contact; the
/// conversation goes on (NEEDS_HUMAN_INTERVENTION -> ACTIVE).
#[utoipa::path(post, path = "/instances/{id}/answer", tag = "instances", request_body = AnswerRequest,
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse),
              (status = 503, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn answer_instance(
    State(app): State<App>,
    Id(id): Id,
    Body(request): Body<AnswerRequest>,
) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.answer(&id, request.answer).await?))
}

/// The `Idempotency-Key` request header.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // read by hand in `idempotency_key`; this only documents it
struct IdempotencyHeader {
    /// Any unique string (a UUID is a good one), at most 255 printable ASCII
    /// characters. A retry with the same key and the same request does
    /// nothing twice; the same key with another request is refused (422).
    #[param(rename = "Idempotency-Key")]
    idempotency_key: Option<String>,
}

fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<&str>> {
    match headers.get("idempotency-key") {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| invalid(crate::api::limits::idempotency_key_rule())),
    }
}

/// `Idempotent-Replayed: true` on an answer an earlier request produced.
fn replayed(replayed: bool) -> [(&'static str, &'static str); 1] {
    [("idempotent-replayed", if replayed { "true" } else { "false" })]
}
