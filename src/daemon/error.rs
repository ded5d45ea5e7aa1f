//! How errors leave the daemon: always an `ApiErrorResponse` body.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::api::{ApiErrorResponse, ErrorCode};
use crate::channel::ChannelError;
use crate::engine::EngineError;
use crate::store::StoreError;
use crate::webhooks::WebhookError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ApiErrorResponse,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, error: String) -> ApiError {
        ApiError { status, body: ApiErrorResponse::new(code, error) }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        let message = error.to_string();
        match error {
            EngineError::Invalid(_) => ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message),
            EngineError::NotFound(_) | EngineError::NotListed(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
            }
            EngineError::Ambiguous { .. } | EngineError::AmbiguousMessage { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::AmbiguousId, message)
            }
            EngineError::Transition { source, .. } => {
                let mut e = ApiError::new(StatusCode::CONFLICT, ErrorCode::InvalidTransition, message);
                e.body.current_state = Some(source.state);
                e.body.event = Some(source.event);
                e
            }
            EngineError::NoQuestion { .. } => {
                let mut e = ApiError::new(StatusCode::CONFLICT, ErrorCode::InvalidTransition, message);
                e.body.current_state = Some(crate::api::State::NeedsHumanIntervention);
                e.body.event = Some(crate::fsm::Event::OperatorAnswers);
                e
            }
            EngineError::Channel(ChannelError::Unavailable { .. }) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::ChannelUnavailable, message)
            }
            EngineError::Channel(ChannelError::Rejected { .. } | ChannelError::Failed { .. }) => {
                ApiError::new(StatusCode::BAD_GATEWAY, ErrorCode::NotSent, message)
            }
            // A full disk or read-only home: nothing was changed, and the
            // caller may retry once there is room.
            EngineError::Store(StoreError::Write { .. }) => ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                ErrorCode::StorageUnavailable,
                format!("{message}; nothing was changed: free space in (or make writable) the relay home, then retry"),
            ),
            EngineError::Store(_) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, message),
            EngineError::ShuttingDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::ShuttingDown, message)
            }
            EngineError::KeyReused(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::IdempotencyKeyReused, message)
            }
            EngineError::KeyInUse(_) => ApiError::new(StatusCode::CONFLICT, ErrorCode::IdempotencyKeyInUse, message),
            EngineError::Missing(_) => ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message),
            EngineError::OptedOut(_) => ApiError::new(StatusCode::CONFLICT, ErrorCode::OptedOut, message),
            EngineError::EventsGone { oldest, .. } => {
                let mut e = ApiError::new(StatusCode::GONE, ErrorCode::Gone, message);
                e.body.oldest_seq = Some(oldest);
                e
            }
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(error: WebhookError) -> ApiError {
        match error {
            WebhookError::Invalid(message) => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message)
            }
            WebhookError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, error.to_string()),
            WebhookError::Ambiguous { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::AmbiguousId, error.to_string())
            }
            WebhookError::Store(e) => EngineError::Store(e).into(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> ApiError {
        match rejection {
            JsonRejection::MissingJsonContentType(_) => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType,
                "request bodies must be JSON (Content-Type: application/json)".into(),
            ),
            JsonRejection::BytesRejection(ref r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                super::guard::too_large()
            }
            other => ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::InvalidRequest,
                format!("invalid JSON body: {}", other.body_text()),
            ),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::InvalidRequest,
            format!("invalid path: {}", rejection.body_text()),
        )
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::InvalidRequest,
            format!("invalid query: {}", rejection.body_text()),
        )
    }
}
