//! The live view in a real browser: the list updates as contacts write,
//! filters and pages; a conversation shows as a chat with its photo and
//! its voice note's transcript; a question is answered from the page and
//! reaches the agent; the operator's actions, and their refusals in the
//! daemon's own words. The two pages' screenshots in docs/ui/ come from
//! here (`RELAY_REFRESH_DOCS=1`).

use serde_json::{Value, json};

use crate::support::browser::{Browser, refresh_screenshot};
use crate::support::model::use_model;
use crate::support::*;
use relay::scripted_model::{Reply, Responder, ScriptedModel, queue};

/// A sandbox relay on the scripted model, which also transcribes voice notes.
fn with_model_and_ears(responder: Responder) -> (Relay, ScriptedModel) {
    let model = ScriptedModel::start_on_thread(responder);
    let relay = Relay::sandbox();
    use_model(&relay, &model, json!({"retry_backoff_ms": 10, "max_retries": 2, "reply_window_ms": 50}));
    let url = model.base_url().to_string();
    relay.edit_config(|config| {
        config["media"]["transcription"] = json!({"base_url": url, "model": "whisper-1"});
    });
    relay.ok(&["start"]);
    (relay, model)
}

fn create(relay: &Relay, contact: &str, objective: &str, todos: &[&str]) -> String {
    let mut args = vec!["create", "--objective", objective, "--contact", contact, "--tz", "America/Santiago"];
    for todo in todos {
        args.extend(["--todo", todo]);
    }
    relay.ok(&args).trim().to_string()
}

fn row_text(browser: &Browser, id: &str, cell: &str) -> Value {
    browser.eval(
        "const r = document.querySelector(`tr[data-id=\"${arguments[0]}\"] ${arguments[1]}`); return r ? r.textContent : null",
        vec![json!(id), json!(cell)],
    )
}

fn until_row(browser: &Browser, id: &str, cell: &str, wanted: &str) {
    browser.until(
        &format!("{cell} of {id} as {wanted:?}"),
        "const r = document.querySelector(`tr[data-id=\"${arguments[0]}\"] ${arguments[1]}`); \
         return !!r && r.textContent.includes(arguments[2])",
        vec![json!(id), json!(cell), json!(wanted)],
    );
}

#[test]
fn the_list_updates_as_contacts_write_and_filters_and_pages() {
    let relay = Relay::started();
    let first = create(&relay, CONTACT, "Confirm the delivery date", &["Ask which day suits", "Confirm the address"]);
    relay.wait_for_state(&first, "NEEDS_HUMAN_INTERVENTION");
    let browser = Browser::signed_in(&relay, None);
    assert_eq!(browser.url(), format!("http://127.0.0.1:{}/ui/", relay.port), "the code is gone from the address");
    assert_eq!(browser.eval("return document.cookie", vec![]), "", "the session is HttpOnly: no script sees it");
    until_row(&browser, &first, ".todos", "0/2");
    assert!(row_text(&browser, &first, ".waits").as_str().unwrap().starts_with("you: "), "waits for the operator");

    // Live: the contact writes on the sandbox, a new conversation starts.
    relay.ok(&["sandbox", "say", CONTACT, "Thursday morning works for me"]);
    until_row(&browser, &first, ".last", "Thursday morning works for me");
    let second = create(&relay, OTHER_CONTACT, "Book the plumber", &["Agree a time"]);
    until_row(&browser, &second, ".contact", OTHER_CONTACT);
    refresh_screenshot("list.png", &browser.screenshot());

    // Filters: by contact, by state, in the address (a reload keeps them).
    browser.type_into("#filter-contact", OTHER_CONTACT);
    browser.click("#filter-apply");
    browser.until("only the second", "return document.querySelectorAll('tr.row').length === 1", vec![]);
    assert!(row_text(&browser, &first, ".contact").is_null());
    relay.ok(&["pause", &second]);
    until_row(&browser, &second, ".state", "paused");
    browser.goto(&format!("http://127.0.0.1:{}/ui/#?state=PAUSED", relay.port));
    let paused_only = "return document.getElementById('filter-state').value === 'PAUSED' \
                       && document.querySelectorAll('tr.row').length === 1";
    browser.until("only the paused one", paused_only, vec![]);
    until_row(&browser, &second, ".state", "paused");
    browser.goto(&format!("http://127.0.0.1:{}/ui/#?contact=%2B1", relay.port));
    let refused = browser.text("#list-error");
    assert!(refused.contains("+1"), "the daemon's own words: {refused}");

    // Pages of 25, for a large home.
    for n in 0..25 {
        let body = json!({"objective": format!("Survey {n}"), "target_contact": format!("+5691234{n:04}"),
                          "todos": [{"text": "Ask"}]});
        let (status, answer) = relay.http("POST", "/instances", &[], Some(&body.to_string()));
        assert_eq!(status, 201, "{answer}");
    }
    browser.goto(&format!("http://127.0.0.1:{}/ui/#", relay.port));
    browser.until("a full page", "return document.querySelectorAll('tr.row').length === 25", vec![]);
    assert_eq!(browser.text("#remaining"), "2 more");
    browser.click("#next-page");
    browser.until("the second page", "return document.querySelectorAll('tr.row').length === 2", vec![]);
    until_row(&browser, &first, ".contact", CONTACT);
    browser.click("#first-page");
    browser.until("the first page again", "return document.querySelectorAll('tr.row').length === 25", vec![]);
    assert_eq!(browser.alert(), None);
}

#[test]
fn a_conversation_shows_as_a_chat_with_its_photo_and_voice_note() {
    let greeting = "Hi! Could you send me a photo of the meter, and say when I can come?";
    let mark = |todo: &str, answer: &str, quote: &str| {
        let args = json!({"todo_id": todo, "status": "completed", "answer": answer, "quote": quote});
        ("mark_todo_item".to_string(), args)
    };
    let (relay, _model) = with_model_and_ears(queue(vec![
        Reply::tool("send_message", json!({ "text": greeting })),
        Reply::Text(String::new()),
        Reply::Tools(vec![
            ("mark_todo_item".into(), json!({"todo_id": "1", "status": "completed", "answer": "photo m1"})),
            ("send_message".into(), json!({"text": "Got the photo, thanks! When can I come?"})),
        ]),
        Reply::Text(String::new()),
        Reply::Tools(vec![
            mark("2", "Thursday at ten", "Thursday at ten works for me"),
            ("send_message".into(), json!({"text": "Thursday at ten it is. See you then!"})),
        ]),
        Reply::Text(String::new()),
    ]));
    let id = create(&relay, CONTACT, "Read the gas meter", &["Get a photo of the meter", "Agree a visit"]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let photo = relay.path().join("meter.png");
    std::fs::write(&photo, include_bytes!("../../fixtures/meter.png")).unwrap();
    let voice = relay.path().join("voice.ogg");
    std::fs::write(&voice, relay::media::ogg::scripted_voice_note("Thursday at ten works for me", 3)).unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "here it is", "--image", photo.to_str().unwrap()]);
    relay.wait_for(&id, "the photo's turn", |_| model::outbox(&relay).len() == 2);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "say", CONTACT, "--voice", voice.to_str().unwrap()]);
    relay.wait_for(&id, "the voice note's turn", |_| model::outbox(&relay).len() == 3);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    relay.ok(&["sandbox", "read", CONTACT]);

    let browser = Browser::signed_in(&relay, Some(&id));
    assert!(browser.text("#messages .from-agent .text").contains(greeting));
    browser.until(
        "the photo, shown",
        "const i = document.querySelector('.media-photo img'); return !!i && i.complete && i.naturalWidth === 160",
        vec![],
    );
    assert_eq!(browser.text(".media-photo + .text, .from-contact .media-photo ~ .text"), "here it is");
    let label = browser.text(".media-voice_note .transcript .label");
    assert!(label.contains("Transcript"), "labelled as a transcript: {label}");
    assert_eq!(browser.text(".media-voice_note .transcript-text"), "Thursday at ten works for me");
    let playable =
        "const a = document.querySelector('.media-voice_note audio'); return !!a && a.src.endsWith('/media')";
    browser.until("the voice note, playable", playable, vec![]);
    let meta = browser.text("#messages .from-contact .meta");
    assert!(meta.contains("your time") && meta.contains("America/Santiago"), "both zones: {meta}");
    let mark = browser.text("#messages .from-agent .meta");
    assert!(mark.contains('✓'), "a delivery mark: {mark}");
    assert!(browser.text("#history").contains("WAITING_FOR_REPLY"));
    assert!(browser.text("#budget").contains("Model calls"));
    let todos = browser.text("#todos");
    assert!(todos.contains("2/2") && todos.contains("Thursday at ten"), "{todos}");
    let proves = browser.text("#messages .from-contact.proves .evidence");
    assert!(proves.starts_with("evidence for todo"), "shown where it is in the chat: {proves}");
    // A live update remakes only what changed: the voice note's player stays (it would stop playing).
    browser.eval("document.querySelector('.media-voice_note audio').kept = true", vec![]);
    relay.ok(&["send", &id, "See you on Thursday at ten."]);
    browser.until("the operator's message", "return !!document.querySelector('.from-manual')", vec![]);
    let kept = browser.eval("return document.querySelector('.media-voice_note audio').kept === true", vec![]);
    assert_eq!(kept, true, "the player was remade");
    browser.until(
        "the newest message in view",
        "const m = document.getElementById('messages'); \
        return m.scrollHeight - m.scrollTop - m.clientHeight < 40",
        vec![],
    );
    refresh_screenshot("chat.png", &browser.screenshot());
}

#[test]
fn a_question_is_answered_from_the_page_and_the_operator_acts() {
    let (relay, model) = with_model_and_ears(queue(vec![
        Reply::tool("send_message", json!({"text": "Hi! When can the plumber come?"})),
        Reply::Text(String::new()),
        Reply::tool("request_human_intervention", json!({"reason": "the price", "question": "What do we charge?"})),
        Reply::tool("send_message", json!({"text": "It is 45 dollars."})),
        Reply::Text(String::new()),
    ]));
    let id = create(&relay, CONTACT, "Book the plumber", &["Agree a time"]);
    relay.wait_for_state(&id, "WAITING_FOR_REPLY");
    let browser = Browser::signed_in(&relay, Some(&id));
    relay.ok(&["sandbox", "say", CONTACT, "How much is it?"]);
    assert_eq!(browser.text("#question-text"), "What do we charge?");
    browser.type_into("#answer-text", "45 dollars, from the page");
    browser.click("#answer-send");
    relay.wait_for(&id, "the agent's reply", |_| model::outbox(&relay).iter().any(|t| t == "It is 45 dollars."));
    let told = model.requests()[3].to_string();
    assert!(told.contains("45 dollars, from the page"), "the agent got the answer: {told}");
    browser.until("the question gone", "return !document.getElementById('question')", vec![]);

    // The operator writes, and sends a file.
    browser.type_into("#send-text", "I'm the operator: see you then");
    browser.click("#send-message");
    relay.wait_for(&id, "the operator's message", |_| {
        model::outbox(&relay).iter().any(|t| t == "I'm the operator: see you then")
    });
    browser.until("the operator's bubble", "return !!document.querySelector('.from-manual')", vec![]);
    let file = relay.path().join("price list.png");
    std::fs::write(&file, include_bytes!("../../fixtures/meter.png")).unwrap();
    browser.type_into("#send-file", file.to_str().unwrap());
    browser.click("#send-file-button");
    relay.wait_for(&id, "the file sent", |_| {
        relay
            .json(&["sandbox", "outbox"])
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["media"]["file_name"] == "price list.png")
    });

    // Pause, then pause again: refused in the daemon's own words.
    browser.click("#action-pause");
    relay.wait_for_state(&id, "PAUSED");
    browser.until(
        "the page, paused",
        "return document.querySelector('.chat-head .state').textContent === 'paused'",
        vec![],
    );
    browser.click("#action-pause");
    let (_, refusal) = relay.http("POST", &format!("/instances/{id}/pause"), &[], None);
    let words = serde_json::from_str::<Value>(&refusal).unwrap()["error"].as_str().unwrap().to_string();
    let shown = browser.until("the refusal", "return document.getElementById('action-error').textContent", vec![]);
    assert_eq!(shown, format!("pause: {words}"));
    browser.click("#action-resume");
    relay.wait_for(&id, "resumed", |i| i["state"] != "PAUSED");
    browser.click("#action-cancel");
    relay.wait_for_state(&id, "FAILED");
    assert_eq!(browser.alert(), None);
}

/// What a conversation waits for, and until when: the contact's quiet
/// hours, WhatsApp's reach-out lock, the operator.
#[test]
fn the_list_says_what_each_conversation_waits_for_and_until_when() {
    use chrono::Timelike;
    let (relay, _model) = with_model_and_ears(model::sends_each_turn(|_| "Hello".into()));
    let hour = chrono::Utc::now().hour();
    let night = format!("{:02}:00-{:02}:00", (hour + 23) % 24, (hour + 2) % 24);
    let quiet = relay.ok(&[
        "create",
        "--objective",
        "Ask about the fence",
        "--contact",
        CONTACT,
        "--todo",
        "Ask",
        "--tz",
        "Etc/UTC",
        "--quiet-hours",
        &night,
    ]);
    let quiet = quiet.trim();
    relay.wait_for(quiet, "quiet hours", |i| i["waiting_for"] == "quiet_hours");
    relay.ok(&["sandbox", "lock", "--until", "2h"]);
    let locked = create(&relay, OTHER_CONTACT, "Ask about the gate", &["Ask"]);
    relay.wait_for(&locked, "the lock", |i| i["waiting_for"] == "reach_out_lock");

    let browser = Browser::signed_in(&relay, None);
    until_row(&browser, quiet, ".waits", "quiet hours where the contact is until");
    until_row(&browser, &locked, ".waits", "WhatsApp's reach-out lock until");
    let until = row_text(&browser, &locked, ".waits");
    assert!(until.as_str().unwrap().contains("your time"), "{until}");
}
