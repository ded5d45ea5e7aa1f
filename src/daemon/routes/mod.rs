//! The REST API: one handler per route, each annotated for the OpenAPI
//! document (`GET /openapi.json`), which is generated from these handlers
//! and the types in `api`, so it cannot drift from the code.
//!
//! One file per resource (`instances`, `events`, `webhooks`, `optouts`, `media`,
//! `status`, the channels'); this one holds what they share: the router, the OpenAPI
//! document's frame, and the extractors whose rejections are API errors.

mod channels;
mod events;
mod instances;
mod media;
mod optouts;
mod status;
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
        (name = "media", description = "Files: given to relay, and read back from conversations"),
        (name = "opt-outs", description = "The do-not-contact list: numbers relay does not write to"),
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
    let (router, openapi) = api();
    let openapi = Arc::new(openapi);
    router
        .route(OPENAPI_PATH, axum::routing::get(move || async move { Json(openapi.as_ref().clone()) }))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(guard::MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(app.clone(), guard::guard))
        .with_state(app)
}

/// The OpenAPI document `GET /openapi.json` serves.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api().1
}

const OPENAPI_PATH: &str = "/openapi.json";

/// The routes, and the document that describes them, from the same
/// annotated handlers; then what no handler's annotation can say: the
/// document's own route, and the refusals of the guard every request
/// passes first.
fn api() -> (Router<App>, utoipa::openapi::OpenApi) {
    let (router, mut openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
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
        .split_for_parts();
    describe_the_document(&mut openapi);
    declare_common_responses(&mut openapi);
    declare_contact_pattern(&mut openapi);
    declare_state_patterns(&mut openapi);
    (router, openapi)
}

/// `GET /openapi.json` is served by hand (it serves the finished document),
/// so no annotation describes it; this does.
fn describe_the_document(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{HttpMethod, OperationBuilder};
    use utoipa::openapi::{ContentBuilder, ObjectBuilder, ResponseBuilder};
    let operation = OperationBuilder::new()
        .tag("daemon")
        .operation_id(Some("openapi"))
        .summary(Some("This document: the API as OpenAPI 3.1"))
        .response(
            "200",
            ResponseBuilder::new()
                .description("The OpenAPI document")
                .content("application/json", ContentBuilder::new().schema(Some(ObjectBuilder::new())).build()),
        )
        .build();
    openapi.paths.add_path_operation(OPENAPI_PATH, vec![HttpMethod::Get], operation);
}

/// Every operation of the document, with its path and method.
fn operations_mut(
    paths: &mut utoipa::openapi::path::Paths,
) -> impl Iterator<Item = (&String, &'static str, &mut utoipa::openapi::path::Operation)> {
    paths.paths.iter_mut().flat_map(|(path, item)| {
        [
            ("post", &mut item.post),
            ("get", &mut item.get),
            ("put", &mut item.put),
            ("delete", &mut item.delete),
            ("patch", &mut item.patch),
            ("head", &mut item.head),
            ("options", &mut item.options),
            ("trace", &mut item.trace),
        ]
        .into_iter()
        .filter_map(move |(method, operation)| operation.as_mut().map(|operation| (path, method, operation)))
    })
}

/// The refusals no handler writes: the server's (503 past
/// `http.max_connections`), the guard's (403 for a foreign Host or
/// any Origin, 401 without the token, 413 for a body over 64 KiB, 415 for a
/// POST body that is not JSON), the extractors' (400 for a malformed
/// body, query or path; 404 for an id nothing has) and the router's (405,
/// with `Allow`, for a method the path does not serve). They are declared here
/// once, by the rule that produces them, so a new route gets them without
/// anyone remembering to; a route that declares a status itself keeps its own.
fn declare_common_responses(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::header::HeaderBuilder;
    use utoipa::openapi::path::{Operation, ParameterIn};
    use utoipa::openapi::{ContentBuilder, ObjectBuilder, Ref, RefOr, ResponseBuilder, Type};

    const COMMON: [(&str, &str, &str); 8] = [
        (
            "400",
            "InvalidRequest",
            "The request is malformed (its Host header included) or breaks a rule (code `invalid_request` or `ambiguous_id`)",
        ),
        ("401", "Unauthorized", "No token, or a wrong one: send 'Authorization: Bearer <token>' (code `unauthorized`)"),
        (
            "403",
            "Forbidden",
            "The Host is not a loopback name, or the request carries an Origin header (code `forbidden`)",
        ),
        ("404", "NotFound", "Nothing has this id, or what the body names is not there (code `not_found`)"),
        (
            "405",
            "MethodNotAllowed",
            "This path does not serve the method; the `Allow` header lists those it does (code `method_not_allowed`)",
        ),
        ("413", "PayloadTooLarge", "The body is over 64 KiB (code `payload_too_large`)"),
        ("415", "UnsupportedMediaType", "The body is not JSON (code `unsupported_media_type`)"),
        (
            "503",
            "ServiceUnavailable",
            "The daemon holds `http.max_connections` connections already (code `too_many_connections`, with \
             `Retry-After`), or is stopping (code `shutting_down`)",
        ),
    ];
    let components = openapi.components.get_or_insert_with(Default::default);
    for (status, name, description) in COMMON {
        let error = ContentBuilder::new().schema(Some(Ref::from_schema_name("ApiErrorResponse"))).build();
        let mut response = ResponseBuilder::new().description(description).content("application/json", error);
        if status == "405" {
            // axum's method router writes it on every 405.
            let allow = HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::String))
                .description(Some("The methods this path serves, comma-separated (`GET,HEAD`)"));
            response = response.header("Allow", allow.build());
        }
        if status == "503" {
            let retry = HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)))
                .description(Some("Seconds to wait before trying again"));
            response = response.header("Retry-After", retry.build());
        }
        components.responses.insert(name.into(), RefOr::T(response.build()));
    }
    // The paths the router answers 405 on: those that do not serve every
    // method (HEAD is served with GET).
    let partial: std::collections::BTreeSet<String> = openapi
        .paths
        .paths
        .iter()
        .filter(|(_, item)| {
            let head = item.head.is_some() || item.get.is_some();
            let others = [&item.get, &item.put, &item.post, &item.delete, &item.options, &item.patch, &item.trace];
            !head || others.iter().any(|operation| operation.is_none())
        })
        .map(|(path, _)| path.clone())
        .collect();
    for (path, method, operation) in operations_mut(&mut openapi.paths) {
        let has_param = |operation: &Operation, place: ParameterIn| {
            operation.parameters.iter().flatten().any(|p| p.parameter_in == place)
        };
        let has_body = operation.request_body.is_some();
        let has_path_param = has_param(operation, ParameterIn::Path);
        // The guard lets only /health through without the token.
        let needs_token = path != "/health";
        let applies = |status: &str| match status {
            // The guard refuses a malformed Host on any route.
            "401" => needs_token,
            "400" | "403" | "413" | "503" => true,
            // An id in the path, or in a body (an upload, a message, the
            // contact's live conversation), may name nothing relay has.
            "404" => has_path_param || has_body,
            "405" => partial.contains(path),
            // The guard refuses any POST body that is not JSON; the
            // body extractor, any other that is not.
            "415" => method == "post" || has_body,
            _ => false,
        };
        for (status, name, _) in COMMON {
            if applies(status) && !operation.responses.responses.contains_key(status) {
                operation.responses.responses.insert(status.into(), RefOr::Ref(Ref::from_response_name(name)));
            }
        }
    }
}

/// The phone numbers requests carry (a body's `contact` or
/// `target_contact`, a `contact` query or path parameter) are read by
/// `Contact::parse`: they carry its pattern (`contact::pattern()`), set
/// here once, as utoipa takes only a literal pattern, and by the rule, so
/// a new request with a contact gets it too.
fn declare_contact_pattern(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    const NAMES: [&str; 2] = ["contact", "target_contact"];
    let pattern = crate::contact::pattern();
    // (A contact of another shape would go without: tests/it/openapi.rs
    // checks that none does.)
    let set = |schema: Option<&mut RefOr<Schema>>| {
        if let Some(RefOr::T(Schema::Object(object))) = schema {
            object.pattern = Some(pattern.clone());
        }
    };
    let mut bodies = std::collections::BTreeSet::new();
    for (_, _, operation) in operations_mut(&mut openapi.paths) {
        for parameter in operation.parameters.iter_mut().flatten().filter(|p| p.name == "contact") {
            set(parameter.schema.as_mut());
        }
        for content in operation.request_body.iter().flat_map(|body| body.content.values()) {
            if let Some(RefOr::Ref(reference)) = &content.schema {
                bodies.insert(reference.ref_location.trim_start_matches("#/components/schemas/").to_string());
            }
        }
    }
    let components = openapi.components.get_or_insert_with(Default::default);
    for name in bodies {
        let Some(RefOr::T(Schema::Object(body))) = components.schemas.get_mut(&name) else { continue };
        for (_, property) in body.properties.iter_mut().filter(|(name, _)| NAMES.contains(&name.as_str())) {
            set(Some(property));
        }
    }
}

/// The parameters that take states carry the pattern of what they take,
/// made from the states themselves (`until` of the wait, `state` of the
/// list): utoipa's attributes take only literals, which would go stale
/// with a new state. A `cursor` takes its pattern from where that list's
/// cursors are written: a transcript's is a message's id.
fn declare_state_patterns(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    for (path, _, operation) in operations_mut(&mut openapi.paths) {
        let transcript = path.ends_with("/transcript");
        for parameter in operation.parameters.iter_mut().flatten() {
            let pattern = match parameter.name.as_str() {
                "until" => crate::engine::wait::Until::pattern(),
                "state" => crate::fsm::State::list_pattern(),
                "cursor" if transcript => crate::api::paging::MESSAGE_CURSOR_PATTERN.to_string(),
                "cursor" => crate::api::paging::CURSOR_PATTERN.to_string(),
                _ => continue,
            };
            if let Some(RefOr::T(Schema::Object(object))) = parameter.schema.as_mut() {
                object.pattern = Some(pattern);
            }
        }
    }
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
