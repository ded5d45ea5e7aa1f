//! The REST API: one handler per route, each annotated for the OpenAPI
//! document (`GET /openapi.json`), which is generated from these handlers
//! and the types in `api`, so it cannot drift from the code.
//!
//! One file per resource (`instances`, `events`, `webhooks`, `optouts`, `media`,
//! `status`, the channels'); `document` finishes the OpenAPI document by rule;
//! this one holds what they share: the router, the OpenAPI document's frame,
//! and the extractors whose rejections are API errors.

mod channels;
mod document;
mod events;
mod instances;
mod media;
mod optouts;
mod request_schemas;
mod status;
mod ui;
mod webhooks;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{FromRequest, Path, Request};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Json, Router, middleware};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use channels::*;
use events::*;
use instances::*;
use media::*;
use optouts::*;
use status::*;
use ui::*;
use webhooks::*;

use super::error::ApiError;
use super::guard;
use crate::api::*;
use crate::channel::SandboxChannel;
use crate::engine::Engine;

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
    /// The live view's sign-in codes and sessions.
    pub sessions: Arc<super::sessions::Sessions>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "relay",
        description = "The local API of the relay daemon. Every route but /health needs \
                       'Authorization: Bearer <token>' (the token is in <RELAY_HOME>/api-token). \
                       Requests must be addressed to a loopback host and carry no Origin header but the \
                       daemon's own (http://127.0.0.1:<port>). The browser live view (`relay ui`) uses a \
                       session cookie instead of the token, from its own page only.",
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags(
        (name = "instances", description = "Conversations"),
        (name = "events", description = "Every change, as a numbered event stream"),
        (name = "webhooks", description = "Events POSTed to your URLs, signed"),
        (name = "media", description = "Files: given to relay, and read back from conversations"),
        (name = "opt-outs", description = "The do-not-contact list: numbers relay does not write to"),
        (name = "daemon", description = "The daemon itself"),
        (name = "sandbox", description = "The sandbox channel: simulated contacts, for trying relay and for tests"),
        (name = "whatsapp", description = "The WhatsApp channel: linking a device"),
        (name = "ui", description = "The browser live view's sign-in (the page itself, under /ui/, is a client of this API, not part of it)"),
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
    let (router, openapi) = api();
    let openapi = Arc::new(openapi);
    router
        .route(OPENAPI_PATH, axum::routing::get(move || async move { Json(openapi.as_ref().clone()) }))
        // The live view's page: outside the document on purpose (docs/ui.md).
        .merge(super::ui::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(guard::MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(app.clone(), guard::guard))
        .with_state(app)
}

/// The OpenAPI document `GET /openapi.json` serves.
pub fn openapi() -> serde_json::Value {
    api().1
}

const OPENAPI_PATH: &str = "/openapi.json";

/// The routes, and the document that describes them, from the same
/// annotated handlers; then what no handler's annotation can say: the
/// document's own route, and the refusals of the guard every request
/// passes first.
fn api() -> (Router<App>, serde_json::Value) {
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
        .routes(routes!(add_opt_out, list_opt_outs))
        .routes(routes!(remove_opt_out))
        .routes(routes!(upload_media))
        .routes(routes!(get_media))
        .routes(routes!(sandbox_say))
        .routes(routes!(sandbox_act))
        .routes(routes!(sandbox_link))
        .routes(routes!(sandbox_outbox))
        .routes(routes!(sandbox_phone))
        .routes(routes!(sandbox_lock, sandbox_unlock))
        .routes(routes!(whatsapp_pair))
        .routes(routes!(create_login_code))
        .split_for_parts();
    (router, document::finish(openapi))
}

/// A JSON body whose rejections are `ApiErrorResponse`s (415, 413, 400).
/// A whole number written with a fraction (`3.0`) is the integer JSON
/// Schema says it is, for every field.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let Json(mut value) = Json::<serde_json::Value>::from_request(request, state).await?;
        whole_numbers_as_integers(&mut value);
        serde_path_to_error::deserialize(value)
            .map(Body)
            .map_err(|e| invalid(format!("invalid JSON body: {} (at {})", e.inner(), e.path())))
    }
}

/// Rewrites each number with a zero fraction that fits an integer as that integer.
fn whole_numbers_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(number) if number.is_f64() => {
            let float = number.as_f64().unwrap_or(f64::NAN);
            if float.fract() == 0.0 && float.abs() < 9_007_199_254_740_992.0 {
                *number = (float as i64).into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

type ApiResult<T> = Result<T, ApiError>;

/// The one path parameter of a route (a conversation's or a webhook's
/// `{id}`, an opt-out's `{contact}`), whose rejections (one that is not
/// UTF-8) are `ApiErrorResponse`s like every other error.
pub struct Id(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, ApiError> {
        let Path(id) = Path::<String>::from_request_parts(parts, state).await?;
        Ok(Id(id))
    }
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
