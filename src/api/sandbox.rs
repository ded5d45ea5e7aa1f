//! The sandbox channel's routes: a simulated contact writes, and what relay
//! sent is read back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// `relay sandbox say`: a message from a simulated contact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSayRequest {
    pub contact: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SandboxSayResponse {
    /// The conversation the message reached, or null when the contact has no
    /// live conversation (the message is logged and ignored, as on WhatsApp).
    pub instance_id: Option<Uuid>,
    pub contact: String,
}

/// One message relay sent to a contact on the sandbox channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboxEntry {
    pub contact: String,
    pub text: String,
    pub timestamp: DateTime<Utc>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct OutboxQuery {
    /// Only messages to this contact.
    pub contact: Option<String>,
}
