//! The real `relay` binary on a temporary home: init (sandbox channel, the
//! scripted model server), start, stop, and what the operating system says
//! about the daemon (RSS).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use relay::api::{State, TranscriptMessage};
use relay::home::Home;
use relay::store::{ConversationRecord, Store, to_pretty_json};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::http::Http;

pub struct Relay {
    pub bin: PathBuf,
    home: tempfile::TempDir,
    pub port: u16,
}

impl Relay {
    /// A fresh home on the sandbox channel whose agent talks to `model_url`,
    /// answering a contact at once (no reply window).
    pub fn new(bin: &Path, model_url: &str) -> Relay {
        let home = tempfile::Builder::new().prefix("relay-bench-").tempdir().expect("temp home");
        let relay = Relay { bin: bin.to_path_buf(), home, port: free_port() };
        relay.ok(&[
            "init",
            "--channel",
            "sandbox",
            "--provider",
            "openai-compatible",
            "--model",
            "scripted",
            "--base-url",
            model_url,
        ]);
        let path = relay.path().join("config.json");
        let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        config["agent"]["reply_window_ms"] = json!(0);
        // What protects people is not what is measured: the figures must
        // not depend on the hour, on how many numbers a run writes to
        // first (10 a day by default), nor on a disclosure line.
        config["courtesy"]["quiet_hours"] = json!("off");
        config["courtesy"]["max_new_contacts_per_day"] = json!(0);
        config["courtesy"]["disclosure"] = json!("off");
        std::fs::write(&path, config.to_string()).unwrap();
        relay
    }

    pub fn path(&self) -> &Path {
        self.home.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .env("RELAY_HOME", self.path())
            .env("RELAY_PORT", self.port.to_string())
            .env_remove("RELAY_LOG");
        command
    }

    /// Runs a relay command that must succeed.
    pub fn ok(&self, args: &[&str]) {
        let out = self.command(args).stdin(Stdio::null()).output().expect("run relay");
        assert!(out.status.success(), "relay {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn start(&self) {
        self.ok(&["start"]);
    }

    pub fn stop(&self) {
        self.ok(&["stop"]);
    }

    pub fn token(&self) -> String {
        std::fs::read_to_string(self.path().join("api-token")).expect("token").trim().to_string()
    }

    pub fn http(&self) -> Http {
        Http::connect(self.port, &self.token()).expect("connect to the daemon")
    }

    pub fn pid(&self) -> u32 {
        std::fs::read_to_string(self.path().join("daemon.pid")).expect("pid file").trim().parse().expect("a pid")
    }

    /// The daemon's resident set, in MiB.
    pub fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("daemon status");
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS");
        kib / 1024.0
    }

    pub fn store(&self) -> Store {
        Store::open(&Home::at(self.path())).expect("open the store")
    }

    /// One conversation made the normal way (create, first turn), once it
    /// waits for the contact: the template [`Relay::seed`] copies.
    pub fn template(&self, http: &mut Http, objective: &str) -> (ConversationRecord, Vec<TranscriptMessage>) {
        let body = create_body(objective, &contact(TEMPLATE), 86_400_000);
        let created: Value = serde_json::from_str(&http.expect("POST", "/instances", Some(&body), 201)).unwrap();
        let id = created["id"].as_str().unwrap().to_string();
        for _ in 0..2_000 {
            let got: Value = serde_json::from_str(&http.expect("GET", &format!("/instances/{id}"), None, 200)).unwrap();
            if got["state"] == "WAITING_FOR_REPLY" {
                let id: Uuid = id.parse().unwrap();
                let store = self.store();
                let instance = store.load_instances().unwrap().into_iter().find(|i| i.id == id).unwrap();
                return (instance, store.read_transcript(id).unwrap());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("the template conversation never reached WAITING_FOR_REPLY");
    }

    /// Writes `n` copies of a conversation into the (stopped) daemon's home,
    /// each with its own id and contact (`contact(k)`), adjusted by `each`.
    /// Each copy waits for its contact, so relay's first message reached
    /// them: their numbers are known (`first-contact.json`), as they would
    /// be. Plain writes: this is setup, and 10,000 fsyncs would only slow it.
    pub fn seed(
        &self,
        n: usize,
        template: &(ConversationRecord, Vec<TranscriptMessage>),
        mut each: impl FnMut(usize, &mut ConversationRecord),
    ) -> Vec<ConversationRecord> {
        let home = Home::at(self.path());
        let (instance, transcript) = template;
        assert_eq!(instance.state, State::WaitingForReply);
        let book = home.first_contact_file();
        let mut known: Value =
            std::fs::read(&book).map_or(json!({"started": []}), |b| serde_json::from_slice(&b).unwrap());
        let mut numbers: Vec<Value> = known["known"].as_array().cloned().unwrap_or_default();
        numbers.extend((0..n).map(|k| Value::String(contact(k))));
        known["known"] = Value::Array(numbers);
        std::fs::write(&book, to_pretty_json(&known)).unwrap();
        (0..n)
            .map(|k| {
                let mut copy = instance.clone();
                copy.id = Uuid::new_v4();
                copy.target_contact = contact(k);
                each(k, &mut copy);
                let checkpoint = home.instances_dir().join(format!("{}.json", copy.id));
                std::fs::write(&checkpoint, to_pretty_json(&copy)).unwrap();
                // Its empty log, as relay makes one with every conversation.
                std::fs::write(relay::store::record_file::log_path(&checkpoint), b"").unwrap();
                let lines: String = transcript
                    .iter()
                    .map(|m| {
                        let mut m = m.clone();
                        (m.id, m.instance_id) = (Uuid::new_v4(), copy.id);
                        serde_json::to_string(&m).unwrap() + "\n"
                    })
                    .collect();
                std::fs::write(home.transcripts_dir().join(format!("{}.jsonl", copy.id)), lines).unwrap();
                copy
            })
            .collect()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.command(&["stop"]).output();
    }
}

/// A command with no terminal: what is timed is the program, not a terminal.
pub fn quiet(mut command: Command) -> Command {
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    command
}

/// The contact of conversation `k` (below 120,000: the months figure seeds
/// 100,000): a distinct, valid US number.
pub fn contact(k: usize) -> String {
    const AREAS: [u32; 12] = [415, 212, 312, 617, 202, 303, 404, 503, 602, 713, 206, 305];
    format!("+1{}555{:04}", AREAS[k / 10_000], k % 10_000)
}

/// Contacts of the conversations the figures create, apart from the seeded ones.
pub const FRESH: usize = 20_000;
/// The template's contact.
const TEMPLATE: usize = 39_999;

pub fn create_body(objective: &str, contact: &str, interval_ms: u64) -> String {
    json!({
        "objective": objective,
        "target_contact": contact,
        "todos": [{"text": "Get a delivery day"}],
        "heartbeat_config": {"interval_ms": interval_ms, "max_followups": 3}
    })
    .to_string()
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port()
}
