//! The event log as a stream: Server-Sent Events or NDJSON.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;

use super::{ApiResult, App, invalid};
use crate::api::*;

/// The event log after `after` (or the `Last-Event-ID` header), as
/// Server-Sent Events (`id:` is the sequence number, `event:` the type), or
/// as NDJSON with `Accept: application/x-ndjson`. Without `follow=true` the
/// stream ends after the stored events.
#[utoipa::path(get, path = "/events", tag = "events",
    params(EventsQuery,
           ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "As `after` (which wins when both are given): \
                                                                   the `id:` of the last event a reconnecting stream saw")),
    responses((status = 200, description = "The events, one per `data:` line of a server-sent event stream by default, \
                                        or one per line with `Accept: application/x-ndjson`",
               content((ConversationEvent = "text/event-stream"), (ConversationEvent = "application/x-ndjson"))),
              (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse),
              (status = 410, description = "Events after `after` are no longer kept (`events.keep`): `oldest_seq` is the oldest that is", body = ApiErrorResponse)))]
pub(super) async fn events(
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
    let events = app.engine.events(after, instance, query.follow.unwrap_or(false))?.boxed();
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
