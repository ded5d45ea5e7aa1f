//! The health of the WhatsApp link, as `relay status` shows it, and how
//! whatsapp-rust's connection events move it.

use chrono::{DateTime, Utc};
use whatsapp_rust::types::events::Event;

use crate::api::ChannelStatus;
use crate::channel::Blocked;

#[derive(Debug, Clone, PartialEq)]
pub enum LinkState {
    /// No session: `relay init` links one. Nothing connects meanwhile.
    NotLinked,
    /// `relay init` is showing codes.
    Pairing,
    /// Dialling WhatsApp with a linked session (first connection of this run).
    Connecting,
    Connected,
    /// The connection dropped; whatsapp-rust (or relay) dials again with backoff.
    Reconnecting {
        last_error: Option<String>,
    },
    /// WhatsApp unlinked this device (from the phone, or the account).
    LoggedOut {
        reason: String,
    },
    TemporarilyBanned {
        until: DateTime<Utc>,
        reason: String,
    },
    /// Another WhatsApp Web session with these credentials took over.
    Replaced,
    /// WhatsApp refused the client version `version` ("405"); `plan` says
    /// what relay does about it (see `session::version`).
    Outdated {
        version: String,
        plan: String,
    },
}

impl LinkState {
    /// Why nothing may be sent now, when that lasts until someone acts (or
    /// a ban ends); `None` while sends can go out or wait for a reconnection.
    pub fn blocked(&self) -> Option<Blocked> {
        match self {
            LinkState::NotLinked | LinkState::Pairing => Some(Blocked::NotLinked),
            LinkState::LoggedOut { reason } => Some(Blocked::LoggedOut { reason: reason.clone() }),
            LinkState::TemporarilyBanned { until, reason } => {
                Some(Blocked::Banned { until: *until, reason: reason.clone() })
            }
            LinkState::Replaced => Some(Blocked::Replaced),
            LinkState::Connecting
            | LinkState::Connected
            | LinkState::Reconnecting { .. }
            | LinkState::Outdated { .. } => None,
        }
    }

    pub fn is_connected(&self) -> bool {
        *self == LinkState::Connected
    }

    /// The state after a whatsapp-rust event; `None` when it changes nothing.
    pub fn after(&self, event: &Event, now: DateTime<Utc>) -> Option<LinkState> {
        let next = match event {
            Event::Connected(_) => LinkState::Connected,
            Event::Disconnected(d) => LinkState::Reconnecting { last_error: Some(format!("{:?}", d.reason)) },
            Event::PairSuccess(_) => LinkState::Connecting,
            Event::PairingQrCodesExhausted(_) if *self == LinkState::Pairing => LinkState::NotLinked,
            Event::LoggedOut(l) => LinkState::LoggedOut { reason: format!("{:?}", l.reason) },
            Event::StreamReplaced(_) => LinkState::Replaced,
            Event::TemporaryBan(ban) => LinkState::TemporarilyBanned {
                until: now + ban.expire,
                reason: ban.message.clone().unwrap_or_else(|| format!("{:?}", ban.code)),
            },
            Event::ConnectFailure(f) if f.reason.is_logged_out() => {
                LinkState::LoggedOut { reason: format!("{:?}", f.reason) }
            }
            Event::ConnectFailure(f) => LinkState::Reconnecting {
                last_error: Some(match &f.message {
                    Some(message) => format!("{:?}: {message}", f.reason),
                    None => format!("{:?}", f.reason),
                }),
            },
            // The session sets `Outdated` itself: it knows the version.
            Event::ClientOutdated(_) => return None,
            _ => return None,
        };
        (next != *self).then_some(next)
    }

    /// `relay status`'s view. `attempts` counts failed dials since the last
    /// connection; `phone` is the linked number.
    pub fn status(&self, attempts: u64, phone: Option<String>) -> ChannelStatus {
        let (state, detail) = match self {
            LinkState::NotLinked => ("not linked", self.blocked().map(|b| b.to_string())),
            LinkState::Pairing => ("pairing", Some("`relay init` is showing the code to scan".into())),
            LinkState::Connecting => ("connecting", (attempts > 0).then(|| format!("{attempts} failed attempts"))),
            LinkState::Connected => ("connected", None),
            LinkState::Reconnecting { last_error } => (
                "reconnecting",
                Some(match last_error {
                    Some(error) => format!("{attempts} failed attempts; last error: {error}"),
                    None => format!("{attempts} failed attempts"),
                }),
            ),
            LinkState::LoggedOut { .. } => ("logged out", self.blocked().map(|b| b.to_string())),
            LinkState::TemporarilyBanned { .. } => ("temporarily banned", self.blocked().map(|b| b.to_string())),
            LinkState::Replaced => ("replaced", self.blocked().map(|b| b.to_string())),
            LinkState::Outdated { version, plan } => {
                ("outdated", Some(format!("WhatsApp refused client version {version}; {plan}")))
            }
        };
        ChannelStatus {
            kind: "whatsapp".into(),
            state: state.into(),
            connected: self.is_connected(),
            detail,
            phone,
            version: None,
            catching_up: false,
            missing: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use whatsapp_rust::types::events::{
        ConnectFailure, ConnectFailureReason, Connected, Disconnected, LoggedOut, StreamReplaced, TempBanReason,
        TemporaryBan,
    };
    use whatsapp_rust::wacore::net::DisconnectReason;

    fn walk(events: &[Event]) -> LinkState {
        let now = "2026-11-23T12:00:00Z".parse().unwrap();
        events.iter().fold(LinkState::Connecting, |state, e| state.after(e, now).unwrap_or(state))
    }

    #[test]
    fn connected_then_dropped_then_back() {
        let connected = Event::Connected(Connected::builder().build());
        let dropped = Event::Disconnected(Disconnected::builder().reason(DisconnectReason::StreamEnded).build());
        assert_eq!(walk(std::slice::from_ref(&connected)), LinkState::Connected);
        let state = walk(&[connected.clone(), dropped.clone()]);
        assert!(matches!(state, LinkState::Reconnecting { last_error: Some(ref e) } if e.contains("StreamEnded")));
        assert_eq!(state.blocked(), None, "sends wait for the reconnection");
        let status = state.status(3, None);
        assert_eq!(status.state, "reconnecting");
        assert!(status.detail.unwrap().starts_with("3 failed attempts; last error: StreamEnded"));
        assert_eq!(walk(&[connected.clone(), dropped, connected]), LinkState::Connected);
    }

    #[test]
    fn logged_out_blocks_sends_and_says_to_run_init() {
        let event =
            Event::LoggedOut(LoggedOut::builder().on_connect(true).reason(ConnectFailureReason::LoggedOut).build());
        let state = walk(&[event]);
        assert!(state.blocked().unwrap().to_string().contains("relay init"));
        let status = state.status(0, Some("+56912345678".into()));
        assert_eq!((status.state.as_str(), status.connected), ("logged out", false));
        assert_eq!(status.phone.as_deref(), Some("+56912345678"));
        let locked =
            Event::ConnectFailure(ConnectFailure::builder().reason(ConnectFailureReason::AccountLocked).build());
        assert!(matches!(walk(&[locked]), LinkState::LoggedOut { .. }));
    }

    #[test]
    fn a_temporary_ban_says_until_when() {
        let ban = Event::TemporaryBan(
            TemporaryBan::builder().code(TempBanReason::SentToTooManyPeople).expire(chrono::Duration::hours(2)).build(),
        );
        let state = walk(&[ban]);
        let status = state.status(0, None);
        assert_eq!(status.state, "temporarily banned");
        assert!(status.detail.unwrap().contains("until 2026-11-23 14:00 UTC"), "{state:?}");
    }

    #[test]
    fn replaced_and_server_errors() {
        assert_eq!(walk(&[Event::StreamReplaced(StreamReplaced::builder().build())]), LinkState::Replaced);
        let busy =
            Event::ConnectFailure(ConnectFailure::builder().reason(ConnectFailureReason::ServiceUnavailable).build());
        assert!(matches!(walk(&[busy]), LinkState::Reconnecting { .. }));
    }

    #[test]
    fn outdated_names_the_refused_version_and_what_relay_does() {
        let state = LinkState::Outdated { version: "2.3000.5".into(), plan: "connecting with 2.3000.6".into() };
        assert_eq!(state.blocked(), None, "sends wait for the reconnection");
        let status = state.status(0, None);
        assert_eq!((status.state.as_str(), status.connected), ("outdated", false));
        assert_eq!(status.detail.unwrap(), "WhatsApp refused client version 2.3000.5; connecting with 2.3000.6");
        let outdated = Event::ClientOutdated(whatsapp_rust::types::events::ClientOutdated::builder().build());
        assert_eq!(LinkState::Connected.after(&outdated, crate::clock::now()), None, "the session sets it");
    }

    #[test]
    fn not_linked_says_how_to_link() {
        let status = LinkState::NotLinked.status(0, None);
        assert_eq!((status.state.as_str(), status.connected), ("not linked", false));
        assert!(status.detail.unwrap().contains("relay init"));
        assert_eq!(LinkState::Connecting.status(0, None).detail, None);
    }
}
