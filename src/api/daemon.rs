//! The daemon itself: its status and channel, WhatsApp pairing, health and
//! shutdown.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Webhook;

/// The channel relay speaks through, and how its connection is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChannelStatus {
    /// "whatsapp" or "sandbox".
    pub kind: String,
    /// "connected", "not linked", "pairing", "connecting", "reconnecting",
    /// "outdated", "logged out", "temporarily banned", "replaced".
    pub state: String,
    pub connected: bool,
    /// What to know about that state: attempts and last error, until when,
    /// what to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The linked phone number (E.164), once linked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    /// WhatsApp only: the WhatsApp Web client version relay announced when
    /// WhatsApp last took the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// WhatsApp only: relay is taking the messages that came while it was
    /// away; follow-ups and first messages wait until it is done.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub catching_up: bool,
    /// The last catch-up did not finish in time: contacts' messages of this
    /// span may be missing (the conversations live then say so too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<super::MissedSpan>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DaemonStatusResponse {
    pub pid: u32,
    pub uptime_seconds: u64,
    /// Kept from the design's contract: true only on a connected WhatsApp channel.
    pub whatsapp_connected: bool,
    /// Non-terminal instances.
    pub active_instance_count: usize,
    pub total_instance_count: usize,
    /// Messages from contacts with no live conversation, kept in
    /// `unrouted.jsonl` in the home.
    pub unrouted_message_count: u64,
    /// `relay wait` requests under way.
    #[serde(default)]
    pub waiting_requests: usize,
    /// The sequence number of the last event (`relay events --after`).
    #[serde(default)]
    pub last_event_seq: u64,
    /// Webhooks whose deliveries fail now (`failures` > 0), with their last error.
    #[serde(default)]
    pub failing_webhooks: Vec<Webhook>,
    pub channel: ChannelStatus,
    /// First contacts: WhatsApp's reach-out lock as relay knows it, the
    /// day's first messages to new contacts, and what waits.
    #[serde(default)]
    pub first_contact: FirstContactStatus,
    /// The conversation agent's model ("provider/name"), or null when none is configured.
    pub model: Option<String>,
    /// The model's last failure (unreachable, key rejected), until a call succeeds.
    pub model_error: Option<String>,
    pub port: u16,
    pub home: String,
    pub version: String,
}

/// What holds relay back from writing first (`relay status`, `relay doctor`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FirstContactStatus {
    /// WhatsApp's reach-out lock, while relay takes it to be in force: no
    /// first message goes to a new contact until relay asks again at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_out_lock: Option<crate::courtesy::ReachOutLock>,
    /// First contacts started in the last 24 hours.
    pub started_last_24h: u32,
    /// `courtesy.max_new_contacts_per_day` (0: no cap).
    pub max_per_day: u32,
    /// Conversations whose next message waits, by reason
    /// (`start_at`, `quiet_hours`, `reach_out_lock`, `new_contact_cap`).
    #[serde(default)]
    pub waiting: std::collections::BTreeMap<crate::api::WaitReason, usize>,
}

/// `POST /whatsapp/pair` streams these, one JSON object per line, until
/// `linked`, `already_linked` or `failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PairingEvent {
    /// Scan this with WhatsApp on the phone: Settings, Linked devices, Link a device.
    Qr {
        code: String,
        expires_in_secs: u64,
    },
    /// Type this code on the phone: Linked devices, Link with phone number.
    PairCode {
        code: String,
        expires_in_secs: u64,
    },
    /// Linked; the daemon connects with this session from now on.
    Linked {
        phone: Option<String>,
    },
    /// A session is already linked (pass `force` to replace it).
    AlreadyLinked {
        phone: Option<String>,
    },
    Failed {
        reason: String,
    },
}

/// `POST /whatsapp/pair`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PairRequest {
    /// Link with a code typed on this phone (E.164) instead of a QR code.
    #[serde(default)]
    pub phone: Option<String>,
    /// Unlink the current session first and link anew.
    #[serde(default)]
    pub force: bool,
}

/// `GET /health`: the only route that needs no token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HealthResponse {
    pub status: String,
    pub pid: u32,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ShutdownResponse {
    pub pid: u32,
}
