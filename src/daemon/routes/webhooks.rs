//! Webhooks: register, list, remove.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::{ApiResult, App, Body, Id};
use crate::api::*;

/// Registers a webhook: from now on each event is POSTed to `url`, signed
/// (`Relay-Signature: sha256=<hex HMAC-SHA256 of the body>`), in order,
/// retried until taken. The answer (201) holds the secret; it is not shown
/// again. A URL registered already for the same events answers 200 with
/// that webhook, `created: false` and no secret (so adding at every start
/// is safe); for other events, 400.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body = WebhookRequest,
    responses((status = 201, body = WebhookCreated), (status = 200, body = WebhookCreated),
              (status = 400, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn add_webhook(
    State(app): State<App>,
    Body(request): Body<WebhookRequest>,
) -> ApiResult<(StatusCode, Json<WebhookCreated>)> {
    let added = app.webhooks.add(request)?;
    let status = if added.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(added)))
}

/// The webhooks, how far each has got and how its deliveries go.
#[utoipa::path(get, path = "/webhooks", tag = "webhooks", responses((status = 200, body = Vec<Webhook>)))]
pub(super) async fn list_webhooks(State(app): State<App>) -> Json<Vec<Webhook>> {
    Json(app.webhooks.list())
}

/// Removes a webhook; nothing more is delivered to it.
#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "the webhook's id (wh_...), or a unique prefix of at least 4 hex digits")),
    responses((status = 200, body = Webhook), (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse)))]
pub(super) async fn remove_webhook(State(app): State<App>, Id(id): Id) -> ApiResult<Json<Webhook>> {
    Ok(Json(app.webhooks.remove(&id)?))
}
