//! Limits on what callers may ask for: part of the contract, enforced by
//! the engine, stated in the tool schemas and the docs.

use std::time::Duration;

/// The longest idempotency key.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 255;

/// The JSON Schema `pattern` of an idempotency key: printable ASCII
/// without spaces (its length is a `minLength` and a `maxLength`).
pub const IDEMPOTENCY_KEY_PATTERN: &str = "^[!-~]+$";

/// The rule for idempotency keys, in the words every refusal uses.
pub fn idempotency_key_rule() -> String {
    format!(
        "an idempotency key is 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters without spaces \
         (a UUID is a good one)"
    )
}

/// What is wrong with an idempotency key, if anything: the one rule the
/// CLI, MCP and the daemon apply, so a bad key is refused in the same
/// words before it is put into a header as after.
pub fn idempotency_key_problem(key: &str) -> Option<String> {
    let printable = key.chars().all(|c| c.is_ascii_graphic());
    (key.is_empty() || key.chars().count() > MAX_IDEMPOTENCY_KEY_CHARS || !printable).then(idempotency_key_rule)
}

pub const MAX_OBJECTIVE_CHARS: usize = 4_000;
pub const MAX_TODOS: usize = 50;
pub const MAX_TODO_CHARS: usize = 500;
/// WhatsApp's own limit is 65,536; a person should never get more than this.
pub const MAX_MESSAGE_CHARS: usize = 4_096;
pub const MAX_NOTE_CHARS: usize = 1_000;
pub const MAX_REASON_CHARS: usize = 1_000;
/// Private facts per conversation (`--private`), and the length of each.
pub const MAX_PRIVATE_FACTS: usize = 20;
pub const MAX_PRIVATE_CHARS: usize = 1_000;
/// Files given to a conversation at create, to send (`--attach`).
pub const MAX_ATTACHMENTS: usize = 10;
/// A caption under a file sent: WhatsApp's own limit.
pub const MAX_CAPTION_CHARS: usize = 1_024;
/// Messages one agent turn may send: a person gets a few messages, not a
/// flood from a model that calls `send_message` fifty times in one answer.
pub const MAX_MESSAGES_PER_TURN: u32 = 5;
pub const MIN_HEARTBEAT: Duration = Duration::from_secs(1);
pub const MAX_HEARTBEAT: Duration = Duration::from_secs(30 * 24 * 3600);
pub const MAX_FOLLOWUPS: u32 = 100;
/// Shortest id prefix accepted in place of a full id.
pub const MIN_ID_PREFIX: usize = 4;
/// The JSON Schema `pattern` of a conversation id or a prefix of one: hex
/// digits and dashes (at least [`MIN_ID_PREFIX`] of them: a `minLength`).
pub const ID_PATTERN: &str = "^[0-9a-fA-F-]+$";
/// Whether `text` has the form of a conversation id or a prefix of one, as
/// the resolver looks it up: at least [`MIN_ID_PREFIX`] hex digits and
/// dashes ([`ID_PATTERN`] with that `minLength` says the same).
pub fn is_id_prefix(text: &str) -> bool {
    text.chars().count() >= MIN_ID_PREFIX && text.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// The longest reach-out lock the sandbox simulates: WhatsApp's last hours
/// or days, and a year bounds it.
pub const MAX_SANDBOX_LOCK: Duration = Duration::from_secs(365 * 24 * 3600);

/// How far ahead a conversation may be set to start (`start_at`): while it
/// waits it holds its contact, and the contact's later conversations queue
/// behind it; a plan further off belongs in the caller's own calendar.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(30 * 24 * 3600);
/// A start time this little before now is taken as now: the caller's clock
/// may be behind relay's, and a time on the contact's clock names a minute.
pub const START_SLACK: Duration = Duration::from_secs(60);

/// How long `GET /instances/{id}/wait` (and `relay wait`, MCP's `wait`)
/// waits when not told, and at most.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);
pub const MAX_WAIT: Duration = Duration::from_secs(3600);

#[cfg(test)]
mod tests {
    use super::*;

    /// The patterns take a character exactly when the daemon's checks do.
    #[test]
    fn the_patterns_are_the_checks() {
        let key = regex::Regex::new(IDEMPOTENCY_KEY_PATTERN).unwrap();
        let id = regex::Regex::new(ID_PATTERN).unwrap();
        for c in (0..=0x2FF).filter_map(char::from_u32) {
            let one = c.to_string();
            assert_eq!(key.is_match(&one), idempotency_key_problem(&one).is_none(), "{c:?}");
            assert_eq!(id.is_match(&one), c.is_ascii_hexdigit() || c == '-', "{c:?}");
        }
    }

    proptest::proptest! {
        /// Whatever the id pattern matches, at its `minLength`, the resolver
        /// looks up: it is never refused as "not a conversation id".
        #[test]
        fn every_id_the_pattern_matches_is_looked_up(text in "[0-9a-fA-F-]{4,40}|[ -~]{0,8}") {
            let matched = regex::Regex::new(ID_PATTERN).unwrap().is_match(&text) && text.chars().count() >= MIN_ID_PREFIX;
            proptest::prop_assert_eq!(matched, is_id_prefix(&text), "{}", text);
        }
    }
}
