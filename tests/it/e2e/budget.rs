//! Budgets and deadlines end to end with the real binary: each budget ends
//! its conversation with its reason, wrong budgets are refused in the
//! caller's words, and config.json gives the defaults. (What the engine
//! enforces, whatever the agent does, is `engine::budget`.)

use chrono::{DateTime, Utc};

/// End to end, with the real binary on the sandbox channel and the scripted
/// model (two calls of 110 tokens a turn): each budget ends its
/// conversation, ABANDONED, with its reason; `relay get` shows what is spent.
#[test]
fn each_budget_ends_a_conversation_with_its_reason_end_to_end() {
    use crate::support::model::{sends_each_turn, with_model};
    use serde_json::json;

    let (relay, _model) = with_model(sends_each_turn(|n| format!("Message {n}")));
    let create = |contact: &str, extra: &[&str]| {
        let mut args = vec!["create", "--objective", "Confirm the delivery date", "--contact", contact];
        args.extend_from_slice(&["--todo", "Ask which day suits"]);
        args.extend_from_slice(extra);
        relay.ok(&args).trim().to_string()
    };
    let turns = create("+56912345678", &["--heartbeat-interval", "1s", "--max-turns", "2"]);
    let tokens = create("+447911123456", &["--heartbeat-interval", "1s", "--max-tokens", "300"]);
    let expires = create("+34612345678", &["--heartbeat-interval", "1h", "--expires-in", "2s"]);

    let ended = relay.json(&["wait", &turns, "--until", "terminal"]);
    assert_eq!((&ended["state"], &ended["ended_by"]), (&json!("ABANDONED"), &json!("budget")));
    assert_eq!(ended["summary"], "The conversation reached its budget of 2 turns.");
    assert_eq!((&ended["budget"]["reached"], &ended["turns_taken"]), (&json!("max_turns"), &json!(2)));
    let shown = relay.ok(&["get", &turns]);
    assert!(shown.contains("budget      2 of 2 turns (reached: max_turns)"), "{shown}");
    assert!(shown.contains("(ended by budget)"), "{shown}");

    let ended = relay.json(&["wait", &tokens, "--until", "terminal"]);
    assert_eq!((&ended["state"], &ended["ended_by"]), (&json!("ABANDONED"), &json!("budget")));
    assert_eq!(ended["summary"], "The conversation reached its budget of 300 tokens (440 used).");
    assert_eq!(ended["budget"]["reached"], "max_tokens");

    let ended = relay.json(&["wait", &expires, "--until", "terminal"]);
    assert_eq!((&ended["state"], &ended["ended_by"]), (&json!("ABANDONED"), &json!("expired")));
    assert_eq!(ended["budget"]["reached"], "expires_at");
    let summary = ended["summary"].as_str().unwrap();
    assert!(summary.starts_with("The conversation reached its deadline ("), "{summary}");
    assert_eq!(relay.transcript(&expires).iter().filter(|m| m["role"] == "agent").count(), 1);
}

/// Wrong budgets get clear errors in the words the caller used (exit 2):
/// a deadline of 0s, negative, unreadable or past, both deadlines, 0 turns;
/// the API names its fields. config.json's `budget` fills what create leaves out.
#[test]
fn wrong_budgets_are_refused_in_the_callers_words_and_the_config_gives_defaults() {
    use crate::support::{CONTACT, Relay};

    let relay = Relay::sandbox();
    relay.edit_config(|config| config["budget"]["expires_in"] = "7d".into());
    relay.ok(&["start"]);
    let base = ["create", "--objective", "x", "--contact", CONTACT, "--todo", "y"];
    let refused = |extra: &[&str], said: &str| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let stderr = relay.fails(&args, 2);
        assert!(stderr.contains(said), "{extra:?}: {stderr}");
    };
    refused(&["--expires-in", "0s"], "the deadline must be longer than 0s");
    refused(&["--expires-in", "-5s"], "a deadline cannot be in the past");
    refused(&["--expires-in", "soon"], "'soon' is not a duration");
    refused(&["--expires-in", "400d"], "must be at most 365d");
    refused(&["--expires-at", "2020-01-01T00:00:00Z"], "the deadline 2020-01-01T00:00:00Z has already passed");
    refused(&["--expires-at", "tomorrow"], "'tomorrow' is not a time: use RFC 3339");
    let soon = (Utc::now() + chrono::Duration::days(2)).to_rfc3339();
    refused(&["--expires-in", "1d", "--expires-at", &soon], "cannot be used with");
    refused(&["--expires-at", "2099-01-01T00:00:00Z"], "is more than 365 days away");
    refused(&["--max-turns", "0"], "give at least 1 turn");
    refused(&["--max-tokens", "many"], "'many' is not a number of tokens");
    assert!(relay.instances().is_empty(), "nothing was created");

    let body = r#"{"objective":"x","target_contact":"+56912345678","todos":[{"text":"y"}],"budget":{"max_turns":0}}"#;
    let (status, said) = relay.http("POST", "/instances", &[("Content-Type", "application/json")], Some(body));
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("max_turns must be at least 1"), "{said}");

    // Left out: config.json's deadline, a week from now; given: its own.
    let id = relay.create(&[]);
    let got = relay.get(&id);
    let at: DateTime<Utc> = got["budget"]["expires_at"].as_str().unwrap().parse().unwrap();
    let created: DateTime<Utc> = got["created_at"].as_str().unwrap().parse().unwrap();
    assert_eq!(at - created, chrono::Duration::days(7));
    assert_eq!((&got["budget"]["max_turns"], &got["turns_taken"]), (&serde_json::Value::Null, &serde_json::json!(1)));
    let shown = relay.ok(&["get", &id]);
    assert!(shown.contains("budget      expires in 6days"), "{shown}");
}
