//! The bugs the fuzz found, one minimal request each.

use super::*;

// ---------------------------------------------------------------------------
// Bugs the fuzz found, one minimal request each (see `known_bug`)
// ---------------------------------------------------------------------------

/// One request to a fresh in-process daemon; a handler panic fails the test.
fn answer(wire: &Wire) -> (StatusCode, String) {
    let daemon = Daemon::new();
    daemon.rt.block_on(async {
        let response = daemon.router.clone().oneshot(wire.request()).await.unwrap_or_else(|never| match never {});
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    })
}

fn error_code(status: StatusCode, body: &str) -> (u16, String) {
    let error: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {body}"));
    assert!(error["error"].is_string(), "{body}");
    (status.as_u16(), error["code"].as_str().unwrap_or_default().to_string())
}

/// A percent-encoded id that is not UTF-8 gets axum's text/plain rejection
/// ("Invalid URL: Invalid UTF-8 in `id`"), not an ApiErrorResponse.
#[test]
fn an_id_that_is_not_utf8_gets_a_json_400() {
    let (status, body) = answer(&Wire::authorised(Method::GET, "/instances/%ff", None));
    assert_eq!(error_code(status, &body), (400, "invalid_request".into()));
}

/// "+98000001" is accepted and normalised to "+980001", which `Contact::parse`
/// itself refuses, so the handler panics on `contact_of` ("stored contacts
/// are E.164"); over TCP the client gets no answer at all.
#[test]
fn a_contact_whose_normal_form_is_invalid_is_refused_not_a_panic() {
    let create = r#"{"objective":"o","target_contact":"+98000001","todos":[{"text":"t"}]}"#;
    let (status, body) = answer(&Wire::authorised(Method::POST, "/instances", Some(create.into())));
    assert_eq!(error_code(status, &body), (400, "invalid_request".into()));
}
