//! The do-not-contact list from the operator's side, end to end with the
//! real binary: `relay optout list | add | remove` and the `/opt-outs`
//! routes. Listing a number ends its conversations and refuses the next
//! create; taking it off lets relay write again; a number is the same entry
//! however it is written. (What the engine does with an opt-out, STOP and
//! the agent's tool, is in `engine::courtesy`; the MCP tools in `contract::mcp`.)

use serde_json::{Value, json};

use crate::support::*;

/// The number as people write it: the entry is the E.164 one.
const CONTACT_SPACED: &str = "+56 9 1234 5678";

#[test]
fn a_listed_number_has_its_conversations_ended_and_is_refused_until_it_is_taken_off() {
    let relay = Relay::started();
    let live = relay.create(&[]);
    let queued = relay.create(&[]);
    assert_eq!(relay.state(&queued), "QUEUED");

    let said = relay.ok(&["optout", "add", CONTACT_SPACED, "--reason", "asked by phone not to be written to"]);
    assert!(said.contains("+56912345678 is on the do-not-contact list"), "{said}");
    for id in [&live, &queued] {
        let ended = relay.wait_for_state(id, "ABANDONED");
        assert_eq!((&ended["outcome"], &ended["ended_by"]), (&json!("opted_out"), &json!("operator")), "{ended:#}");
    }

    // Refused, naming who listed it and when, and how to write anyway.
    let refused = relay.fails(&["create", "--objective", "o", "--contact", CONTACT, "--todo", "t"], 5);
    assert!(refused.contains("+56912345678 was listed by the operator on "), "{refused}");
    assert!(refused.contains("--override-opt-out"), "{refused}");

    let listed = relay.ok(&["optout", "list"]);
    for shown in ["CONTACT", "+56912345678", "operator", "asked by phone not to be written to"] {
        assert!(listed.contains(shown), "{shown} not in:\n{listed}");
    }
    let entries = relay.json(&["optout", "list"]);
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries:#}");
    assert_eq!(entries[0]["contact"], CONTACT);
    assert_eq!(entries[0]["source"], "operator");
    assert_eq!(entries[0]["reason"], "asked by phone not to be written to");

    // Listed again: the entry stays as it was, and says so.
    let again = relay.json(&["optout", "add", CONTACT, "--reason", "another reason"]);
    assert_eq!((&again["added"], &again["reason"]), (&json!(false), &json!("asked by phone not to be written to")));
    let said = relay.ok(&["optout", "add", CONTACT, "--reason", "another reason"]);
    assert!(said.contains("was on the do-not-contact list already"), "{said}");

    // Written another way, it is the same entry.
    let removed = relay.json(&["optout", "remove", "+56-9-1234-5678"]);
    assert_eq!((&removed["contact"], &removed["source"]), (&json!(CONTACT), &json!("operator")));
    assert_eq!(relay.json(&["optout", "list"]), json!([]));
    assert_eq!(relay.ok(&["optout", "list"]).trim(), "No numbers on the do-not-contact list.");
    relay.create(&[]);

    let said = relay.ok(&["optout", "add", CONTACT, "--reason", "changed their mind"]);
    assert!(said.contains("is on the do-not-contact list"), "{said}");
    let said = relay.ok(&["optout", "remove", CONTACT_SPACED]);
    assert!(said.contains("+56912345678 is off the do-not-contact list") && said.contains("may write"), "{said}");
}

/// Wrong input is refused in the user's words, with the documented exit
/// codes, before anything changes.
/// A create for a listed number is refused saying that writing anyway is
/// a person's decision, and naming the override as the caller would give
/// it: the command line's flag, the API's field (MCP's argument is in
/// `mcp`). No surface is told another's words.
#[test]
fn the_refusal_leaves_the_override_to_a_person_in_the_callers_words() {
    let relay = Relay::started();
    relay.ok(&["optout", "add", CONTACT, "--reason", "asked by phone"]);
    let person = "Writing to them anyway is a person's decision (the operator's), not an agent's";
    let create = ["create", "--objective", "o", "--contact", CONTACT, "--todo", "t"];
    let text = relay.fails(&create, 5);
    let json = relay.fails(&[&create[..], &["--json"]].concat(), 5);
    let json: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(json["code"], "opted_out");
    let body = json!({"objective": "o", "target_contact": CONTACT, "todos": [{"text": "t"}]}).to_string();
    let (status, http) = relay.http("POST", "/instances", &[], Some(&body));
    assert_eq!(status, 409, "{http}");
    let http: Value = serde_json::from_str(&http).unwrap();
    let cli_words = "only on their word does `relay create --override-opt-out \"<their reason>\"` write to them";
    let http_words = "only on their word does a request with \"override_opt_out\": \"<their reason>\" write to them";
    for (surface, said, words, foreign) in [
        ("relay create", text.as_str(), cli_words, "\"override_opt_out\""),
        ("relay create --json", json["error"].as_str().unwrap(), cli_words, "\"override_opt_out\""),
        ("POST /instances", http["error"].as_str().unwrap(), http_words, "--override-opt-out"),
    ] {
        assert!(said.contains("+56912345678 was listed by the operator on "), "{surface}: {said}");
        assert!(said.contains(person) && said.contains(words), "{surface}: {said}");
        assert!(!said.contains(foreign), "{surface}: {said}");
    }
    assert_eq!(relay.instances().len(), 0, "nothing was created");
}

#[test]
fn a_malformed_number_or_one_not_listed_is_refused_and_says_why() {
    let relay = Relay::started();
    for args in [&["optout", "add", "+56 9 TAXI 2222", "--reason", "r"][..], &["optout", "remove", "+56 9 TAXI 2222"]] {
        let error = relay.fails(args, 2);
        assert!(error.contains("the letter 'T' cannot be part of one"), "{args:?}: {error}");
    }
    let error = relay.fails(&["optout", "remove", "56912345678"], 2);
    assert!(error.contains("start with + and the country code"), "{error}");
    // Not a path either: a number is checked before it goes into a URL.
    let error = relay.fails(&["optout", "remove", "../status"], 2);
    assert!(error.contains("is not a phone number"), "{error}");
    let error = relay.fails(&["optout", "add", CONTACT], 2);
    assert!(error.contains("--reason"), "{error}");
    let error = relay.fails(&["optout", "add", CONTACT, "--reason", "   "], 2);
    assert!(error.contains("reason"), "{error}");

    let error = relay.fails(&["optout", "remove", CONTACT_SPACED], 4);
    assert_eq!(error.trim(), "relay: +56912345678 is not on the do-not-contact list");
    let error: Value = serde_json::from_str(&relay.fails(&["optout", "remove", CONTACT, "--json"], 4)).unwrap();
    assert_eq!(error["code"], "not_found", "{error}");
    assert_eq!(relay.json(&["optout", "list"]), json!([]), "nothing was listed");

    // Without a daemon the number is still checked first.
    relay.ok(&["stop"]);
    assert!(relay.fails(&["optout", "remove", "+56 9 TAXI"], 2).contains("the letter 'T'"));
    assert!(relay.fails(&["optout", "list"], 3).contains("relay start"));
}

/// The routes themselves: 201 for a new entry, 200 for one listed already,
/// 404 for a number not listed, 400 for what is not a number; the number in
/// the path in any accepted form, URL-encoded.
#[test]
fn the_opt_out_routes_answer_as_documented() {
    let relay = Relay::started();
    let body = json!({"contact": CONTACT_SPACED, "reason": "asked by email"}).to_string();
    let (status, added) = relay.http("POST", "/opt-outs", &[], Some(&body));
    assert_eq!(status, 201, "{added}");
    let added: Value = serde_json::from_str(&added).unwrap();
    assert_eq!(
        (&added["contact"], &added["added"], &added["source"]),
        (&json!(CONTACT), &json!(true), &json!("operator"))
    );
    let (status, again) = relay.http("POST", "/opt-outs", &[], Some(&body));
    assert_eq!(status, 200, "{again}");
    assert_eq!(serde_json::from_str::<Value>(&again).unwrap()["added"], false);

    let create = json!({"objective": "o", "target_contact": CONTACT, "todos": [{"text": "t"}]}).to_string();
    let (status, refused) = relay.http("POST", "/instances", &[], Some(&create));
    assert_eq!(status, 409, "{refused}");
    assert_eq!(serde_json::from_str::<Value>(&refused).unwrap()["code"], "opted_out");

    for (body, what) in [
        (json!({"contact": "+56 9 TAXI", "reason": "r"}), "cannot be part of one"),
        (json!({"contact": CONTACT, "reason": ""}), "reason"),
        (json!({"contact": CONTACT}), "reason"),
        (json!({"contact": CONTACT, "reason": "r", "until": "never"}), "unknown field"),
    ] {
        let (status, error) = relay.http("POST", "/opt-outs", &[], Some(&body.to_string()));
        assert_eq!(status, 400, "{body}: {error}");
        assert!(error.contains(what) && error.contains("invalid_request"), "{body}: {error}");
    }

    let (status, removed) = relay.http("DELETE", "/opt-outs/%2B56%209%201234%205678", &[], None);
    assert_eq!(status, 200, "{removed}");
    assert_eq!(serde_json::from_str::<Value>(&removed).unwrap()["contact"], CONTACT);
    let (status, missing) = relay.http("DELETE", &format!("/opt-outs/{CONTACT}"), &[], None);
    assert_eq!(status, 404, "{missing}");
    assert!(missing.contains("is not on the do-not-contact list") && missing.contains("not_found"), "{missing}");
    let (status, wrong) = relay.http("DELETE", "/opt-outs/56912345678", &[], None);
    assert_eq!(status, 400, "{wrong}");
    let (status, listed) = relay.http("GET", "/opt-outs", &[], None);
    assert_eq!((status, listed.as_str()), (200, "[]"));
}

/// Real numbers, in E.164.
const NUMBERS: &[&str] = &["+56912345678", "+14155552671", "+447911123456", "+4915123456789", "+5511987654321"];

/// `e164` with separators put before some of its digits.
fn written(e164: &str, separators: &[(usize, String)]) -> String {
    let mut out = String::from("+");
    for (i, digit) in e164[1..].chars().enumerate() {
        for (at, separator) in separators {
            if *at == i {
                out.push_str(separator);
            }
        }
        out.push(digit);
    }
    out
}

/// Every byte but letters and digits as %XX, for a path segment.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// However a number is written (spaces, dashes, dots, brackets), it is one
/// entry: listed one way, a create written another way is refused, and a
/// remove written a third way takes it off. One daemon, a few cases, each
/// a handful of requests.
#[test]
fn a_number_written_any_way_is_the_same_entry() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let relay = Relay::started();
    let separators = || proptest::collection::vec((0usize..15, "[ .()-]{1,2}"), 0..5);
    let mut runner = TestRunner::new(Config { cases: 16, failure_persistence: None, ..Config::default() });
    runner
        .run(&(0..NUMBERS.len(), separators(), separators(), separators()), |(index, listed, created, removed)| {
            let e164 = NUMBERS[index];
            let (listed, created, removed) = (written(e164, &listed), written(e164, &created), written(e164, &removed));
            let body = json!({"contact": listed, "reason": "asked"}).to_string();
            let (status, added) = relay.http("POST", "/opt-outs", &[], Some(&body));
            prop_assert_eq!(status, 201, "{} -> {}", listed, added);
            prop_assert_eq!(&serde_json::from_str::<Value>(&added).unwrap()["contact"], &json!(e164));

            let create = json!({"objective": "o", "target_contact": created, "todos": [{"text": "t"}]}).to_string();
            let (status, refused) = relay.http("POST", "/instances", &[], Some(&create));
            prop_assert_eq!(status, 409, "listed as {}, created as {}: {}", listed, created, refused);

            let (status, gone) = relay.http("DELETE", &format!("/opt-outs/{}", percent_encoded(&removed)), &[], None);
            prop_assert_eq!(status, 200, "listed as {}, removed as {}: {}", listed, removed, gone);
            let (_, left) = relay.http("GET", "/opt-outs", &[], None);
            prop_assert_eq!(left.as_str(), "[]");
            Ok(())
        })
        .unwrap();
    assert!(relay.instances().is_empty(), "every create was refused");
}
