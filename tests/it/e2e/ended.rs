//! Ended conversations leave memory: the daemon keeps a line of
//! `ended.jsonl` for each and reads the rest from its file when asked. A
//! reader sees an ended conversation the same whether it just ended, was
//! read back from disk, or after a restart with or without the index; lists,
//! filters and id prefixes find it all the same. (Whatever becomes of the
//! index between starts is `store::ended`'s proptest.)

use serde_json::Value;

use crate::support::{OTHER_CONTACT, Relay};

/// The ids `relay list` gives with `args`, in its order.
fn listed(relay: &Relay, args: &[&str]) -> Vec<String> {
    let list = relay.json(&[&["list"][..], args].concat());
    list.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn an_ended_conversation_reads_the_same_out_of_memory_and_after_restarts() {
    let relay = Relay::started();
    let ended = relay.create(&[]);
    let live =
        relay.ok(&["create", "--objective", "Ask", "--contact", OTHER_CONTACT, "--todo", "Ask"]).trim().to_string();
    relay.wait_for_state(&ended, "NEEDS_HUMAN_INTERVENTION");
    // As the conversation's task held it when it ended...
    let cancelled: Value = relay.json(&["cancel", &ended]);
    assert_eq!(cancelled["state"], "FAILED");
    // ...and as read back from its file, the daemon holding only its line.
    assert_eq!(relay.get(&ended), cancelled);
    let index = std::fs::read_to_string(relay.path().join("ended.jsonl")).unwrap();
    let lines: Vec<Value> = index.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "{index}");
    assert_eq!((lines[0]["id"].as_str(), lines[0]["state"].as_str()), (Some(ended.as_str()), Some("FAILED")));
    assert_eq!(listed(&relay, &["--state", "terminal"]), [ended.as_str()]);
    assert_eq!(listed(&relay, &[]), [live.as_str(), ended.as_str()]);

    // A restart reads the index, not the file; one without the index
    // (removed, as a relay from before it would have none) writes it again.
    for remove_index in [false, true] {
        relay.ok(&["stop"]);
        if remove_index {
            std::fs::remove_file(relay.path().join("ended.jsonl")).unwrap();
        }
        relay.ok(&["start"]);
        assert_eq!(relay.get(&ended[..8]), cancelled, "found by its prefix, and the same");
        assert_eq!(listed(&relay, &["--state", "terminal"]), [ended.as_str()]);
        assert_eq!(listed(&relay, &["--state", "FAILED,COMPLETED", "--contact", "+56 9 1234 5678"]), [ended.as_str()]);
        assert_eq!(listed(&relay, &[]), [live.as_str(), ended.as_str()]);
        assert_eq!(relay.state(&live), "NEEDS_HUMAN_INTERVENTION");
        assert_eq!(std::fs::read_to_string(relay.path().join("ended.jsonl")).unwrap(), index);
    }
    let status = relay.json(&["status"]);
    assert_eq!((status["active_instance_count"].as_u64(), status["total_instance_count"].as_u64()), (Some(1), Some(2)));
}
