//! Files: given to relay (`POST /media`, kept until a request uses them)
//! and read back from a conversation.

use axum::Json;
use axum::body::Body as RawBody;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::{ApiResult, App};
use crate::api::*;
use crate::daemon::error::ApiError;
use crate::daemon::guard;
use crate::engine::EngineError;

/// Gives relay a file, as its bytes (`Content-Type: application/octet-stream`,
/// at most `media.max_bytes`). It is kept, owner-only, until a request names
/// its `upload_id` (a sandbox contact's file), and an hour at most.
#[utoipa::path(post, path = "/media", tag = "media",
    request_body(content_type = "application/octet-stream", description = "The file's bytes, at most `media.max_bytes`"),
    responses((status = 201, body = UploadResponse), (status = 413, body = ApiErrorResponse),
              (status = 415, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn upload_media(State(app): State<App>, body: RawBody) -> ApiResult<impl IntoResponse> {
    let max = app.engine.media_max_bytes();
    // Read no more than the cap, whatever Content-Length said (or did not).
    let limit = usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1);
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| guard::file_too_large(max))?;
    if bytes.len() as u64 > max {
        return Err(guard::file_too_large(max));
    }
    if bytes.is_empty() {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, "the file is empty".into()));
    }
    let staged = app.engine.stage_upload(&bytes).map_err(EngineError::Store)?;
    Ok((StatusCode::CREATED, Json(staged)))
}

/// The file of one of a conversation's messages (a contact's photo, voice
/// note or document), as its bytes, with the type relay found in them.
#[utoipa::path(get, path = "/instances/{id}/messages/{message_id}/media", tag = "media",
    params(("id" = String, Path, description = "conversation id, or a unique prefix"),
           ("message_id" = String, Path, description = "the message: its file's reference (m1, as the transcript shows), its id, or a unique start of its id (4 characters or more)")),
    responses((status = 200, content_type = "*/*",
               description = "The file's bytes, with the type relay found in them as Content-Type (`image/png`, `audio/ogg`, \
                              `application/pdf`, ...; `application/octet-stream` when it found none)"),
              (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse)))]
pub(super) async fn get_media(
    State(app): State<App>,
    axum::extract::Path((id, message_id)): axum::extract::Path<(String, String)>,
) -> ApiResult<impl IntoResponse> {
    let (media, bytes) = app.engine.media_file(&id, &message_id)?;
    let mime = media.mime.unwrap_or_else(|| "application/octet-stream".into());
    // relay's own name for it: the contact's never reaches a header.
    let name = media.path.as_deref().and_then(|p| p.rsplit('/').next()).unwrap_or("file").to_string();
    // Never a page of the daemon's origin, whatever a browser makes of it:
    // downloaded, and sandboxed should it be opened.
    let headers = [
        (axum::http::header::CONTENT_TYPE, mime),
        (axum::http::header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        (axum::http::header::CONTENT_SECURITY_POLICY, "default-src 'none'; sandbox".to_string()),
    ];
    Ok((headers, bytes))
}
