//! The browser live view's sign-in: a one-time code the CLI asks for
//! (`relay ui`), which the browser exchanges for a session cookie.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Body of `POST /login-codes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginCodeRequest {
    /// A conversation (id or unique prefix) the page opens on; left out, the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
}

/// A one-time sign-in address for the live view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LoginCode {
    /// The address to open in a browser on this machine: it carries the
    /// code, which works once, until `expires_at`.
    pub url: String,
    /// When the code stops working, used or not.
    pub expires_at: DateTime<Utc>,
    /// The conversation the page opens on, by its full id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<uuid::Uuid>,
}
