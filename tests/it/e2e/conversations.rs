//! Conversations end to end on the sandbox channel, with no model configured
//! (every agent turn hands the conversation to a human): the state machine,
//! heartbeats, the queue, operator commands and restart recovery.

use crate::support::*;
use serde_json::{Value, json};

#[test]
fn without_a_model_the_operator_drives_the_conversation() {
    let relay = Relay::started();
    let id = relay.create(&["--todo", "Confirm the address"]);
    assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4, "plain create prints only a UUIDv4");

    let needs = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert!(needs["intervention_reason"].as_str().unwrap().contains("no model is configured"), "{needs:#}");
    assert_eq!(history_triggers(&needs), ["create", "agent_sends_first_message", "agent_error"]);
    let todos = needs["todos"].as_array().unwrap();
    assert_eq!((todos[0]["id"].as_str(), todos[1]["id"].as_str()), (Some("1"), Some("2")));
    assert!(todos.iter().all(|t| t["status"] == "pending"));

    let sent = relay.json(&["send", &id, "Hi! Which day suits you for the delivery?"]);
    assert_eq!(sent["role"], "manual");
    let waiting = relay.get(&id);
    assert_eq!(waiting["state"], "WAITING_FOR_REPLY");
    assert!(waiting["next_heartbeat_at"].is_string(), "a send arms the heartbeat");
    assert_eq!(&history_triggers(&waiting)[3..], ["manual_send", "message_sent"]);

    let said = relay.json(&["sandbox", "say", CONTACT, "Friday works for me"]);
    assert_eq!(said["instance_id"], id.as_str());
    let transcript = relay.transcript(&id);
    let lines: Vec<(&str, &str)> =
        transcript.iter().map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap())).collect();
    assert_eq!(lines, [("manual", "Hi! Which day suits you for the delivery?"), ("contact", "Friday works for me")]);
    for m in &transcript {
        assert_eq!(m["instance_id"], id.as_str());
        assert!(m["id"].is_string() && m["timestamp"].is_string());
    }
    // The reply woke the agent, which (without a model) asks for a human again.
    relay.wait_for(&id, "the reply to be handled", |i| {
        i["state"] == "NEEDS_HUMAN_INTERVENTION" && history_triggers(i).contains(&"contact_replies".to_string())
    });
    assert_eq!(relay.record(&id)["unanswered_contact_messages"], 0);

    let outbox = relay.json(&["sandbox", "outbox"]);
    assert_eq!(outbox.as_array().unwrap().len(), 1);
    assert_eq!(outbox[0]["contact"], CONTACT);
    assert_eq!(outbox[0]["text"], "Hi! Which day suits you for the delivery?");
}

#[test]
fn silence_past_max_followups_abandons_the_conversation() {
    let relay = Relay::started();
    let id = relay.create(&["--heartbeat-interval", "1s", "--max-followups", "0"]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &id, "Are you there?"]);
    let abandoned = relay.wait_for_state(&id, "ABANDONED");
    assert_eq!(abandoned["follow_up_count"], 0, "no follow-up was sent");
    assert_eq!(abandoned["summary"], "The contact did not reply; no follow-up was allowed (max_followups is 0).");
    assert!(abandoned["next_heartbeat_at"].is_null());
    let triggers = history_triggers(&abandoned);
    assert_eq!(&triggers[triggers.len() - 2..], ["heartbeat_fires", "max_followups_exceeded"]);
    // The heartbeat fired about one interval after the send.
    let history = abandoned["history"].as_array().unwrap();
    let at = |i: usize| chrono::DateTime::parse_from_rfc3339(history[i]["timestamp"].as_str().unwrap()).unwrap();
    let waited = at(history.len() - 2) - at(history.len() - 3);
    assert!(waited.num_milliseconds() >= 990, "fired early: {waited}");
    // Terminal states absorb everything.
    relay.fails(&["resume", &id], 5);
    relay.fails(&["send", &id, "hello?"], 5);
}

#[test]
fn a_heartbeat_asks_the_agent_for_a_follow_up() {
    let relay = Relay::started();
    let id = relay.create(&["--heartbeat-interval", "1s", "--max-followups", "3"]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &id, "Are you there?"]);
    // No model to write the follow-up: a human is asked instead, and no
    // follow-up was sent, so none is counted.
    let after = relay.wait_for(&id, "the follow-up turn", |i| {
        i["state"] == "NEEDS_HUMAN_INTERVENTION" && history_triggers(i).last().unwrap() == "agent_error"
    });
    let triggers = history_triggers(&after);
    assert_eq!(&triggers[triggers.len() - 2..], ["heartbeat_fires", "agent_error"]);
    assert_eq!(after["follow_up_count"], 0);
}

#[test]
fn pause_and_resume_restore_the_exact_state() {
    let relay = Relay::started();

    // From NEEDS_HUMAN_INTERVENTION.
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let paused = relay.json(&["pause", &id]);
    assert_eq!(paused["state"], "PAUSED");
    assert_eq!(paused["previous_state"], "NEEDS_HUMAN_INTERVENTION");
    relay.fails(&["pause", &id], 5);
    let resumed = relay.json(&["resume", &id]);
    assert_eq!(resumed["state"], "NEEDS_HUMAN_INTERVENTION");
    assert!(resumed["previous_state"].is_null());

    // From WAITING_FOR_REPLY: the heartbeat stops, and resumes with the time that was left.
    relay.ok(&["send", &id, "Hello"]);
    let waiting = relay.get(&id);
    assert_eq!(waiting["state"], "WAITING_FOR_REPLY");
    let paused = relay.json(&["pause", &id]);
    assert!(paused["next_heartbeat_at"].is_null(), "paused conversations have no timer");
    let left = relay.record(&id)["paused_heartbeat_remaining_ms"].as_u64().unwrap();
    assert!(left > 29 * 60 * 1000 && left <= 30 * 60 * 1000, "{left}");
    // A contact message while paused is kept, and not answered.
    relay.ok(&["sandbox", "say", CONTACT, "I am here"]);
    let still = relay.get(&id);
    assert_eq!(still["state"], "PAUSED");
    assert_eq!(relay.record(&id)["unanswered_contact_messages"], 1);
    // Resume: back to WAITING_FOR_REPLY, then the waiting message wakes the agent.
    let resumed = relay.json(&["resume", &id]);
    let resumed_entry = resumed["history"].as_array().unwrap().iter().rev().find(|t| t["trigger"] == "resume").unwrap();
    assert_eq!(resumed_entry["to_state"], "WAITING_FOR_REPLY");
    let handled = relay.wait_for(&id, "the waiting message to be handled", |i| {
        i["state"] == "NEEDS_HUMAN_INTERVENTION" && relay.record(&id)["unanswered_contact_messages"] == 0
    });
    assert!(history_triggers(&handled).ends_with(&[
        "resume".to_string(),
        "contact_replies".to_string(),
        "agent_processes_reply".to_string(),
        "agent_error".to_string()
    ]));

    // From QUEUED.
    let queued = relay.create(&[]);
    assert_eq!(relay.state(&queued), "QUEUED");
    assert_eq!(relay.json(&["pause", &queued])["previous_state"], "QUEUED");
    assert_eq!(relay.json(&["resume", &queued])["state"], "QUEUED");
}

#[test]
fn a_second_conversation_with_a_contact_waits_its_turn() {
    let relay = Relay::started();
    let first = relay.json(&["create", "--objective", "First", "--contact", CONTACT, "--todo", "a"]);
    assert_eq!(first["state"], "CREATED");
    let second = relay.json(&["create", "--objective", "Second", "--contact", "+56 9 1234 5678", "--todo", "b"]);
    let third = relay.json(&["create", "--objective", "Third", "--contact", CONTACT, "--todo", "c"]);
    let other = relay.json(&["create", "--objective", "Other", "--contact", OTHER_CONTACT, "--todo", "d"]);
    assert_eq!(second["state"], "QUEUED");
    assert_eq!(third["state"], "QUEUED");
    assert_eq!(other["state"], "CREATED", "another contact is not queued");
    let (first, second, third) =
        (first["id"].as_str().unwrap(), second["id"].as_str().unwrap(), third["id"].as_str().unwrap());
    assert_eq!(history_triggers(&relay.get(second)), ["create", "contact_has_active_instance"]);

    let queued = relay.json(&["list", "--state", "queued"]);
    assert_eq!(queued.as_array().unwrap().len(), 2);
    assert_eq!(relay.json(&["list", "--contact", CONTACT]).as_array().unwrap().len(), 3);

    // Contact messages go to the live conversation only.
    relay.wait_for_state(first, "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(relay.json(&["sandbox", "say", CONTACT, "hi"])["instance_id"], first);

    // The live one ends: the oldest queued one starts, the next keeps waiting.
    relay.ok(&["cancel", first]);
    let promoted = relay.wait_for_state(second, "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(&history_triggers(&promoted)[..3], ["create", "contact_has_active_instance", "prior_instance_terminal"]);
    assert_eq!(relay.state(third), "QUEUED");
    relay.ok(&["cancel", second]);
    relay.wait_for_state(third, "NEEDS_HUMAN_INTERVENTION");
}

#[test]
fn cancel_fails_the_conversation_and_sends_nothing() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let cancelled = relay.json(&["cancel", &id]);
    assert_eq!(cancelled["state"], "FAILED");
    assert_eq!(cancelled["failure_reason"], "cancelled");
    assert_eq!(relay.json(&["sandbox", "outbox"]), Value::Array(vec![]));
    assert!(relay.transcript(&id).is_empty());
    // Cancelling again is an invalid transition that names the state.
    let stderr = relay.fails(&["cancel", &id], 5);
    assert!(stderr.contains("FAILED") && stderr.contains("cancel"), "{stderr}");
}

#[test]
fn invalid_transitions_are_409_naming_the_state_and_event() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let (status, body) = relay.http("POST", &format!("/instances/{id}/resume"), &[], None);
    assert_eq!(status, 200, "{body}");
    let state = relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert!(history_triggers(&state).contains(&"resume".to_string()));
    relay.ok(&["cancel", &id]);
    let (status, body) = relay.http("POST", &format!("/instances/{id}/pause"), &[], None);
    assert_eq!(status, 409);
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["code"], "invalid_transition");
    assert_eq!(error["current_state"], "FAILED");
    assert_eq!(error["event"], "pause");
    assert!(error["error"].as_str().unwrap().contains("FAILED"));
    // ... and logged with the instance, state and event.
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    assert!(
        log.lines().any(|l| l.contains("invalid transition refused")
            && l.contains(&id)
            && l.contains("FAILED")
            && l.contains("pause")),
        "{log}"
    );
    // Queued conversations cannot be written to yet.
    let live = relay.create(&[]);
    let queued = relay.create(&[]);
    relay.wait_for_state(&live, "NEEDS_HUMAN_INTERVENTION");
    assert!(relay.fails(&["send", &queued, "hi"], 5).contains("QUEUED"));
}

/// A refused command says what the operator typed and why, never an
/// internal event name (`operator_answers`, `manual_send`).
#[test]
fn refusals_name_the_operators_words_and_the_reason() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &id, "Hello"]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let said = |args: &[&str]| relay.fails(args, 5);
    assert!(
        said(&["answer", &id, "yes"])
            .contains("cannot answer: the conversation is WAITING_FOR_REPLY, not waiting for you")
    );
    assert!(said(&["resume", &id]).contains("cannot resume: the conversation is WAITING_FOR_REPLY, not paused or"));
    relay.ok(&["pause", &id]);
    assert!(said(&["pause", &id]).contains("cannot pause: the conversation is PAUSED already"));
    relay.ok(&["cancel", &id]);
    let ended = said(&["send", &id, "hi"]);
    assert!(ended.contains("cannot send: the conversation is FAILED, which has ended"), "{ended}");
    let queued_behind = relay.create(&[]);
    let queued = relay.create(&[]);
    relay.wait_for_state(&queued_behind, "NEEDS_HUMAN_INTERVENTION");
    let waits = said(&["send", &queued, "hi"]);
    assert!(waits.contains("cannot send: the conversation is QUEUED: it waits for the contact's earlier"), "{waits}");
    relay.ok(&["pause", &queued]);
    assert!(said(&["send", &queued, "hi"]).contains("cannot send: the conversation is PAUSED before it started"));
    for args in [vec!["answer", queued.as_str(), "x"], vec!["resume", id.as_str()], vec!["send", id.as_str(), "x"]] {
        let text = relay.run(&args).stderr;
        for internal in ["operator_answers", "manual_send", "a conversation that is"] {
            assert!(!text.contains(internal), "{text}");
        }
    }
}

/// The operator paused the agent to take over: `relay send` works on a
/// PAUSED conversation, which stays paused; resumed, it waits for the reply
/// to what was sent, with a fresh heartbeat.
#[test]
fn the_operator_can_write_while_the_conversation_is_paused() {
    let relay = Relay::started();
    let id = relay.create(&["--heartbeat-interval", "1h"]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &id, "Hello"]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["pause", &id]);
    let sent = relay.json(&["send", &id, "Ana here: I will handle this myself."]);
    assert_eq!(sent["role"], "manual");
    let paused = relay.get(&id);
    assert_eq!((&paused["state"], &paused["previous_state"]), (&json!("PAUSED"), &json!("WAITING_FOR_REPLY")));
    assert_eq!(
        relay.record(&id)["paused_heartbeat_remaining_ms"],
        3_600_000,
        "the wait starts afresh from the operator's message"
    );
    let texts: Vec<String> = relay.transcript(&id).iter().map(|m| m["content"].as_str().unwrap().to_string()).collect();
    assert_eq!(texts, ["Hello", "Ana here: I will handle this myself."]);
    let resumed = relay.json(&["resume", &id]);
    assert_eq!(resumed["state"], "WAITING_FOR_REPLY");
    assert!(resumed["next_heartbeat_at"].is_string());
}

#[test]
fn unknown_and_ambiguous_ids_are_clear_errors() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    // A unique prefix works everywhere an id does.
    assert_eq!(relay.get(&id[..6])["id"], id.as_str());
    assert_eq!(relay.get(&id.to_uppercase())["id"], id.as_str());
    // Unknown full id: 404 / exit 4.
    let unknown = uuid::Uuid::new_v4().to_string();
    assert!(relay.fails(&["get", &unknown], 4).contains("no conversation"));
    relay.fails(&["pause", &unknown], 4);
    let (status, body) = relay.http("GET", &format!("/instances/{unknown}"), &[], None);
    assert_eq!(status, 404);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], "not_found");
    // Too short, or not an id at all.
    assert!(relay.fails(&["get", &id[..2]], 2).contains("at least 4"));
    relay.fails(&["get", "not-an-id!"], 2);
}

#[test]
fn ambiguous_prefixes_list_the_candidates() {
    let relay = Relay::sandbox();
    // Two conversations whose ids share a prefix, written as relay writes them.
    for id in ["abcd0000-0000-4000-8000-000000000001", "abcd0000-0000-4000-8000-000000000002"] {
        let instance = serde_json::json!({
            "id": id, "objective": "o", "target_contact": CONTACT,
            "todos": [{"id": "1", "text": "t", "status": "pending"}],
            "state": "COMPLETED", "previous_state": null,
            "heartbeat_config": {"interval_ms": 1000, "max_followups": 1},
            "follow_up_count": 0, "failure_reason": null,
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        });
        std::fs::create_dir_all(relay.path().join("instances")).unwrap();
        std::fs::write(relay.path().join(format!("instances/{id}.json")), instance.to_string()).unwrap();
    }
    relay.ok(&["start"]);
    let stderr = relay.fails(&["get", "abcd0000"], 2);
    assert!(stderr.contains("matches 2 conversations") && stderr.contains("-000000000001"), "{stderr}");
    assert_eq!(relay.get("abcd0000-0000-4000-8000-000000000002")["state"], "COMPLETED");
}

#[test]
fn bad_arguments_are_refused_before_anything_is_created() {
    let relay = Relay::started();
    let base = ["create", "--objective", "o", "--todo", "t", "--contact"];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [base, extra].concat()
    }
    assert!(relay.fails(&with(&base, &["912345678"]), 2).contains("international format"));
    assert!(relay.fails(&with(&base, &["+999123"]), 2).contains("phone number"));
    assert!(relay.fails(&with(&base, &[CONTACT, "--heartbeat-interval", "soon"]), 2).contains("not a duration"));
    assert!(relay.fails(&with(&base, &[CONTACT, "--heartbeat-interval", "0s"]), 2).contains("between 1s"));
    relay.fails(&["create", "--objective", "o", "--contact", CONTACT], 2); // no --todo
    assert!(
        relay
            .fails(&["create", "--objective", "  ", "--contact", CONTACT, "--todo", "t"], 2)
            .contains("objective is empty")
    );
    assert!(relay.fails(&["list", "--state", "SLEEPING"], 2).contains("expected one of"));
    assert_eq!(relay.json(&["list"]), Value::Array(vec![]));
    // Durations in seconds, minutes and hours are accepted.
    for (text, ms) in [("90s", 90_000), ("30m", 1_800_000), ("2h", 7_200_000), ("1s", 1000)] {
        let id = relay.create(&["--heartbeat-interval", text]);
        assert_eq!(relay.get(&id)["heartbeat_config"]["interval_ms"], ms);
        relay.ok(&["cancel", &id]);
    }
    let id = relay.create(&[]);
    let defaults = relay.get(&id)["heartbeat_config"].clone();
    assert_eq!(defaults, serde_json::json!({"interval_ms": 1_800_000, "max_followups": 5}));
}

#[test]
fn a_restart_restores_everything_including_timers() {
    let relay = Relay::started();
    let waiting = relay.create(&[]);
    relay.wait_for_state(&waiting, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &waiting, "Hello"]);
    relay.ok(&["sandbox", "say", CONTACT, "Hi"]);
    relay.wait_for(&waiting, "the reply to be handled", |i| {
        i["state"] == "NEEDS_HUMAN_INTERVENTION" && relay.record(&waiting)["unanswered_contact_messages"] == 0
    });
    relay.ok(&["send", &waiting, "Which day?"]);
    let queued = relay.create(&[]);
    let short = relay.json(&[
        "create",
        "--objective",
        "o",
        "--contact",
        OTHER_CONTACT,
        "--todo",
        "t",
        "--heartbeat-interval",
        "1s",
        "--max-followups",
        "0",
    ])["id"]
        .as_str()
        .unwrap()
        .to_string();
    relay.wait_for_state(&short, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &short, "Ping"]);

    let before: Vec<Value> = [&waiting, &queued].iter().map(|id| relay.get(id)).collect();
    let transcript_before = relay.transcript(&waiting);
    let outbox_before = relay.json(&["sandbox", "outbox"]);
    relay.ok(&["stop"]);
    relay.ok(&["start"]);

    let after: Vec<Value> = [&waiting, &queued].iter().map(|id| relay.get(id)).collect();
    assert_eq!(before, after, "instances survive a restart unchanged (deadline included)");
    assert_eq!(relay.transcript(&waiting), transcript_before);
    assert_eq!(relay.json(&["sandbox", "outbox"]), outbox_before);
    // The short heartbeat was re-armed and fires (at once if already past).
    relay.wait_for_state(&short, "ABANDONED");
    let status = relay.json(&["status"]);
    assert_eq!(status["total_instance_count"], 3);
    assert_eq!(status["active_instance_count"], 2);
}

#[test]
fn a_killed_daemon_leaves_only_files_that_parse() {
    let relay = Relay::started();
    for n in 0..5 {
        let id = relay.create(&[]);
        relay.wait_for_state(&id, if n == 0 { "NEEDS_HUMAN_INTERVENTION" } else { "QUEUED" });
    }
    let pid = relay.pid().unwrap();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    while relay.daemon_alive(pid) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for entry in std::fs::read_dir(relay.path().join("instances")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            relay::store::record_file::load(&path).unwrap_or_else(|e| panic!("{} does not read: {e}", path.display()));
        }
    }
    // The stale pid file does not block a start; everything is back.
    relay.ok(&["start"]);
    assert_eq!(relay.json(&["list"]).as_array().unwrap().len(), 5);
}

#[test]
fn the_whatsapp_channel_without_a_link_serves_every_command() {
    let relay = Relay::init("whatsapp");
    relay.ok(&["start"]);
    let status = relay.json(&["status"]);
    assert_eq!(status["channel"]["kind"], "whatsapp");
    assert_eq!(status["channel"]["state"], "not linked");
    assert!(status["channel"]["detail"].as_str().unwrap().contains("relay init"), "{status}");
    assert_eq!(status["whatsapp_connected"], false);
    // Nothing dials without a link: the session folder has no connection to show.
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    // A send cannot go out: a clear error, and nothing changes or is recorded.
    let stderr = relay.fails(&["send", &id, "hello"], 1);
    assert!(stderr.contains("not linked"), "{stderr}");
    assert_eq!(relay.state(&id), "NEEDS_HUMAN_INTERVENTION");
    assert!(relay.transcript(&id).is_empty());
    // The sandbox commands say they need the sandbox.
    assert!(relay.fails(&["sandbox", "say", CONTACT, "hi"], 5).contains("need the sandbox channel"));
    assert!(relay.fails(&["sandbox", "outbox"], 5).contains("need the sandbox channel"));
    // The session folder holds keys: owner-only.
    assert_eq!(file_mode(&relay.path().join("whatsapp-auth")), 0o700);
}

#[test]
fn linking_is_refused_clearly_where_it_cannot_work() {
    let relay = Relay::started();
    let stderr = relay.fails(&["init", "--link"], 2);
    assert!(stderr.contains("uses the sandbox channel"), "{stderr}");
    // The running daemon still speaks the sandbox: it cannot pair.
    let stderr = relay.fails(&["init", "--channel", "whatsapp", "--link"], 5);
    assert!(stderr.contains("linking needs the whatsapp channel"), "{stderr}");
    let stderr = relay.fails(&["init", "--pair-phone", "912345678"], 2);
    assert!(stderr.contains("international format"), "{stderr}");
    // Asking for no link never links.
    relay.ok(&["init", "--no-link"]);
    assert_eq!(relay.json(&["status"])["channel"]["kind"], "sandbox");
}

#[test]
fn a_message_from_a_stranger_is_kept_and_counted_not_answered() {
    let relay = Relay::started();
    relay.ok(&["sandbox", "say", "+14155552671", "who is this?"]);
    let status = relay.json(&["status"]);
    assert_eq!(status["unrouted_message_count"], 1);
    let kept = std::fs::read_to_string(relay.path().join("unrouted.jsonl")).unwrap();
    assert!(kept.contains("who is this?"), "{kept}");
    assert!(relay.json(&["sandbox", "outbox"]).as_array().unwrap().is_empty());
    // Kept across restarts.
    relay.ok(&["stop"]);
    relay.ok(&["start"]);
    assert_eq!(relay.json(&["status"])["unrouted_message_count"], 1);
}

#[test]
fn plain_output_is_for_people_json_for_programs() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["send", &id, "Hello there"]);
    let list = relay.ok(&["list"]);
    assert!(list.contains(&id[..8]) && list.contains("WAITING_FOR_REPLY") && list.contains(CONTACT), "{list}");
    // A filter that matches nothing says so: "yet" is for a relay that
    // holds nothing.
    let none = relay.ok(&["list", "--state", "terminal"]);
    assert!(none.contains("No conversations match --state terminal") && !none.contains("yet"), "{none}");
    let get = relay.ok(&["get", &id]);
    assert!(get.contains("Ask which day suits") && get.contains("next        follow-up in"), "{get}");
    let transcript = relay.ok(&["transcript", &id]);
    assert!(transcript.contains("operator") && transcript.contains("Hello there"), "{transcript}");
    assert!(relay.ok(&["status"]).contains("sandbox"));
    // Every command prints exactly one JSON document with --json.
    for args in [vec!["list"], vec!["get", &id], vec!["transcript", &id], vec!["status"], vec!["sandbox", "outbox"]] {
        relay.json(&args);
    }
}

#[test]
fn a_send_right_after_create_always_ends_up_waiting_for_the_reply() {
    let relay = Relay::started();
    for contact in [CONTACT, OTHER_CONTACT, "+14155552671", "+4915123456789"] {
        let id = relay.ok(&["create", "--objective", "o", "--contact", contact, "--todo", "t"]).trim().to_string();
        // No waiting: the no-model hand-over happens in step with the send.
        relay.ok(&["send", &id, "Hello"]);
        assert_eq!(relay.state(&id), "WAITING_FOR_REPLY", "{contact}");
    }
}

#[test]
fn operator_commands_say_where_the_conversation_came_from() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    assert!(relay.ok(&["pause", &id]).contains("is now PAUSED (was NEEDS_HUMAN_INTERVENTION)"));
    assert!(relay.ok(&["resume", &id]).contains("(was PAUSED)"));
    assert!(relay.ok(&["cancel", &id]).contains("is now FAILED (was NEEDS_HUMAN_INTERVENTION)"));
}
