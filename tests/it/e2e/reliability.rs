//! What must hold when things go wrong, end to end with the real binary:
//! retried calls (idempotency keys), a full disk, a home others can read.
//! The crash trials are in `crash.rs`; hostile input in `contract/fuzz_api/` and
//! `engine/properties/`.

use crate::support::*;
use serde_json::Value;

/// Retrying a create (a timeout, a Main Agent that restarted) must not open
/// a second conversation with the same person.
#[test]
fn a_retried_create_with_the_same_key_creates_one_conversation() {
    let relay = Relay::started();
    let first = relay.create(&["--idempotency-key", "order-1042"]);
    assert_eq!(relay.create(&["--idempotency-key", "order-1042"]), first);
    // Across a restart too: the key is on disk.
    relay.ok(&["stop"]);
    relay.ok(&["start"]);
    assert_eq!(relay.create(&["--idempotency-key", "order-1042"]), first);
    assert_eq!(relay.json(&["list"]).as_array().unwrap().len(), 1);

    // The same key for another request is a mistake, said clearly.
    let stderr = relay.fails(
        &[
            "create",
            "--objective",
            "Something else",
            "--contact",
            CONTACT,
            "--todo",
            "x",
            "--idempotency-key",
            "order-1042",
        ],
        2,
    );
    assert!(stderr.contains("already used for a different request"), "{stderr}");
    // A request that failed validation claims no key.
    relay.fails(&["create", "--objective", "x", "--contact", "12", "--todo", "x", "--idempotency-key", "k2"], 2);
    let id = relay.create(&["--idempotency-key", "k2"]);
    assert_ne!(id, first);

    // Over HTTP, a replay says so.
    let body = serde_json::json!({"objective": "Confirm the delivery date", "target_contact": CONTACT,
        "todos": [{"text": "Ask which day suits"}]})
    .to_string();
    let (status, head, created) = http_with_head(&relay, "/instances", "order-1042", &body);
    assert_eq!(status, 201);
    assert!(head.to_ascii_lowercase().contains("idempotent-replayed: true"), "{head}");
    assert_eq!(serde_json::from_str::<Value>(&created).unwrap()["id"], first.as_str());
    assert_eq!(relay.json(&["list"]).as_array().unwrap().len(), 2);
}

#[test]
fn a_retried_send_with_the_same_key_sends_once() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let first = relay.json(&["send", &id, "Thursday at 3pm then", "--idempotency-key", "s-1"]);
    let again = relay.json(&["send", &id, "Thursday at 3pm then", "--idempotency-key", "s-1"]);
    assert_eq!(first["id"], again["id"]);
    relay.ok(&["stop"]);
    relay.ok(&["start"]);
    let after_restart = relay.json(&["send", &id, "Thursday at 3pm then", "--idempotency-key", "s-1"]);
    assert_eq!(after_restart["id"], first["id"]);
    // As recorded: sent, and delivered once the sandbox's phone said so.
    assert!(["sent", "delivered"].contains(&after_restart["send_status"].as_str().unwrap()), "{after_restart}");

    let outbox = relay.json(&["sandbox", "outbox"]);
    assert_eq!(outbox.as_array().unwrap().len(), 1, "sent once: {outbox}");
    assert_eq!(relay.transcript(&id).len(), 1);
    // Another text under the same key is refused; nothing is sent.
    let stderr = relay.fails(&["send", &id, "Friday instead", "--idempotency-key", "s-1"], 2);
    assert!(stderr.contains("already used"), "{stderr}");
    assert_eq!(relay.json(&["sandbox", "outbox"]).as_array().unwrap().len(), 1);
}

/// A full disk (here: a file-size limit of 0 on the daemon, which fails
/// every write as ENOSPC would): writes fail with a clear error, nothing on
/// disk is damaged, reads go on, and everything works again once there is room.
#[test]
fn a_full_disk_fails_writes_clearly_keeps_reads_and_recovers() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let instance_file = relay.path().join("instances").join(format!("{id}.json"));
    let on_disk =
        || (std::fs::read(&instance_file).unwrap(), std::fs::read(instance_file.with_extension("jsonl")).ok());
    let before = on_disk();
    let pid = relay.pid().unwrap();

    set_file_size_limit(pid, 0);
    let stderr = relay.fails(&["create", "--objective", "x", "--contact", OTHER_CONTACT, "--todo", "y"], 1);
    assert!(stderr.contains("cannot write") && stderr.contains("nothing was changed"), "{stderr}");
    let stderr = relay.fails(&["pause", &id], 1);
    assert!(stderr.contains("cannot write"), "{stderr}");
    let stderr = relay.fails(&["send", &id, "hello"], 1);
    assert!(stderr.contains("cannot write"), "{stderr}");
    let (status, body) = relay.http(
        "POST",
        "/instances",
        &[],
        Some(r#"{"objective":"o","target_contact":"+447911123456","todos":[{"text":"t"}]}"#),
    );
    assert_eq!(status, 507, "{body}");
    assert!(body.contains("storage_unavailable"), "{body}");
    // Reads go on, and show nothing changed.
    assert_eq!(relay.state(&id), "NEEDS_HUMAN_INTERVENTION");
    assert_eq!(relay.json(&["list"]).as_array().unwrap().len(), 1);
    assert!(relay.transcript(&id).is_empty());
    assert!(relay.json(&["sandbox", "outbox"]).as_array().unwrap().is_empty(), "nothing sent unrecorded");
    assert_eq!(on_disk(), before, "nothing on disk was damaged");
    assert!(relay.daemon_alive(pid));

    set_file_size_limit(pid, libc::RLIM_INFINITY);
    relay.json(&["send", &id, "hello"]);
    relay.ok(&["pause", &id]);
    relay.create(&["--idempotency-key", "after"]);
    assert_eq!(relay.json(&["list"]).as_array().unwrap().len(), 2);
    // Every file parses after all that.
    relay.ok(&["stop"]);
    for dir in ["instances", "transcripts"] {
        for entry in std::fs::read_dir(relay.path().join(dir)).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in text.lines() {
                serde_json::from_str::<Value>(line).or_else(|_| serde_json::from_str::<Value>(&text)).unwrap();
            }
        }
    }
}

#[test]
fn a_home_readable_by_others_is_made_owner_only_at_start_with_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let relay = Relay::sandbox();
    let open = |path: &std::path::Path, mode| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    open(relay.path(), 0o755).unwrap();
    open(&relay.path().join("config.json"), 0o644).unwrap();
    relay.ok(&["start"]);
    assert_eq!(file_mode(relay.path()), 0o700);
    assert_eq!(file_mode(&relay.path().join("config.json")), 0o600);
    assert_eq!(file_mode(&relay.path().join("api-token")), 0o600);
    let log = std::fs::read_to_string(relay.path().join("relay.log")).unwrap();
    assert!(log.contains("readable by other users") && log.contains("config.json"), "{log}");
}

/// Sets the daemon's RLIMIT_FSIZE (soft; the hard limit stays).
fn set_file_size_limit(pid: i32, bytes: libc::rlim_t) {
    let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    assert_eq!(unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, std::ptr::null(), &mut current) }, 0);
    let wanted = libc::rlimit { rlim_cur: bytes.min(current.rlim_max), rlim_max: current.rlim_max };
    let done = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, &wanted, std::ptr::null_mut()) };
    assert_eq!(done, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// POSTs `body` with an idempotency key; returns the status, the head and the body.
fn http_with_head(relay: &Relay, path: &str, key: &str, body: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", relay.port)).unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Idempotency-Key: {key}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        relay.token(),
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}
