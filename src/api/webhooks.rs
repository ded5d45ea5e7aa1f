//! Webhooks: where events are POSTed, and how their deliveries go.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /webhooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookRequest {
    /// Where to POST each event (http or https).
    pub url: String,
    /// Only these event types (`transition`, `message_in`, ...); empty or
    /// absent: all of them.
    #[serde(default)]
    pub events: Vec<String>,
}

/// A registered webhook and how its deliveries go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    /// "wh_" and 12 hex digits.
    pub id: String,
    pub url: String,
    /// The event types it gets (empty: all).
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
    /// The last event delivered (or skipped by the filter); delivery goes on after it.
    pub delivered_seq: u64,
    /// Events stored after `delivered_seq`, not yet delivered.
    #[serde(default)]
    pub pending: u64,
    /// Failed attempts in a row for the event being delivered (0 when healthy).
    #[serde(default)]
    pub failures: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_attempt_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// `POST /webhooks` answers this: the secret once, when the webhook is
/// created; it is not shown again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookCreated {
    #[serde(flatten)]
    pub webhook: Webhook,
    /// The key of the `Relay-Signature` HMAC-SHA256 (hex). Keep it; it is
    /// shown only now. Null when `created` is false.
    pub secret: Option<String>,
    /// False when the URL was registered already (for the same events):
    /// this is that webhook, unchanged, and its secret is the one shown
    /// when it was added.
    pub created: bool,
}
