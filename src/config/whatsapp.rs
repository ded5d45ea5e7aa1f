//! `whatsapp` in config.json: how relay uses WhatsApp (pacing, retries, read
//! receipts, presence). Every field has a safe default (see docs/whatsapp.md).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How relay uses WhatsApp. Every field has a safe default (see docs/whatsapp.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WhatsappSettings {
    /// Typing time, gaps and the per-minute cap.
    pub pacing: PacingSettings,
    /// How long a message waits for the connection to come back before it
    /// counts as not sent.
    pub connect_wait_secs: u64,
    /// Tries of one message before it counts as not sent (the conversation
    /// then fails, as the design's error table says).
    pub send_attempts: u32,
    /// The first retry waits this long; each next one twice as long.
    pub retry_backoff_ms: u64,
    /// When the contact's messages show as read (blue ticks): see
    /// [`ReadReceipts`]. Unset in an older config: what `mark_read` said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_receipts: Option<ReadReceipts>,
    /// The older switch, still read: `true` is `after_turn`, `false` `never`.
    /// `read_receipts`, when given, wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_read: Option<bool>,
    /// Whether the linked device tells WhatsApp it is online.
    pub presence: Presence,
}

/// When relay marks a contact's messages read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadReceipts {
    /// A few seconds after each message arrives, as a person glancing at
    /// the phone would (the blue ticks do not come together with the reply).
    OnArrival,
    /// Once the agent's turn that answers them has finished.
    AfterTurn,
    /// Never: the contact sees grey ticks only.
    Never,
}

/// What the linked device says of being online.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Unavailable right after each connection, so WhatsApp keeps notifying
    /// the operator's phone ("typing..." before a send is still shown).
    #[default]
    Quiet,
    /// Left available, as whatsapp-rust announces it on connecting.
    Available,
}

impl Default for WhatsappSettings {
    fn default() -> Self {
        WhatsappSettings {
            pacing: PacingSettings::default(),
            connect_wait_secs: 120,
            send_attempts: 3,
            retry_backoff_ms: 2_000,
            read_receipts: Some(ReadReceipts::OnArrival),
            mark_read: None,
            presence: Presence::Quiet,
        }
    }
}

impl WhatsappSettings {
    /// When to mark messages read: `read_receipts`, else the older
    /// `mark_read`, else on arrival.
    pub fn read_receipts(&self) -> ReadReceipts {
        match (self.read_receipts, self.mark_read) {
            (Some(setting), _) => setting,
            (None, Some(true)) => ReadReceipts::AfterTurn,
            (None, Some(false)) => ReadReceipts::Never,
            (None, None) => ReadReceipts::OnArrival,
        }
    }

    pub(super) fn check(&self) -> Result<(), String> {
        if self.send_attempts == 0 {
            return Err("whatsapp.send_attempts must be at least 1".into());
        }
        self.pacing.check()
    }
}

#[cfg(test)]
mod whatsapp_tests {
    use super::*;

    fn whatsapp(json: &str) -> WhatsappSettings {
        serde_json::from_str(json).unwrap()
    }

    /// `read_receipts` wins; an older config's `mark_read` still means what
    /// it meant; neither is on arrival. What `relay init` writes reads back.
    #[test]
    fn read_receipts_and_the_older_mark_read() {
        assert_eq!(whatsapp("{}").read_receipts(), ReadReceipts::OnArrival);
        assert_eq!(whatsapp(r#"{"mark_read": true}"#).read_receipts(), ReadReceipts::AfterTurn);
        assert_eq!(whatsapp(r#"{"mark_read": false}"#).read_receipts(), ReadReceipts::Never);
        let both = whatsapp(r#"{"mark_read": false, "read_receipts": "on_arrival"}"#);
        assert_eq!(both.read_receipts(), ReadReceipts::OnArrival);
        assert_eq!(whatsapp(r#"{"read_receipts": "after_turn"}"#).read_receipts(), ReadReceipts::AfterTurn);
        let written = serde_json::to_value(WhatsappSettings::default()).unwrap();
        assert_eq!(written["read_receipts"], "on_arrival");
        assert_eq!(written["presence"], "quiet");
        assert!(written.get("mark_read").is_none());
        assert_eq!(whatsapp(&written.to_string()), WhatsappSettings::default());
        assert!(serde_json::from_str::<WhatsappSettings>(r#"{"read_receipts": "sometimes"}"#).is_err());
        assert_eq!(whatsapp(r#"{"presence": "available"}"#).presence, Presence::Available);
    }
}

/// Pacing settings, `whatsapp.pacing` in config.json (the WhatsApp channel
/// paces its sends by them: see `channel::whatsapp::pacing`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PacingSettings {
    /// "typing…" shows for this long per character of the message...
    pub typing_ms_per_char: u64,
    /// ...but never shorter than this...
    pub min_typing_ms: u64,
    /// ...nor longer than this.
    pub max_typing_ms: u64,
    /// Shortest time between two messages to the same contact.
    pub min_gap_ms: u64,
    /// Most messages sent in any minute, all contacts together.
    pub max_messages_per_minute: u32,
}

impl Default for PacingSettings {
    fn default() -> Self {
        PacingSettings {
            typing_ms_per_char: 30,
            min_typing_ms: 1_000,
            max_typing_ms: 6_000,
            min_gap_ms: 2_000,
            max_messages_per_minute: 20,
        }
    }
}

impl PacingSettings {
    pub fn check(&self) -> Result<(), String> {
        if self.min_typing_ms > self.max_typing_ms {
            return Err("whatsapp.pacing.min_typing_ms must be at most max_typing_ms".into());
        }
        if self.max_messages_per_minute == 0 {
            return Err("whatsapp.pacing.max_messages_per_minute must be at least 1".into());
        }
        Ok(())
    }

    /// How long "typing…" shows before a message of `chars` characters.
    pub fn typing_time(&self, chars: usize) -> Duration {
        let ms = self.typing_ms_per_char.saturating_mul(chars as u64).clamp(self.min_typing_ms, self.max_typing_ms);
        Duration::from_millis(ms)
    }
}
