//! The daemon itself: liveness, status and stopping.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::App;
use crate::api::*;

/// Liveness, without a token.
#[utoipa::path(get, path = "/health", tag = "daemon", security(()),
    responses((status = 200, body = HealthResponse)))]
pub(super) async fn health() -> Json<HealthResponse> {
    Json(HealthResponse { status: "ok".into(), pid: std::process::id(), version: env!("CARGO_PKG_VERSION").into() })
}

/// The daemon, its channel and its conversations at a glance.
#[utoipa::path(get, path = "/status", tag = "daemon",
    responses((status = 200, body = DaemonStatusResponse), (status = 401, body = ApiErrorResponse)))]
pub(super) async fn status(State(app): State<App>) -> Json<DaemonStatusResponse> {
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
        first_contact: app.engine.first_contact_status(),
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
pub(super) async fn shutdown(State(app): State<App>) -> (StatusCode, Json<ShutdownResponse>) {
    app.stop.cancel();
    (StatusCode::ACCEPTED, Json(ShutdownResponse { pid: std::process::id() }))
}
