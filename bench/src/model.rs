//! The scripted model server as the bench uses it: every turn sends one
//! message and ends. Requests carrying a marker (`[bench:NAME]` in a
//! contact's message or an objective; the newest one counts) are reported with the instant they
//! arrived, so a figure can await the model's request instead of polling.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use relay::scripted_model::{Reply, ScriptedModel};
use serde_json::{Value, json};

/// Which request of a turn arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The turn's first model request (the engine is done; the model starts).
    Asked,
    /// The request carrying the send_message result: the reply was handed to
    /// the channel and recorded.
    Sent,
}

#[derive(Debug, Clone)]
pub struct Seen {
    pub marker: String,
    pub phase: Phase,
    pub at: Instant,
}

pub struct Model {
    server: ScriptedModel,
    seen: Mutex<Receiver<Seen>>,
}

impl Model {
    pub fn start() -> Model {
        let (tx, rx): (Sender<Seen>, Receiver<Seen>) = channel();
        let tx = Mutex::new(tx);
        let server = ScriptedModel::start_on_thread(Arc::new(move |_, body: &Value| {
            let at = Instant::now();
            let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
            let phase = if last["role"] == "tool" { Phase::Sent } else { Phase::Asked };
            if let Some(marker) = marker(body) {
                let _ = tx.lock().unwrap().send(Seen { marker, phase, at });
            }
            match phase {
                Phase::Asked => Reply::tool("send_message", json!({"text": "Thanks, noted. Which day suits you?"})),
                Phase::Sent => Reply::Text(String::new()),
            }
        }));
        Model { server, seen: Mutex::new(rx) }
    }

    pub fn base_url(&self) -> &str {
        self.server.base_url()
    }

    /// Waits for the request of `phase` carrying `marker`, skipping others.
    pub fn wait(&self, marker: &str, phase: Phase) -> Instant {
        let seen = self.seen.lock().unwrap();
        loop {
            match seen.recv_timeout(Duration::from_secs(60)) {
                Ok(s) if s.marker == marker && s.phase == phase => return s.at,
                Ok(_) => continue,
                Err(e) => panic!("the model never saw {marker} ({phase:?}): {e}"),
            }
        }
    }

    /// Forgets every request reported so far (a template's turn, say).
    pub fn drain(&self) {
        while self.seen.lock().unwrap().try_recv().is_ok() {}
    }

    /// Counts requests of `phase` whose marker starts with `prefix`, until
    /// `n` have arrived or `timeout` passes; returns how many did.
    pub fn count(&self, prefix: &str, phase: Phase, n: usize, timeout: Duration) -> usize {
        let seen = self.seen.lock().unwrap();
        let deadline = Instant::now() + timeout;
        let mut count = 0;
        while count < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match seen.recv_timeout(left) {
                Ok(s) if s.phase == phase && s.marker.starts_with(prefix) => count += 1,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        count
    }
}

/// The last `[bench:...]` marker in the request: the newest contact
/// message's, else the objective's (the system prompt comes first).
fn marker(body: &Value) -> Option<String> {
    let text = body.to_string();
    let start = text.rfind("[bench:")? + "[bench:".len();
    let len = text[start..].find(']')?;
    Some(text[start..start + len].to_string())
}
