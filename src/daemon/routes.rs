//! The REST API: one handler per route, each annotated for the OpenAPI
//! document (`GET /openapi.json`), which is generated from these handlers
//! and the types in `api`, so it cannot drift from the code.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::{Json, Router, middleware};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::ApiError;
use super::guard;
use crate::api::*;
use crate::channel::{Delivery, SandboxChannel};
use crate::contact::Contact;
use crate::engine::wait::{Until, Waited};
use crate::engine::{Engine, Idempotent};

/// What every handler can reach.
#[derive(Clone)]
pub struct App {
    pub engine: Engine,
    pub token: Arc<str>,
    pub started: Instant,
    pub port: u16,
    pub home: Arc<str>,
    /// Cancelled when the daemon stops (signals, `POST /shutdown`): the
    /// server takes no more requests, and waits and streams end.
    pub stop: CancellationToken,
    pub webhooks: Arc<crate::webhooks::Webhooks>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "relay",
        description = "The local API of the relay daemon. Every route but /health needs \
                       'Authorization: Bearer <token>' (the token is in <RELAY_HOME>/api-token). \
                       Requests must be addressed to a loopback host and carry no Origin header.",
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags(
        (name = "instances", description = "Conversations"),
        (name = "events", description = "Every change, as a numbered event stream"),
        (name = "webhooks", description = "Events POSTed to your URLs, signed"),
        (name = "daemon", description = "The daemon itself"),
        (name = "sandbox", description = "The sandbox channel: simulated contacts, for trying relay and for tests"),
        (name = "whatsapp", description = "The WhatsApp channel: linking a device"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    }
}

pub fn router(app: App) -> Router {
    let (router, openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(health))
        .routes(routes!(status))
        .routes(routes!(shutdown))
        .routes(routes!(create_instance, list_instances))
        .routes(routes!(get_instance))
        .routes(routes!(get_transcript))
        .routes(routes!(cancel_instance))
        .routes(routes!(pause_instance))
        .routes(routes!(resume_instance))
        .routes(routes!(send_message))
        .routes(routes!(wait_instance))
        .routes(routes!(answer_instance))
        .routes(routes!(events))
        .routes(routes!(add_webhook, list_webhooks))
        .routes(routes!(remove_webhook))
        .routes(routes!(sandbox_say))
        .routes(routes!(sandbox_outbox))
        .routes(routes!(sandbox_phone))
        .routes(routes!(whatsapp_pair))
        .split_for_parts();
    let openapi = Arc::new(openapi);
    router
        .route("/openapi.json", axum::routing::get(move || async move { Json(openapi.as_ref().clone()) }))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(guard::MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(app.clone(), guard::guard))
        .with_state(app)
}

/// A JSON body whose rejections are `ApiErrorResponse`s (415, 413, 400).
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let Json(value) = Json::<T>::from_request(request, state).await?;
        Ok(Body(value))
    }
}

type ApiResult<T> = Result<T, ApiError>;

/// The `{id}` of a route, whose rejections (an id that is not UTF-8) are
/// `ApiErrorResponse`s like every other error.
pub struct Id(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, ApiError> {
        let Path(id) = Path::<String>::from_request_parts(parts, state).await?;
        Ok(Id(id))
    }
}

/// Liveness, without a token.
#[utoipa::path(get, path = "/health", tag = "daemon", security(()),
    responses((status = 200, body = HealthResponse)))]
async fn health() -> Json<HealthResponse> {
    Json(HealthResponse { status: "ok".into(), pid: std::process::id(), version: env!("CARGO_PKG_VERSION").into() })
}

/// The daemon, its channel and its conversations at a glance.
#[utoipa::path(get, path = "/status", tag = "daemon",
    responses((status = 200, body = DaemonStatusResponse), (status = 401, body = ApiErrorResponse)))]
async fn status(State(app): State<App>) -> Json<DaemonStatusResponse> {
    let (active, total) = app.engine.counts();
    let channel = app.engine.channel().status();
    Json(DaemonStatusResponse {
        pid: std::process::id(),
        uptime_seconds: app.started.elapsed().as_secs(),
        whatsapp_connected: channel.kind == "whatsapp" && channel.connected,
        active_instance_count: active,
        total_instance_count: total,
        unrouted_message_count: app.engine.unrouted_count(),
        waiting_requests: app.engine.waiting(),
        last_event_seq: app.engine.last_event_seq(),
        failing_webhooks: app.webhooks.failing(),
        channel,
        model: app.engine.agent().model(),
        model_error: app.engine.agent().last_error(),
        port: app.port,
        home: app.home.to_string(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

/// Stops the daemon gracefully (what `relay stop` calls).
#[utoipa::path(post, path = "/shutdown", tag = "daemon",
    responses((status = 202, body = ShutdownResponse)))]
async fn shutdown(State(app): State<App>) -> (StatusCode, Json<ShutdownResponse>) {
    app.stop.cancel();
    (StatusCode::ACCEPTED, Json(ShutdownResponse { pid: std::process::id() }))
}

/// Creates a conversation: CREATED, or QUEUED behind the contact's live one.
/// With an `Idempotency-Key`, a retry returns the same conversation (with
/// its state now) and `Idempotent-Replayed: true`, and creates nothing.
#[utoipa::path(post, path = "/instances", tag = "instances", request_body = CreateInstanceRequest,
    params(IdempotencyHeader),
    responses((status = 201, body = CreateInstanceResponse), (status = 400, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse), (status = 422, body = ApiErrorResponse),
              (status = 507, body = ApiErrorResponse)))]
async fn create_instance(
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

/// Every conversation, oldest first.
#[utoipa::path(get, path = "/instances", tag = "instances", params(ListQuery),
    responses((status = 200, body = Vec<ConversationInstance>), (status = 400, body = ApiErrorResponse)))]
async fn list_instances(
    State(app): State<App>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<Vec<ConversationInstance>>> {
    let Query(query) = query?;
    let state = query.state.as_deref().map(str::parse::<crate::api::State>).transpose().map_err(invalid)?;
    let contact = query.contact.as_deref().map(Contact::parse).transpose().map_err(|e| invalid(e.to_string()))?;
    Ok(Json(app.engine.list(state, contact.as_ref())))
}

/// One conversation. `id` may be a unique prefix of at least 4 characters.
#[utoipa::path(get, path = "/instances/{id}", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse)))]
async fn get_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.get(&id)?))
}

/// The conversation's messages, oldest first.
#[utoipa::path(get, path = "/instances/{id}/transcript", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = Vec<TranscriptMessage>), (status = 404, body = ApiErrorResponse)))]
async fn get_transcript(State(app): State<App>, Id(id): Id) -> ApiResult<Json<Vec<TranscriptMessage>>> {
    Ok(Json(app.engine.transcript(&id)?))
}

/// Cancels: FAILED with reason "cancelled"; nothing is sent to the contact.
#[utoipa::path(post, path = "/instances/{id}/cancel", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse)))]
async fn cancel_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.cancel(&id).await?))
}

/// Pauses: no timers, no agent; `previous_state` records where to resume.
#[utoipa::path(post, path = "/instances/{id}/pause", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse)))]
async fn pause_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.pause(&id).await?))
}

/// Resumes a PAUSED conversation exactly where it was, or hands a
/// NEEDS_HUMAN_INTERVENTION one back to the agent (ACTIVE).
#[utoipa::path(post, path = "/instances/{id}/resume", tag = "instances",
    params(("id" = String, Path, description = "conversation id, or a unique prefix")),
    responses((status = 200, body = ConversationInstance), (status = 404, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse)))]
async fn resume_instance(State(app): State<App>, Id(id): Id) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.resume(&id).await?))
}

/// The operator writes to the contact; recorded with role "manual". With an
/// `Idempotency-Key`, a retry returns the first message as recorded (sent,
/// or unconfirmed if relay stopped while sending it) and sends nothing.
#[utoipa::path(post, path = "/instances/{id}/send", tag = "instances", request_body = SendMessageRequest,
    params(("id" = String, Path, description = "conversation id, or a unique prefix"), IdempotencyHeader),
    responses((status = 200, body = TranscriptMessage), (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse),
              (status = 422, body = ApiErrorResponse), (status = 502, body = ApiErrorResponse),
              (status = 503, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
async fn send_message(
    State(app): State<App>,
    Id(id): Id,
    headers: HeaderMap,
    Body(request): Body<SendMessageRequest>,
) -> ApiResult<impl IntoResponse> {
    let sent = match idempotency_key(&headers)? {
        Some(key) => app.engine.send_once(key, &id, request.message).await?,
        None => Idempotent { value: app.engine.send(&id, request.message).await?, replayed: false },
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
async fn wait_instance(
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
              (status = 507, body = ApiErrorResponse)))]
async fn answer_instance(
    State(app): State<App>,
    Id(id): Id,
    Body(request): Body<AnswerRequest>,
) -> ApiResult<Json<ConversationInstance>> {
    Ok(Json(app.engine.answer(&id, request.answer).await?))
}

/// The event log after `after` (or the `Last-Event-ID` header), as
/// Server-Sent Events (`id:` is the sequence number, `event:` the type), or
/// as NDJSON with `Accept: application/x-ndjson`. Without `follow=true` the
/// stream ends after the stored events.
#[utoipa::path(get, path = "/events", tag = "events", params(EventsQuery),
    responses((status = 200, content_type = "text/event-stream", body = ConversationEvent),
              (status = 200, content_type = "application/x-ndjson", body = ConversationEvent),
              (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse)))]
async fn events(
    State(app): State<App>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<axum::response::Response> {
    use futures_util::StreamExt;
    let Query(query) = query?;
    let ndjson = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/x-ndjson"));
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| invalid("Last-Event-ID must be an event's sequence number".into()))?,
        ),
    };
    let after = query.after.or(last_event_id).unwrap_or(0);
    let instance = query.instance.as_deref().map(|id| app.engine.resolve(id)).transpose()?;
    let events = app.engine.events(after, instance, query.follow.unwrap_or(false)).boxed();
    // The stream ends when the daemon stops, so it cannot hold up shutdown.
    // Server-Sent Events get a comment every 15 s, so idle proxies and
    // clients can tell a quiet stream from a dead one.
    let stopping = app.stop.clone();
    let keep_alive = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    let chunks = futures_util::stream::unfold(
        (events, stopping, keep_alive),
        move |(mut events, stopping, mut keep_alive)| async move {
            let chunk = loop {
                tokio::select! {
                    biased;
                    _ = stopping.cancelled() => return None,
                    event = events.next() => match event? {
                        Ok(event) => break format_event(&event, ndjson),
                        Err(error) => {
                            tracing::error!(%error, "cannot read the event log");
                            return None;
                        }
                    },
                    _ = keep_alive.tick() => if !ndjson { break b": keep-alive\n\n".to_vec() },
                }
            };
            Some((Ok::<_, std::convert::Infallible>(chunk), (events, stopping, keep_alive)))
        },
    );
    let content_type = if ndjson { "application/x-ndjson" } else { "text/event-stream" };
    Ok((
        [(axum::http::header::CONTENT_TYPE, content_type), (axum::http::header::CACHE_CONTROL, "no-cache")],
        axum::body::Body::from_stream(chunks),
    )
        .into_response())
}

const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

fn format_event(event: &ConversationEvent, ndjson: bool) -> Vec<u8> {
    let json = serde_json::to_string(event).expect("events serialise");
    if ndjson {
        format!("{json}\n").into_bytes()
    } else {
        format!("id: {}\nevent: {}\ndata: {json}\n\n", event.seq, event.data.kind()).into_bytes()
    }
}

/// Registers a webhook: from now on each event is POSTed to `url`, signed
/// (`Relay-Signature: sha256=<hex HMAC-SHA256 of the body>`), in order,
/// retried until taken. The answer (201) holds the secret; it is not shown
/// again. A URL registered already for the same events answers 200 with
/// that webhook, `created: false` and no secret (so adding at every start
/// is safe); for other events, 400.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body = WebhookRequest,
    responses((status = 201, body = WebhookCreated), (status = 200, body = WebhookCreated),
              (status = 400, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
async fn add_webhook(
    State(app): State<App>,
    Body(request): Body<WebhookRequest>,
) -> ApiResult<(StatusCode, Json<WebhookCreated>)> {
    let added = app.webhooks.add(request)?;
    let status = if added.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(added)))
}

/// The webhooks, how far each has got and how its deliveries go.
#[utoipa::path(get, path = "/webhooks", tag = "webhooks", responses((status = 200, body = Vec<Webhook>)))]
async fn list_webhooks(State(app): State<App>) -> Json<Vec<Webhook>> {
    Json(app.webhooks.list())
}

/// Removes a webhook; nothing more is delivered to it.
#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "the webhook's id (wh_...), or a unique prefix of at least 4 hex digits")),
    responses((status = 200, body = Webhook), (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse)))]
async fn remove_webhook(State(app): State<App>, Id(id): Id) -> ApiResult<Json<Webhook>> {
    Ok(Json(app.webhooks.remove(&id)?))
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

/// Sandbox only: a simulated contact writes to relay.
#[utoipa::path(post, path = "/sandbox/messages", tag = "sandbox", request_body = SandboxSayRequest,
    responses((status = 200, body = SandboxSayResponse), (status = 409, body = ApiErrorResponse)))]
async fn sandbox_say(
    State(app): State<App>,
    Body(request): Body<SandboxSayRequest>,
) -> ApiResult<Json<SandboxSayResponse>> {
    let sandbox = sandbox(&app)?;
    let contact = Contact::parse(&request.contact).map_err(|e| invalid(e.to_string()))?;
    let text = crate::engine::bounded_text("message", request.text, crate::api::limits::MAX_MESSAGE_CHARS)?;
    let instance_id = match sandbox.say(contact.clone(), text).await {
        Delivery::Delivered(id) => Some(id),
        Delivery::NoConversation => None,
        Delivery::NotRecorded(error) => {
            return Err(ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                ErrorCode::StorageUnavailable,
                format!("the message could not be recorded: {error}"),
            ));
        }
    };
    Ok(Json(SandboxSayResponse { instance_id, contact: contact.to_string() }))
}

/// Sandbox only: what relay sent to contacts, oldest first.
#[utoipa::path(get, path = "/sandbox/outbox", tag = "sandbox", params(OutboxQuery),
    responses((status = 200, body = Vec<OutboxEntry>), (status = 409, body = ApiErrorResponse)))]
async fn sandbox_outbox(
    State(app): State<App>,
    query: Result<Query<OutboxQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<Vec<OutboxEntry>>> {
    let Query(query) = query?;
    let contact = query.contact.as_deref().map(Contact::parse).transpose().map_err(|e| invalid(e.to_string()))?;
    Ok(Json(sandbox(&app)?.outbox(contact.as_ref())))
}

/// Sandbox only: a simulated phone goes offline, comes back online, or its
/// contact reads what it holds; its receipts reach relay before the answer.
#[utoipa::path(post, path = "/sandbox/phone", tag = "sandbox", request_body = PhoneRequest,
    responses((status = 200, body = PhoneResponse), (status = 409, body = ApiErrorResponse)))]
async fn sandbox_phone(State(app): State<App>, Body(request): Body<PhoneRequest>) -> ApiResult<Json<PhoneResponse>> {
    let sandbox = sandbox(&app)?;
    let contact = Contact::parse(&request.contact).map_err(|e| invalid(e.to_string()))?;
    Ok(Json(sandbox.phone(&contact, request.action).await.map_err(crate::engine::EngineError::Store)?))
}

/// Links WhatsApp: streams the pairing as it happens, one JSON
/// `PairingEvent` per line (QR codes as WhatsApp rotates them, or a phone
/// pairing code), ending with `linked`, `already_linked` or `failed`.
#[utoipa::path(post, path = "/whatsapp/pair", tag = "whatsapp", request_body = PairRequest,
    responses((status = 200, content_type = "application/x-ndjson", body = PairingEvent),
              (status = 400, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse)))]
async fn whatsapp_pair(
    State(app): State<App>,
    Body(request): Body<PairRequest>,
) -> ApiResult<axum::response::Response> {
    let phone = request.phone.as_deref().map(Contact::parse).transpose().map_err(|e| invalid(e.to_string()))?;
    let whatsapp = app.engine.channel().as_whatsapp().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::NotWhatsapp,
            format!(
                "linking needs the whatsapp channel; this daemon runs the {} channel (`relay init --channel whatsapp`, then restart it)",
                app.engine.channel().status().kind
            ),
        )
    })?;
    let events = whatsapp.pair(phone.map(|p| p.to_string()), request.force);
    // The stream ends when the daemon stops, so it cannot hold up shutdown.
    let stopping = app.stop.clone();
    let lines = futures_util::stream::unfold((events, stopping), |(mut events, stopping)| async move {
        let event = tokio::select! {
            biased; // a closed receiver ends the stream before `stopping` fires again
            event = events.recv() => event?,
            _ = stopping.cancelled() => PairingEvent::Failed { reason: "the daemon is stopping".into() },
        };
        if stopping.is_cancelled() {
            // After telling why, end: an empty receiver ends the next poll.
            events.close();
        }
        let mut line = serde_json::to_vec(&event).expect("pairing events serialise");
        line.push(b'\n');
        Some((Ok::<_, std::convert::Infallible>(line), (events, stopping)))
    });
    Ok(([(axum::http::header::CONTENT_TYPE, "application/x-ndjson")], axum::body::Body::from_stream(lines))
        .into_response())
}

fn sandbox(app: &App) -> ApiResult<&SandboxChannel> {
    app.engine.channel().as_sandbox().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::NotSandbox,
            format!(
                "the sandbox commands need the sandbox channel; this daemon runs the {} channel",
                app.engine.channel().status().kind
            ),
        )
    })
}

fn invalid(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message)
}

async fn not_found(request: Request) -> impl IntoResponse {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::NotFound,
        format!("no route {} {}", request.method(), request.uri().path()),
    )
}

async fn method_not_allowed(request: Request) -> impl IntoResponse {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::MethodNotAllowed,
        format!("{} is not allowed on {}", request.method(), request.uri().path()),
    )
}
