//! The live view's sign-in codes, asked for with the API token (`relay ui`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::{ApiResult, App, Body};
use crate::api::*;

/// A one-time sign-in address for the browser live view (what `relay ui`
/// prints): opened in a browser on this machine, it is exchanged for a
/// session cookie (HttpOnly, `SameSite=Strict`) and the page opens, on
/// `conversation` if given. The code works once, for 5 minutes; the
/// page itself is not part of this API (docs/ui.md).
#[utoipa::path(post, path = "/login-codes", tag = "ui", request_body = LoginCodeRequest,
    responses((status = 201, body = LoginCode), (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse)))]
pub(super) async fn create_login_code(
    State(app): State<App>,
    Body(request): Body<LoginCodeRequest>,
) -> ApiResult<(StatusCode, Json<LoginCode>)> {
    let conversation = request.conversation.as_deref().map(|id| app.engine.resolve(id)).transpose()?;
    let code = app.sessions.new_code(conversation);
    let lifetime = chrono::Duration::from_std(crate::daemon::sessions::CODE_LIFETIME).expect("minutes");
    Ok((
        StatusCode::CREATED,
        Json(LoginCode {
            url: format!("{}/ui/login?code={code}", crate::daemon::guard::own_origin(app.port)),
            expires_at: chrono::Utc::now() + lifetime,
            conversation,
        }),
    ))
}
