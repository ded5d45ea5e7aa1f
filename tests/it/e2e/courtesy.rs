//! Courtesy end to end with the real binary on the sandbox: the disclosure
//! goes first, STOP opts the number out, and an override is recorded. (What
//! the engine enforces, whatever the agent does, is `engine::courtesy`.)

/// End to end, with the real binary on the sandbox: the first message
/// carries the disclosure; "stop the delivery on Friday" is a sentence;
/// "STOP" ends the conversation as opted out; the next create is refused
/// (exit 5, naming the day); the override works and is recorded.
#[test]
fn end_to_end_the_disclosure_goes_first_stop_opts_out_and_the_override_is_recorded() {
    use crate::support::model::{outbox, sends_each_turn, with_model};
    let (relay, _model) = with_model(sends_each_turn(|n| format!("Message {n}")));
    relay.ok(&["stop"]);
    relay.edit_config(|config| {
        config["courtesy"]["disclosure"] = "This is an assistant writing for {{operator}}.".into();
        config["courtesy"]["operator_name"] = "Ana".into();
    });
    relay.ok(&["start"]);
    let id = relay.create(&[]);
    relay.wait_for(&id, "the first message", |i| i["first_delivered_at"].is_string());
    assert_eq!(outbox(&relay), ["This is an assistant writing for Ana.\n\nMessage 0"]);

    relay.ok(&["sandbox", "say", crate::support::CONTACT, "stop the delivery on Friday"]);
    let answered = relay.wait_for(&id, "the answer", |i| outbox(&relay).len() == 2 || i["state"] == "ABANDONED");
    assert_ne!(answered["state"], "ABANDONED", "a sentence with 'stop' in it is not an opt-out");
    assert!(outbox(&relay)[1].starts_with("Message "), "no disclosure after the first message");

    relay.ok(&["sandbox", "say", crate::support::CONTACT, "STOP"]);
    let ended = relay.wait_for_state(&id, "ABANDONED");
    assert_eq!((&ended["outcome"], &ended["ended_by"]), (&"opted_out".into(), &"contact".into()));
    let refused = relay.fails(&["create", "--objective", "Again", "--contact", "+56 9 1234 5678", "--todo", "t"], 5);
    let since = relay.json(&["optout", "list"])[0]["since"].as_str().unwrap()[..10].to_string();
    assert!(refused.contains(&format!("+56912345678 asked on {since}")), "{refused}");
    assert_eq!(outbox(&relay).len(), 2, "nothing more was sent");

    let again = relay.create(&["--override-opt-out", "she phoned and asked us to write"]);
    let started = relay.wait_for(&again, "the override's first message", |i| i["first_delivered_at"].is_string());
    assert_eq!(started["opt_out_override"], "she phoned and asked us to write");
    let listed = relay.json(&["optout", "list"]);
    assert_eq!(listed[0]["overrides"][0]["instance_id"], again.as_str());
}
