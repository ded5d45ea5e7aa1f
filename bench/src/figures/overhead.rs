//! Engine overhead, model time excluded: the real engine and store (in a
//! temporary home on this disk, every write fsynced) with a probe for an
//! agent and a probe for a channel, in this process. Two spans:
//! - a contact message arriving (`Engine::deliver`, what the sandbox and the
//!   WhatsApp channel call) until the agent's turn starts, which is where the
//!   model request would be built and sent;
//! - a `send_message` tool call until the channel's `send` is called, which
//!   includes writing the message `pending` first.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use relay::agent::{Agent, AgentError, ConversationTools, ToolCall, Turn, Verdict, Verification};
use relay::api::{ChannelStatus, CreateInstanceRequest, HeartbeatOverrides, NewTodo, TokenUsage};
use relay::channel::{Channel, ChannelError, InboundMessage, InboundSink, Sent};
use relay::contact::Contact;
use relay::engine::{Engine, Settings};
use relay::home::Home;
use relay::store::Store;
use relay::util::BoxFuture;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::relay::contact;
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

#[derive(Debug)]
enum Probe {
    TurnStarted(Instant),
    Calling(Instant),
    Sending(Instant),
}

struct ProbeAgent(UnboundedSender<Probe>);

impl Agent for ProbeAgent {
    fn model(&self) -> Option<String> {
        Some("bench probe (no model)".into())
    }

    fn run_turn(&self, _turn: Turn, tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async move {
            let _ = self.0.send(Probe::TurnStarted(Instant::now()));
            let _ = self.0.send(Probe::Calling(Instant::now()));
            let call = ToolCall::SendMessage { text: "Thanks, which day suits you?".into() };
            tools.call(call).await.map_err(|e| AgentError::Model(e.to_string()))?;
            Ok(())
        })
    }

    /// The probe marks no todo, so it is never asked.
    fn verify(&self, _verification: Verification) -> BoxFuture<'_, Result<(Verdict, TokenUsage), AgentError>> {
        Box::pin(async { Err(AgentError::NotConfigured) })
    }
}

struct ProbeChannel {
    probes: UnboundedSender<Probe>,
    sink: OnceLock<Arc<dyn InboundSink>>,
    sent: Mutex<u64>,
}

impl Channel for ProbeChannel {
    fn attach(&self, inbound: Arc<dyn InboundSink>) {
        let _ = self.sink.set(inbound);
    }

    fn name(&self) -> &'static str {
        "bench probe"
    }

    fn status(&self) -> ChannelStatus {
        ChannelStatus {
            kind: "bench".into(),
            state: "connected".into(),
            connected: true,
            detail: None,
            phone: None,
            version: None,
            catching_up: false,
            missing: None,
        }
    }

    fn send<'a>(&'a self, _to: &'a Contact, _text: &'a str) -> BoxFuture<'a, Result<Sent, ChannelError>> {
        let _ = self.probes.send(Probe::Sending(Instant::now()));
        let mut sent = self.sent.lock().unwrap();
        *sent += 1;
        let id = format!("probe-{sent}");
        Box::pin(async move { Ok(Sent { message_id: Some(id) }) })
    }
}

pub fn run(runs: usize) -> Section {
    println!("engine overhead: {runs} turns in process");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (inbound, send) = runtime.block_on(measure(runs));
    let mut section = Section::new(
        "Engine overhead",
        &format!(
            "In process, model time excluded: the real engine and store on this disk (every write fsynced; one fsync of 300 \
             bytes costs {} here), a probe agent and a probe channel; {runs} turns, each on a fresh conversation. \
             Target: p50 < 2 ms.",
            ms(fsync_cost())
        ),
        &["span", "what it includes", "median", "p99", "target"],
    );
    section.row(vec![
        "contact message → turn starts".into(),
        "record the message and the new state on disk, rebuild the turn's transcript from disk".into(),
        ms(inbound.median()),
        ms(inbound.p99()),
        verdict(inbound.median() < 2.0),
    ]);
    section.row(vec![
        "`send_message` → channel send".into(),
        "check the call, record the message `pending` on disk".into(),
        ms(send.median()),
        ms(send.p99()),
        verdict(send.median() < 2.0),
    ]);
    section
}

async fn measure(runs: usize) -> (Samples, Samples) {
    let dir = tempfile::Builder::new().prefix("relay-bench-engine-").tempdir().unwrap();
    let (tx, mut rx) = unbounded_channel();
    let channel = Arc::new(ProbeChannel { probes: tx.clone(), sink: OnceLock::new(), sent: Mutex::new(0) });
    let agent = Arc::new(ProbeAgent(tx));
    let store = Store::open(&Home::at(dir.path())).unwrap();
    let settings = Settings {
        reply_window: Duration::ZERO,
        scheduled_heartbeat_bounds: (Duration::from_secs(60), Duration::from_secs(3600)),
        delivery_timeout: Duration::from_secs(600),
        // Measured at any hour, over many numbers: no quiet hours, no cap.
        courtesy: relay::config::CourtesySettings::default().any_hour(),
        budget: relay::config::BudgetSettings::default(),
        ..Settings::default()
    };
    let engine = Engine::start(store, channel, agent, settings).unwrap();
    let (mut inbound, mut send) = (Vec::new(), Vec::new());
    for k in 0..runs + 10 {
        let to = contact(k);
        let request = CreateInstanceRequest {
            objective: "Confirm the delivery".into(),
            target_contact: to.clone(),
            todos: vec![NewTodo::new("Get a delivery day")],
            heartbeat_config: Some(HeartbeatOverrides { interval_ms: Some(86_400_000), max_followups: Some(3) }),
            ..Default::default()
        };
        let id = engine.create(request).await.unwrap().id.to_string();
        turn(&mut rx).await;
        wait_until_waiting(&engine, &id).await;

        let arrived = Instant::now();
        engine.deliver(InboundMessage::new(Contact::parse(&to).unwrap(), "Tuesday works")).await;
        let (started, calling, sending) = turn(&mut rx).await;
        wait_until_waiting(&engine, &id).await;
        // The first turns warm the page cache and the allocator.
        if k >= 10 {
            inbound.push(started - arrived);
            send.push(sending - calling);
        }
    }
    engine.shutdown().await;
    (Samples::from_durations(inbound), Samples::from_durations(send))
}

/// The three probes of one turn, in order.
async fn turn(rx: &mut UnboundedReceiver<Probe>) -> (Instant, Instant, Instant) {
    let a = rx.recv().await.expect("probe");
    let b = rx.recv().await.expect("probe");
    let c = rx.recv().await.expect("probe");
    match (a, b, c) {
        (Probe::TurnStarted(a), Probe::Calling(b), Probe::Sending(c)) => (a, b, c),
        other => panic!("probes out of order: {other:?}"),
    }
}

/// The turn's last writes land before the next span starts, so spans do not overlap.
async fn wait_until_waiting(engine: &Engine, id: &str) {
    let mut changes = engine.subscribe();
    while engine.get(id).unwrap().state != relay::api::State::WaitingForReply {
        changes.changed().await.unwrap();
    }
}

/// One 300-byte write and fsync on this disk, median of 200: the unit every durable write pays.
fn fsync_cost() -> f64 {
    use std::io::Write;
    let dir = tempfile::Builder::new().prefix("relay-bench-fsync-").tempdir().unwrap();
    let mut file = std::fs::File::create(dir.path().join("probe")).unwrap();
    Samples::time(200, 10, || {
        file.write_all(&[b'x'; 300]).unwrap();
        file.sync_data().unwrap();
    })
    .median()
}
