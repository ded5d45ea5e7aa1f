//! The home's record of a conversation against what a caller sees: homes
//! written before the record was its own type read whole and are written
//! back the same, and relay's bookkeeping stays out of the API.

use relay::api::ConversationInstance;
use relay::store::ConversationRecord;
use serde_json::Value;

/// relay's own bookkeeping: in the record, never in the API.
const BOOKKEEPING: [&str; 5] = [
    "pending_disclosure",
    "paused_heartbeat_remaining_ms",
    "scheduled_heartbeat_ms",
    "unanswered_contact_messages",
    "media_received",
];

/// A conversation as relay 0.1.0 wrote it (paused while waiting, a photo
/// unanswered, the disclosure not yet sent), taken from a real home.
fn written_by_0_1_0() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/fixtures/record-written-by-0.1.0.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_record_written_by_0_1_0_reads_whole_and_writes_back_the_same() {
    let written = written_by_0_1_0();
    let record: ConversationRecord = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(record.paused_heartbeat_remaining_ms, Some(12_074_471));
    assert_eq!((record.unanswered_contact_messages, record.media_received), (1, 1));
    assert!(record.pending_disclosure.as_deref().is_some_and(|line| line.contains("automated assistant")));
    assert_eq!(record.objective, "Confirm the delivery day");
    assert_eq!(record.start_at, None, "a conversation from before start times starts as it did");
    assert_eq!(serde_json::to_value(&record).unwrap(), written, "a record is rewritten exactly as it was read");
}

#[test]
fn the_api_shows_the_instance_without_relays_bookkeeping() {
    let record: ConversationRecord = serde_json::from_value(written_by_0_1_0()).unwrap();
    let shown = serde_json::to_value(&record.instance).unwrap();
    for field in BOOKKEEPING {
        assert!(shown.get(field).is_none(), "{field} is in the API's instance");
    }
    // Everything else the record holds is what the caller sees.
    let mut written = written_by_0_1_0();
    written.as_object_mut().unwrap().retain(|key, _| !BOOKKEEPING.contains(&key.as_str()));
    assert_eq!(shown, written);
    let _: ConversationInstance = serde_json::from_value(shown).unwrap();
}

#[test]
fn the_published_schema_has_none_of_relays_bookkeeping() {
    let document = crate::support::contract::document();
    let properties = document["components"]["schemas"]["ConversationInstance"]["properties"].as_object().unwrap();
    for field in BOOKKEEPING {
        assert!(!properties.contains_key(field), "{field} is in the published ConversationInstance");
    }
}
