//! The live view against what others write and do, in a real browser: a
//! contact's markup and escape sequences, and a file's name, are shown as
//! text, inert; a page of another origin on this machine, in the same
//! signed-in browser, is refused by the daemon.

use std::io::{Read, Write};

use serde_json::json;

use crate::support::browser::Browser;
use crate::support::*;

const HOSTILE: &str = "<img src=x onerror=\"window.pwned=1;alert(1)\"> <script>window.pwned=2</script> \
                       \u{1b}]0;PWNED\u{7}\u{1b}[2J <b>bold?</b> & &amp;";

#[test]
fn hostile_contact_text_and_file_names_render_inert() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    relay.ok(&["sandbox", "say", CONTACT, HOSTILE]);
    let name = "<img src=x onerror=alert(2)>.pdf";
    let document = relay.path().join(name);
    std::fs::write(&document, b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n").unwrap();
    relay.ok(&["sandbox", "say", CONTACT, "--document", document.to_str().unwrap()]);
    relay
        .wait_for(&id, "the document kept", |_| relay.transcript(&id).iter().any(|m| m["media"]["status"] == "stored"));
    let kept = relay.transcript(&id);
    let said = kept.iter().find(|m| m["role"] == "contact" && m["media"].is_null()).unwrap()["content"].clone();
    let file_name = kept.iter().find(|m| m["media"].is_object()).unwrap()["media"]["file_name"].clone();

    let browser = Browser::signed_in(&relay, None);
    browser.until(
        "the contact's words in the list",
        "const r = document.querySelector(`tr[data-id=\"${arguments[0]}\"] .last`); return !!r && r.textContent !== ''",
        vec![json!(id)],
    );
    let inert = "return document.querySelectorAll('img[src=\"x\"], script:not([src]), b').length === 0 \
                 && window.pwned === undefined";
    assert_eq!(browser.eval(inert, vec![]), true, "nothing the contact wrote became markup in the list");

    browser.goto(&format!("http://127.0.0.1:{}/ui/#c/{id}", relay.port));
    let shown = browser.until(
        "the contact's words in the chat",
        "const b = [...document.querySelectorAll('.from-contact .text')]; return b.length ? b[0].textContent : null",
        vec![],
    );
    assert_eq!(shown, said, "shown exactly as written, escape sequences and all");
    assert!(said.as_str().unwrap().contains("<img src=x"), "relay kept the markup as text: {said}");
    let download = browser.text(".media-document .download");
    assert!(download.contains(file_name.as_str().unwrap()), "{download} names {file_name}");
    assert_eq!(browser.eval(inert, vec![]), true, "nothing the contact wrote became markup in the chat");
    assert_eq!(browser.alert(), None, "no script ran");
}

/// A page on this machine at another origin (another port of 127.0.0.1:
/// the same site, so a `SameSite=Strict` cookie alone would not stop it),
/// in a browser signed in to the live view, tries to cancel a
/// conversation and to read the list: the daemon refuses both.
#[test]
fn a_request_from_another_origin_is_refused() {
    let relay = Relay::started();
    let id = relay.create(&[]);
    relay.wait_for_state(&id, "NEEDS_HUMAN_INTERVENTION");
    let daemon = format!("http://127.0.0.1:{}", relay.port);
    let browser = Browser::new();
    browser.goto(&format!("{daemon}/ui/"));
    let notice = browser.until("the sign-in notice", "return document.getElementById('notice').textContent", vec![]);
    assert!(notice.as_str().unwrap().contains("Run `relay ui`"), "not signed in: {notice}");
    browser.sign_in(&relay, None);
    let elsewhere = other_page();
    browser.goto(&format!("http://127.0.0.1:{elsewhere}/"));
    browser.text("#elsewhere");
    let tried = browser.eval_async(
        "const [daemon, id, done] = arguments; \
         const change = fetch(`${daemon}/instances/${id}/cancel`, {method: 'POST', credentials: 'include', mode: 'no-cors'}) \
           .then(r => 'sent (opaque)', e => 'error'); \
         const read = fetch(`${daemon}/instances`, {credentials: 'include'}).then(r => r.text(), e => 'unreadable'); \
         Promise.all([change, read]).then(done);",
        vec![json!(daemon), json!(id)],
    );
    assert_eq!(tried[1], "unreadable", "the list did not reach the other page: {tried}");
    assert_eq!(relay.state(&id), "NEEDS_HUMAN_INTERVENTION", "the other page changed nothing");

    // The same, from the page itself, is let in: the session works.
    browser.goto(&format!("{daemon}/ui/#c/{id}"));
    browser.click("#action-cancel");
    relay.wait_for_state(&id, "FAILED");

    // A daemon that restarts has forgotten the session: the page says what to do.
    relay.ok(&["stop"]);
    browser.until("the page, cut off", "return document.getElementById('live').dataset.state === 'off'", vec![]);
    relay.ok(&["start"]);
    let notice = browser.until("the notice", "return document.getElementById('notice').textContent", vec![]);
    assert!(notice.as_str().unwrap().contains("the session has ended"), "{notice}");
}

/// Serves one page, `<p id="elsewhere">`, on a free port of 127.0.0.1, to
/// any request, for as long as the test binary runs.
fn other_page() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let page = "<!doctype html><title>elsewhere</title><p id=\"elsewhere\">another page</p>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    port
}
