//! The channels' own routes: the sandbox's simulated contacts and phones,
//! and linking WhatsApp.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::{ApiResult, App, Body, invalid, sandbox};
use crate::api::*;
use crate::channel::{InboundAct, InboundMessage, InboundOutcome};
use crate::contact::Contact;
use crate::daemon::error::ApiError;

/// Sandbox only: a simulated contact writes to relay.
#[utoipa::path(post, path = "/sandbox/messages", tag = "sandbox", request_body = SandboxSayRequest,
    responses((status = 200, body = SandboxSayResponse), (status = 400, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn sandbox_say(
    State(app): State<App>,
    Body(request): Body<SandboxSayRequest>,
) -> ApiResult<Json<SandboxSayResponse>> {
    let sandbox = sandbox(&app)?;
    let contact = Contact::parse(&request.contact).map_err(|e| invalid(e.to_string()))?;
    let message = match request.media {
        None => {
            let text = crate::engine::bounded_text("message", request.text, crate::api::limits::MAX_MESSAGE_CHARS)?;
            InboundMessage::new(contact.clone(), text)
        }
        Some(media) => {
            let caption = request.text.trim();
            if caption.chars().count() > crate::media::label::MAX_CAPTION_CHARS {
                let max = crate::media::label::MAX_CAPTION_CHARS;
                return Err(invalid(format!("a caption is at most {max} characters")));
            }
            let bytes = app.engine.take_upload(media.upload_id).map_err(crate::engine::EngineError::Store)?;
            let bytes = bytes.ok_or_else(|| crate::engine::attachments::no_upload(media.upload_id))?;
            let caption = (!caption.is_empty()).then(|| caption.to_string());
            InboundMessage::with_media(contact.clone(), crate::channel::sandbox::file_from_phone(media, bytes, caption))
        }
    };
    let reply_to = request.reply_to.as_deref().map(|m| chat_message(&app, &contact, m, false)).transpose()?;
    let act = reply_to.map(|to| InboundAct::Reply { to });
    let message = InboundMessage { by_operator: request.from_operator, act, ..message };
    if sandbox.is_offline() {
        return held(sandbox, message, &contact);
    }
    let delivered = sandbox.deliver(message).await;
    said(delivered, &contact)
}

/// relay is offline: WhatsApp holds the message until it comes back.
fn held(
    sandbox: &crate::channel::SandboxChannel,
    message: InboundMessage,
    contact: &Contact,
) -> ApiResult<Json<SandboxSayResponse>> {
    sandbox.hold(message);
    Ok(Json(SandboxSayResponse { instance_id: None, contact: contact.to_string(), held: true }))
}

/// Sandbox only: relay's own (simulated) link to WhatsApp goes away, or
/// comes back with a catch-up of what contacts wrote meanwhile.
#[utoipa::path(post, path = "/sandbox/link", tag = "sandbox", request_body = SandboxLinkRequest,
    responses((status = 200, body = SandboxLinkResponse), (status = 400, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse)))]
pub(super) async fn sandbox_link(
    State(app): State<App>,
    Body(request): Body<SandboxLinkRequest>,
) -> ApiResult<Json<SandboxLinkResponse>> {
    let sandbox = sandbox(&app)?;
    if !request.online && request.cut_short {
        return Err(invalid("cut_short is for coming back online".into()));
    }
    Ok(Json(match request.online {
        true => sandbox.go_online(request.cut_short).await,
        false => sandbox.go_offline(),
    }))
}

/// What the contact's message came to, as the sandbox answers it.
fn said(delivered: InboundOutcome, contact: &Contact) -> ApiResult<Json<SandboxSayResponse>> {
    let instance_id = match delivered {
        InboundOutcome::Delivered(id) => Some(id),
        InboundOutcome::NoConversation => None,
        InboundOutcome::NotRecorded(error) => {
            return Err(ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                ErrorCode::StorageUnavailable,
                format!("the message could not be recorded: {error}"),
            ));
        }
    };
    Ok(Json(SandboxSayResponse { instance_id, contact: contact.to_string(), held: false }))
}

/// Sandbox only: a simulated contact reacts to, edits or deletes a message
/// of their live conversation, or calls.
#[utoipa::path(post, path = "/sandbox/acts", tag = "sandbox", request_body = SandboxActRequest,
    responses((status = 200, body = SandboxSayResponse), (status = 400, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn sandbox_act(
    State(app): State<App>,
    Body(request): Body<SandboxActRequest>,
) -> ApiResult<Json<SandboxSayResponse>> {
    let sandbox = sandbox(&app)?;
    let contact = Contact::parse(&request.contact).map_err(|e| invalid(e.to_string()))?;
    let target = |theirs: bool| {
        let message = request.message.as_deref().ok_or_else(|| invalid("name the message acted on: message".into()))?;
        chat_message(&app, &contact, message, theirs)
    };
    let (act, text) = match request.act {
        SandboxAct::React => {
            let emoji = request.emoji.clone().unwrap_or_default().trim().to_string();
            if !crate::api::is_reaction(&emoji) {
                return Err(invalid(format!(
                    "{emoji:?} is not an emoji: give one like 👍 (\"\" takes the reaction back)"
                )));
            }
            let removed = emoji.is_empty();
            (InboundAct::Reaction { to: target(false)?, removed }, emoji)
        }
        SandboxAct::Edit => {
            let text = request.text.clone().ok_or_else(|| invalid("an edit needs the new text: text".into()))?;
            let text = crate::engine::bounded_text("text", text, crate::api::limits::MAX_MESSAGE_CHARS)?;
            (InboundAct::Edit { of: target(true)? }, text)
        }
        SandboxAct::Delete => (InboundAct::Deletion { of: target(true)? }, String::new()),
        SandboxAct::Call => (InboundAct::Call, String::new()),
    };
    let message = InboundMessage { act: Some(act), ..InboundMessage::new(contact.clone(), text) };
    if sandbox.is_offline() {
        return held(sandbox, message, &contact);
    }
    said(sandbox.deliver(message).await, &contact)
}

/// Sandbox only: what relay sent to contacts, oldest first.
#[utoipa::path(get, path = "/sandbox/outbox", tag = "sandbox", params(OutboxQuery),
    responses((status = 200, body = Vec<OutboxEntry>), (status = 409, body = ApiErrorResponse)))]
pub(super) async fn sandbox_outbox(
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
    responses((status = 200, body = PhoneResponse), (status = 400, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse), (status = 507, body = ApiErrorResponse)))]
pub(super) async fn sandbox_phone(
    State(app): State<App>,
    Body(request): Body<PhoneRequest>,
) -> ApiResult<Json<PhoneResponse>> {
    let sandbox = sandbox(&app)?;
    let contact = Contact::parse(&request.contact).map_err(|e| invalid(e.to_string()))?;
    Ok(Json(sandbox.phone(&contact, request.action).await.map_err(crate::engine::EngineError::Store)?))
}

/// Sandbox only: WhatsApp's reach-out lock, simulated, for `lasts`: a
/// message to a contact that has neither written nor received one is
/// refused with error 463 while it holds.
#[utoipa::path(put, path = "/sandbox/lock", tag = "sandbox", request_body = SandboxLockRequest,
    responses((status = 200, body = SandboxLockState), (status = 400, body = ApiErrorResponse),
              (status = 409, body = ApiErrorResponse)))]
pub(super) async fn sandbox_lock(
    State(app): State<App>,
    Body(request): Body<SandboxLockRequest>,
) -> ApiResult<Json<SandboxLockState>> {
    let sandbox = sandbox(&app)?;
    let lasts = crate::duration::parse(&request.lasts).map_err(|_| {
        invalid(format!("'{}' is not how long the lock lasts: write it like 90s, 30m, 2h or 1d", request.lasts))
    })?;
    if lasts.is_zero() || lasts > crate::api::limits::MAX_SANDBOX_LOCK {
        return Err(invalid(format!("the lock must last more than 0s and at most 365d, not '{}'", request.lasts)));
    }
    Ok(Json(sandbox.lock(lasts, !request.unreported).map_err(crate::engine::EngineError::Store)?))
}

/// Sandbox only: the simulated reach-out lock is lifted, and relay is told.
#[utoipa::path(delete, path = "/sandbox/lock", tag = "sandbox",
    responses((status = 200, body = SandboxLockState), (status = 409, body = ApiErrorResponse)))]
pub(super) async fn sandbox_unlock(State(app): State<App>) -> ApiResult<Json<SandboxLockState>> {
    Ok(Json(sandbox(&app)?.unlock().map_err(crate::engine::EngineError::Store)?))
}

/// Links WhatsApp: streams the pairing as it happens, one JSON
/// `PairingEvent` per line (QR codes as WhatsApp rotates them, or a phone
/// pairing code), ending with `linked`, `already_linked` or `failed`.
#[utoipa::path(post, path = "/whatsapp/pair", tag = "whatsapp", request_body = PairRequest,
    responses((status = 200, content_type = "application/x-ndjson", body = PairingEvent),
              (status = 400, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse)))]
pub(super) async fn whatsapp_pair(
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

/// The channel's id of `message` in `contact`'s live conversation, if a
/// contact could act on it there: a message of the chat (not a reaction,
/// a deletion or a call), not deleted, and their own when `theirs` (an edit
/// or a deletion), as on WhatsApp.
fn chat_message(app: &App, contact: &Contact, message: &str, theirs: bool) -> ApiResult<String> {
    use crate::api::{ActKind, Role, Withdrawal};
    let (found, channel_id) = app.engine.message_in_live(contact, message)?;
    let not_a_message = found.act.as_ref().is_some_and(|a| !matches!(a.kind, ActKind::Reply | ActKind::Edit));
    if not_a_message || found.role == Role::System {
        return Err(invalid(format!(
            "{message} is not a message of the chat (a reaction, a deletion, a call or a note)"
        )));
    }
    if found.withdrawn == Some(Withdrawal::Deleted) {
        return Err(invalid(format!("message {message} was deleted")));
    }
    if theirs && found.role != Role::Contact {
        return Err(invalid(format!(
            "message {message} is not {contact}'s: a contact edits and deletes only their own"
        )));
    }
    // WhatsApp names the original message in every edit and deletion, even of an edited one.
    let original = found.act.as_ref().filter(|a| theirs && a.kind == ActKind::Edit).and_then(|a| a.message_id);
    match original {
        Some(original) => Ok(app.engine.message_in_live(contact, &original.to_string())?.1),
        None => Ok(channel_id),
    }
}
