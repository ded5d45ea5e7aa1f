//! `GET /instances` and `relay list` a page at a time: newest first, the
//! next page's address in `Link`, how many follow in `Relay-Remaining`,
//! positions that hold while conversations are created and across a
//! restart. (The walk over generated lists is `api::paging`'s proptest.)

use serde_json::Value;

use crate::support::{CONTACT, OTHER_CONTACT, Relay};

/// The page at `path`: its conversations' ids, the next page's address and
/// how many follow.
fn page(relay: &Relay, path: &str) -> (Vec<String>, Option<String>, u64) {
    let (status, headers, body) = relay.http_with_headers("GET", path);
    assert_eq!(status, 200, "{body}");
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let next = header("link").map(|link| {
        let (address, rel) = link.split_once("; ").expect("`<address>; rel`");
        assert_eq!(rel, "rel=\"next\"");
        address.trim_start_matches('<').trim_end_matches('>').to_string()
    });
    let remaining = header("relay-remaining").expect("Relay-Remaining").parse().unwrap();
    let listed: Vec<Value> = serde_json::from_str(&body).unwrap();
    (listed.iter().map(|i| i["id"].as_str().unwrap().to_string()).collect(), next, remaining)
}

/// Creates a conversation with `contact`; returns its id.
fn create(relay: &Relay, objective: &str, contact: &str) -> String {
    relay.ok(&["create", "--objective", objective, "--contact", contact, "--todo", "Ask"]).trim().to_string()
}

#[test]
fn pages_walk_every_conversation_once_newest_first_across_creates_and_a_restart() {
    let relay = Relay::started();
    let created: Vec<String> = (0..7).map(|n| create(&relay, &format!("Conversation {n}"), CONTACT)).collect();
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();

    let (first, next, remaining) = page(&relay, "/instances?limit=3");
    assert_eq!((first.as_slice(), remaining), (&newest_first[..3], 4));
    // Conversations created meanwhile come before the first page: the walk
    // neither repeats nor skips one.
    let later: Vec<String> = (0..2).map(|n| create(&relay, &format!("Later {n}"), CONTACT)).collect();
    let (second, next, remaining) = page(&relay, &next.expect("more follow"));
    assert_eq!((second.as_slice(), remaining), (&newest_first[3..6], 1));
    // A cursor is a position on disk, not in the daemon's memory.
    relay.ok(&["stop"]);
    relay.ok(&["start"]);
    let (third, next, remaining) = page(&relay, &next.expect("more follow"));
    assert_eq!((third.as_slice(), next, remaining), (&newest_first[6..], None, 0));

    // The default page holds them all, newest first.
    let (all, next, remaining) = page(&relay, "/instances");
    let mut everything: Vec<String> = later.iter().rev().cloned().collect();
    everything.extend(newest_first.iter().cloned());
    assert_eq!((all, next, remaining), (everything, None, 0));
}

#[test]
fn relay_list_says_how_to_get_the_next_page_and_walks_them_all() {
    let relay = Relay::started();
    let ids: Vec<String> = (0..5).map(|_| relay.create(&[])).collect();
    let other = create(&relay, "Another", OTHER_CONTACT);

    let table = relay.ok(&["list", "--contact", CONTACT, "--limit", "2"]);
    assert!(table.contains(&ids[4][..8]) && table.contains(&ids[3][..8]) && !table.contains(&ids[2][..8]), "{table}");
    let hint = table.lines().last().unwrap();
    let prefix = "3 more conversations; use `relay list --contact +56912345678 --limit 2 --cursor ";
    assert!(hint.starts_with(prefix) && hint.ends_with("` for the next page, or --all"), "{hint}");
    // The command it gives is the next page.
    let command = hint.trim_start_matches("3 more conversations; use `").split('`').next().unwrap();
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let next: Vec<String> = relay.json(&args).as_array().unwrap().iter().map(|i| i["id"].to_string()).collect();
    assert_eq!(next, [&ids[2], &ids[1]].map(|id| format!("\"{id}\"")));

    let all = relay.json(&["list", "--all", "--limit", "1"]);
    let all: Vec<&str> = all.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(all, [&other, &ids[4], &ids[3], &ids[2], &ids[1], &ids[0]].map(String::as_str));

    // States: comma lists and `terminal`.
    relay.ok(&["cancel", &ids[0]]);
    let ended = relay.json(&["list", "--state", "terminal"]);
    assert_eq!(ended.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect::<Vec<_>>(), [&ids[0]]);
    let queued = relay.json(&["list", "--state", "queued,FAILED"]);
    assert_eq!(queued.as_array().unwrap().len(), 4, "{queued}");
}

/// Wrong paging input: a clear error in the user's words, nothing else.
#[test]
fn a_wrong_limit_state_or_cursor_is_refused_plainly() {
    let relay = Relay::started();
    let state = relay.fails(&["list", "--state", "paused,SLEEPING"], 2);
    assert!(state.contains("unknown state 'SLEEPING'") && state.contains("`terminal`"), "{state}");
    for limit in ["0", "1001", "many"] {
        let refused = relay.fails(&["list", "--limit", limit], 2);
        assert!(refused.contains("--limit"), "{refused}");
    }
    let cursor = relay.fails(&["list", "--cursor", "page-2"], 2);
    assert!(cursor.contains("'page-2' is not a cursor"), "{cursor}");
    for query in ["limit=0", "limit=1001", "limit=-1", "cursor=17", "state=terminal,nope"] {
        let (status, body) = relay.http("GET", &format!("/instances?{query}"), &[], None);
        assert_eq!(status, 400, "{query}: {body}");
    }
}

/// A cursor of the right shape that relay did not give (no conversation is
/// at that position, or one is but at another time) is refused, over HTTP
/// and so over MCP, as docs/api.md says: never an empty page that reads
/// as the end of the list.
#[test]
fn a_well_formed_cursor_relay_did_not_give_is_refused() {
    use proptest::test_runner::{Config, TestRunner};
    let relay = Relay::started();
    let id = relay.create(&[]);
    let real = relay.instances()[0].clone();
    let position = |at: i64, id: &str| format!("{at}.{}", id.replace('-', ""));
    let at = real.created_at.timestamp_micros();
    let refused = |cursor: &str| {
        let (status, body) = relay.http("GET", &format!("/instances?cursor={cursor}"), &[], None);
        assert_eq!(status, 400, "{cursor}: {body}");
        assert!(body.contains("is not a cursor relay gave"), "{body}");
    };
    refused(&position(at + 1, &id));
    refused(&position(at, &uuid::Uuid::new_v4().to_string()));
    let mut runner = TestRunner::new(Config { cases: 16, failure_persistence: None, ..Config::default() });
    runner
        .run(&(proptest::num::i64::ANY, proptest::num::u128::ANY), |(at, id)| {
            refused(&position(at, &uuid::Uuid::from_u128(id).to_string()));
            Ok(())
        })
        .unwrap();
    // The cursor the list gives is taken.
    let (status, body) = relay.http("GET", &format!("/instances?cursor={}", position(at, &id)), &[], None);
    assert_eq!((status, body.as_str()), (200, "[]"));
}

/// A transcript a page at a time, oldest first: a message that comes
/// during the walk is on the last page, a cursor holds across a restart,
/// and `relay transcript` says how to go on.
#[test]
fn a_transcript_pages_oldest_first_and_relay_transcript_walks_them() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    for n in 0..5 {
        relay.ok(&["sandbox", "say", CONTACT, &format!("message {n}")]);
    }
    let texts = |path: &str| {
        let (status, headers, body) = relay.http_with_headers("GET", path);
        assert_eq!(status, 200, "{body}");
        let link = headers.iter().find(|(n, _)| n == "link").map(|(_, v)| v.clone());
        let next = link.map(|l| l.split_once(">; ").unwrap().0.trim_start_matches('<').to_string());
        let remaining: u64 = headers.iter().find(|(n, _)| n == "relay-remaining").unwrap().1.parse().unwrap();
        let messages: Vec<Value> = serde_json::from_str(&body).unwrap();
        let texts: Vec<String> = messages.iter().map(|m| m["content"].as_str().unwrap().to_string()).collect();
        (texts, next, remaining)
    };
    let all = texts(&format!("/instances/{id}/transcript")).0;
    assert_eq!(all.len(), 5, "{all:?}");
    let (first, next, remaining) = texts(&format!("/instances/{}/transcript?limit=2", &id[..8]));
    assert_eq!((first.as_slice(), remaining), (&all[..2], 3));
    relay.ok(&["sandbox", "say", CONTACT, "message 5"]);
    relay.ok(&["stop"]);
    relay.ok(&["start"]);
    let (second, next, remaining) = texts(&next.expect("more follow"));
    assert_eq!((second.as_slice(), remaining), (&all[2..4], 2));
    let (third, next, remaining) = texts(&next.expect("more follow"));
    assert_eq!((third, next, remaining), (vec![all[4].clone(), "message 5".to_string()], None, 0));

    // The CLI: a page, and how to get the next; --all walks them.
    let run = relay.run(&["transcript", &id[..8], "--limit", "4"]);
    assert!(run.stdout.contains("message 3") && !run.stdout.contains("message 4"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("2 more messages; use `relay transcript {} --limit 4 --cursor ", &id[..8])));
    let listed = relay.json(&["transcript", &id, "--all"]);
    assert_eq!(listed.as_array().unwrap().len(), 6);
    // A cursor that is no message of it: said in the user's words.
    let wrong = relay.fails(&["transcript", &id, "--cursor", &uuid::Uuid::new_v4().to_string()], 2);
    assert!(wrong.contains("is not a cursor of this transcript"), "{wrong}");
    let wrong = relay.fails(&["transcript", &id, "--cursor", "page-2"], 2);
    assert!(wrong.contains("'page-2' is not a cursor"), "{wrong}");
}

/// What a program does: `--json --with-cursor` a page at a time, going on
/// with the `next_cursor` of each answer (and nothing else) until there is
/// none. Returns the `key` ids of every page, in order; checks that each
/// answer is one JSON object on stdout, nothing on stderr, and that
/// `remaining` counts down to 0.
fn walk_as_a_program(relay: &Relay, command: &[&str], key: &str, total: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = command.to_vec();
        args.extend(["--json", "--with-cursor", "--limit", "2"]);
        if let Some(cursor) = &cursor {
            args.extend(["--cursor", cursor]);
        }
        let run = relay.run(&args);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{args:?}: {}", run.stdout);
        let page: Value = serde_json::from_str(&run.stdout).unwrap();
        let items = page[key].as_array().unwrap_or_else(|| panic!("no {key} in {page}"));
        assert!(items.len() <= 2, "{page}");
        seen.extend(items.iter().map(|item| item["id"].as_str().unwrap().to_string()));
        assert_eq!(page["remaining"], total - seen.len(), "{page}");
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return seen,
        }
        assert!(seen.len() < total, "a cursor after the last page: {page}");
    }
}

/// A program pages conversations and a transcript with the cursor in the
/// JSON (as MCP answers), and gets each item once; the bare array stays
/// the default, and --with-cursor without --json is refused.
#[test]
fn a_program_pages_with_the_cursor_in_the_json() {
    let relay = Relay::started();
    let ids: Vec<String> = (0..5).map(|_| relay.create(&[])).collect();
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(walk_as_a_program(&relay, &["list"], "conversations", 5), newest_first);

    let id = &ids[0];
    relay.wait_for_state(id, "NEEDS_HUMAN_INTERVENTION");
    for n in 0..5 {
        relay.ok(&["sandbox", "say", CONTACT, &format!("message {n}")]);
    }
    let transcript: Vec<String> = relay.transcript(id).iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(transcript.len(), 5);
    assert_eq!(walk_as_a_program(&relay, &["transcript", &id[..8]], "messages", 5), transcript);

    // The seeds' shape is unchanged: a bare array.
    assert!(relay.json(&["list", "--limit", "2"]).is_array());
    assert!(relay.json(&["transcript", id, "--limit", "2"]).is_array());
    for command in [&["list", "--with-cursor"][..], &["transcript", id, "--with-cursor"][..]] {
        let refused = relay.fails(command, 2);
        assert!(refused.contains("--with-cursor shapes the JSON output: add --json"), "{refused}");
    }
}
