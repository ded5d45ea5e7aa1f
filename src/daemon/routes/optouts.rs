//! The do-not-contact list: list, add, remove.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::{ApiResult, App, Body, Id, invalid};
use crate::api::*;
use crate::contact::Contact;

/// The numbers relay does not write to, by number: each with when it was
/// listed, by whom (`contact` or `operator`), why, and the conversations
/// created anyway with an override.
#[utoipa::path(get, path = "/opt-outs", tag = "opt-outs", responses((status = 200, body = Vec<OptOut>)))]
pub(super) async fn list_opt_outs(State(app): State<App>) -> Json<Vec<OptOut>> {
    Json(app.engine.opt_outs())
}

/// Puts a number on the do-not-contact list, as the operator: its
/// conversations end (`ABANDONED`, `outcome: opted_out`, `ended_by:
/// operator`), queued ones too, and nothing more is sent to it. 201 with
/// the new entry; a number listed already answers 200 with its entry as it
/// was, `added: false` (its conversations end all the same).
#[utoipa::path(post, path = "/opt-outs", tag = "opt-outs", request_body = OptOutRequest,
    responses((status = 201, body = OptOutAdded), (status = 200, body = OptOutAdded),
              (status = 400, body = ApiErrorResponse), (status = 503, body = ApiErrorResponse),
              (status = 507, body = ApiErrorResponse)))]
pub(super) async fn add_opt_out(
    State(app): State<App>,
    Body(request): Body<OptOutRequest>,
) -> ApiResult<(StatusCode, Json<OptOutAdded>)> {
    let contact = Contact::parse(&request.contact).map_err(|e| invalid(e.to_string()))?;
    // The list says whether this request listed the number (one already
    // there keeps its entry), in the same change that lists it.
    let added = app.engine.opt_out(contact.as_str(), request.reason).await?;
    let status = if added.added { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(added)))
}

/// Takes a number off the do-not-contact list: relay may write to it again.
/// Returns the entry removed. The number may be written in any accepted
/// form, URL-encoded (`%2B56912345678`, or `+56912345678`).
#[utoipa::path(delete, path = "/opt-outs/{contact}", tag = "opt-outs",
    params(("contact" = String, Path, description = "the phone number, in international format")),
    responses((status = 200, body = OptOut), (status = 400, body = ApiErrorResponse),
              (status = 404, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn remove_opt_out(State(app): State<App>, Id(contact): Id) -> ApiResult<Json<OptOut>> {
    Ok(Json(app.engine.opt_in(&contact)?))
}
