//! From generated steps to requests against the in-process router, and the
//! property: every answer is JSON, below 500, and nothing panics.

use super::*;

// ---------------------------------------------------------------------------
// From generated steps to requests
// ---------------------------------------------------------------------------

impl Daemon {
    fn wire(&self, step: &Step) -> Wire {
        match step {
            Step::Hostile(hostile) => self.hostile(hostile),
            Step::Create(create) => Wire::authorised(Method::POST, "/instances", Some(create.json())),
            Step::Act { action, id, message } => {
                let id = self.id(id);
                let (method, path, body) = match action {
                    Action::Get => (Method::GET, format!("/instances/{id}"), None),
                    Action::Transcript => (Method::GET, format!("/instances/{id}/transcript"), None),
                    Action::Cancel => (Method::POST, format!("/instances/{id}/cancel"), None),
                    Action::Pause => (Method::POST, format!("/instances/{id}/pause"), None),
                    Action::Resume => (Method::POST, format!("/instances/{id}/resume"), None),
                    Action::Send => {
                        (Method::POST, format!("/instances/{id}/send"), Some(Bytes::Message(message.clone())))
                    }
                };
                Wire::authorised(method, &path, body.map(|b| b.bytes()))
            }
            Step::Say { contact, text } => Wire::authorised(
                Method::POST,
                "/sandbox/messages",
                Some(Bytes::Say(contact.clone(), text.clone()).bytes()),
            ),
            Step::List { query } => {
                let path = query.as_ref().map_or("/instances".into(), |q| format!("/instances?{q}"));
                Wire::authorised(Method::GET, &path, None)
            }
            Step::Outbox { contact } => {
                let path = contact.as_ref().map_or("/sandbox/outbox".into(), |c| {
                    let encoded: String = c.bytes().map(|b| format!("%{b:02X}")).collect();
                    format!("/sandbox/outbox?contact={encoded}")
                });
                Wire::authorised(Method::GET, &path, None)
            }
        }
    }

    fn hostile(&self, hostile: &Hostile) -> Wire {
        let Hostile { method, target, headers, body } = hostile;
        let path = match target {
            Target::Route { template, id, before, after, query } => {
                let mut path = format!("{before}{}{after}", template.replace("{id}", &self.id(id)));
                if let Some(query) = query {
                    path.push('?');
                    path.push_str(query);
                }
                path
            }
            Target::Raw(raw) => raw.clone(),
        };
        let body = body.bytes();
        let mut list: Vec<(&str, Vec<u8>)> = Vec::new();
        if let Some(host) = &headers.host {
            list.push(("host", host.0.clone()));
        }
        if let Some(auth) = headers.auth.value() {
            list.push(("authorization", auth));
        }
        if let Some(content_type) = &headers.content_type {
            list.push(("content-type", content_type.0.clone()));
        }
        match headers.content_length {
            Length::None => {}
            Length::Correct => list.push(("content-length", body.len().to_string().into_bytes())),
            Length::Value(v) => list.push(("content-length", v.as_bytes().to_vec())),
        }
        if let Some(te) = headers.transfer_encoding {
            list.push(("transfer-encoding", te.as_bytes().to_vec()));
        }
        if let Some(origin) = headers.origin {
            list.push(("origin", origin.as_bytes().to_vec()));
        }
        for (name, value) in &headers.extra {
            list.push((name, value.0.clone()));
        }
        // Values HTTP cannot carry (NUL, CR, LF) cannot reach a handler: the
        // TCP part sends those.
        let headers = list
            .into_iter()
            .filter_map(|(name, value)| Some((HeaderName::from_static(name), HeaderValue::from_bytes(&value).ok()?)))
            .collect();
        Wire { method: Method::from_bytes(method.as_bytes()).unwrap(), uri: uri(&path), headers, body }
    }

    /// Runs one case's steps in order; the first wrong answer fails it.
    fn run(&self, steps: &[Step]) -> Result<(), TestCaseError> {
        for step in steps {
            let wire = self.wire(step);
            let (status, body) = self.send(&wire).map_err(TestCaseError::fail)?;
            if status == 201 && wire.uri.path() == "/instances" {
                let created: Value = serde_json::from_slice(&body).unwrap();
                self.ids.lock().unwrap().push(created["id"].as_str().unwrap().to_string());
            }
        }
        Ok(())
    }
}

/// Thousands of generated requests, hostile and valid mixed, against the
/// in-process router: none gets a 5xx or a non-JSON answer, none panics.
#[test]
pub(super) fn hostile_requests_to_the_router_get_json_answers_below_500() {
    let daemon = Daemon::new();
    let config = ProptestConfig {
        cases: env_or("RELAY_FUZZ_CASES", DEFAULT_CASES),
        rng_seed: RngSeed::Fixed(env_or("RELAY_FUZZ_SEED", DEFAULT_SEED)),
        failure_persistence: None,
        // The daemon keeps its state between cases, so shrinking only
        // approximates; the failure names the exact request anyway.
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    };
    let started = Instant::now();
    let mut runner = TestRunner::new(config);
    let result = runner.run(&vec(step(), 1..12), |steps| daemon.run(&steps));
    let statuses = daemon.statuses.lock().unwrap().clone();
    eprintln!(
        "fuzz_api in-process: {} requests in {:.1?} ({} conversations created); statuses {statuses:?}",
        daemon.sent.load(Ordering::Relaxed),
        started.elapsed(),
        daemon.ids.lock().unwrap().len(),
    );
    if let Err(failure) = result {
        panic!("{failure}");
    }
    // The fuzz must have reached the handlers, not only the guard.
    for status in [200, 201, 400, 401, 403, 404, 409] {
        assert!(statuses.contains_key(&status), "no request got {status}: {statuses:?}");
    }
}
