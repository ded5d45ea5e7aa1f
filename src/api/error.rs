//! Errors: one stable code per kind, and the one shape every error takes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::fsm::{Event, State};

/// Declares [`ErrorCode`] from one list, so each code's variant and wire
/// name are written once: the enum, its serde names, `as_str` and `ALL`.
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])* $variant:ident => $wire:literal,)+) => {
        /// A stable code for a program, one per kind of error. The daemon sends the
        /// API's codes; the CLI adds its own (marked "CLI only") for what goes wrong
        /// before or around a request, and maps every code to its exit code.
        ///
        /// Each wire name is its variant's name in snake case, one rule that
        /// serde and the OpenAPI schema both read.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $variant,)+
        }

        impl ErrorCode {
            /// Every code, in the order declared.
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The name on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $wire,)+
                }
            }
        }
    };
}

error_codes! {
    InvalidRequest => "invalid_request",
    NotFound => "not_found",
    AmbiguousId => "ambiguous_id",
    InvalidTransition => "invalid_transition",
    /// A wait for a state the conversation, having ended, will never reach.
    Ended => "ended",
    Unauthorized => "unauthorized",
    Forbidden => "forbidden",
    UnsupportedMediaType => "unsupported_media_type",
    PayloadTooLarge => "payload_too_large",
    MethodNotAllowed => "method_not_allowed",
    ChannelUnavailable => "channel_unavailable",
    NotSent => "not_sent",
    ShuttingDown => "shutting_down",
    NotSandbox => "not_sandbox",
    NotWhatsapp => "not_whatsapp",
    /// The number is on the do-not-contact list.
    OptedOut => "opted_out",
    IdempotencyKeyReused => "idempotency_key_reused",
    IdempotencyKeyInUse => "idempotency_key_in_use",
    /// A full disk or read-only home: nothing was changed.
    StorageUnavailable => "storage_unavailable",
    /// Events asked for are no longer kept (`events.keep`).
    Gone => "gone",
    /// The daemon holds `http.max_connections` connections already.
    TooManyConnections => "too_many_connections",
    Internal => "internal",
    /// CLI only: anything else that failed (I/O, an unreadable answer).
    Failure => "failure",
    /// CLI only: the command line itself is wrong.
    InvalidArguments => "invalid_arguments",
    /// CLI only: no daemon answers.
    DaemonNotRunning => "daemon_not_running",
    /// CLI only: the daemon stopped while followed.
    DaemonStopped => "daemon_stopped",
    /// CLI only: no config.json (run `relay init`).
    NotInitialised => "not_initialised",
    /// CLI only: config.json cannot be read.
    InvalidConfig => "invalid_config",
    /// CLI only: `relay wait` timed out.
    TimedOut => "timed_out",
    /// CLI only: stdout's reader went away.
    ReaderGone => "reader_gone",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every error the API returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApiErrorResponse {
    /// One sentence for a person.
    pub error: String,
    /// A stable code for a program.
    pub code: ErrorCode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// For `invalid_transition` and `ended`: the instance's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_state: Option<State>,
    /// For `invalid_transition`: the refused event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// For `gone`: the oldest event still kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_seq: Option<u64>,
}

impl ApiErrorResponse {
    /// An `opted_out` refusal in the words of the surface that shows it;
    /// any other error as it is.
    pub fn reword_for(&mut self, surface: crate::courtesy::optout::Surface) {
        if self.code == ErrorCode::OptedOut {
            self.error = surface.reword(&self.error);
        }
    }

    pub fn new(code: ErrorCode, error: impl Into<String>) -> ApiErrorResponse {
        ApiErrorResponse {
            error: error.into(),
            code,
            details: None,
            current_state: None,
            event: None,
            oldest_seq: None,
        }
    }
}

#[cfg(test)]
mod error_code_tests {
    use super::ErrorCode;

    #[test]
    fn every_code_is_on_the_wire_as_its_name() {
        for &code in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(code.as_str()));
            assert_eq!(serde_json::from_value::<ErrorCode>(serde_json::json!(code.as_str())).unwrap(), code);
        }
    }

    #[test]
    fn each_surface_names_the_opt_out_override_in_its_own_words() {
        use super::ApiErrorResponse;
        use crate::courtesy::optout::{OptOut, OptOutSource, Surface};
        let entry = OptOut::new("+56912345678".into(), OptOutSource::Contact, "STOP".into(), None);
        let refused = || ApiErrorResponse::new(ErrorCode::OptedOut, entry.refusal());
        let words = [
            (Surface::Http, "a request with \"override_opt_out\": \"<their reason>\" write"),
            (Surface::Cli, "`relay create --override-opt-out \"<their reason>\"` write"),
            (Surface::Mcp, "create_conversation with override_opt_out: \"<their reason>\" write"),
        ];
        for (surface, named) in words {
            let mut error = refused();
            error.reword_for(surface);
            assert!(error.error.contains(named), "{surface:?}: {}", error.error);
            assert!(error.error.contains("a person's decision (the operator's), not an agent's"), "{}", error.error);
        }
        // Another error that quotes the same words is left as it is.
        let mut other = ApiErrorResponse::new(ErrorCode::InvalidRequest, entry.refusal());
        other.reword_for(Surface::Cli);
        assert!(other.error.contains("\"override_opt_out\""), "{}", other.error);
    }

    #[test]
    fn the_schema_lists_the_codes_as_the_wire_spells_them() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(ErrorCode::schema()).unwrap();
        let listed: Vec<&str> = schema["enum"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
        let wire: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(listed, wire);
    }
}
