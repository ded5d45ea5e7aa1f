//! The in-process engine of the engine tests: a temporary home, a channel
//! and the test agent (run on tokio's paused clock by the tests), and
//! waiting for a conversation on the engine's change notifications, never
//! on a fixed sleep.

use std::sync::Arc;
use std::time::Duration;

use relay::api::ConversationInstance;
use relay::channel::Channel;
use relay::engine::{Engine, Settings};
use relay::home::Home;
use relay::store::{ConversationRecord, Store};

use super::test_agent::TestAgent;

pub struct World<C> {
    _dir: tempfile::TempDir,
    pub home: Home,
    pub engine: Engine,
    pub channel: Arc<C>,
    pub agent: Arc<TestAgent>,
}

impl<C: Channel + 'static> World<C> {
    /// An engine on a fresh home, with the channel `open` makes for that home.
    pub fn start(open: impl FnOnce(&Home) -> C, agent: Arc<TestAgent>) -> World<C> {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let channel = Arc::new(open(&home));
        let engine = start_engine(&home, channel.clone(), agent.clone());
        World { _dir: dir, home, engine, channel, agent }
    }
}

/// An engine on `home` with the default settings but for what depends on
/// the hour (quiet hours, the daily cap) and the disclosure line, which are
/// off: on a used home, a restart.
pub fn start_engine(home: &Home, channel: Arc<dyn Channel>, agent: Arc<TestAgent>) -> Engine {
    start_engine_with(home, channel, agent, any_hour())
}

/// The default settings with quiet hours, the daily cap and the disclosure off.
pub fn any_hour() -> Settings {
    let mut settings = Settings::default();
    settings.courtesy = settings.courtesy.any_hour();
    settings.courtesy.disclosure = "off".into();
    settings
}

pub fn start_engine_with(home: &Home, channel: Arc<dyn Channel>, agent: Arc<TestAgent>, settings: Settings) -> Engine {
    Engine::start(Store::open(home).unwrap(), channel, agent, settings).unwrap()
}

/// Waits until `done` holds for conversation `id`. On the paused clock a
/// conversation that no event moves lets time run to the timeout: it is
/// reported stuck.
pub async fn until(
    engine: &Engine,
    id: uuid::Uuid,
    done: impl Fn(&ConversationRecord) -> bool,
) -> ConversationInstance {
    let mut changes = engine.subscribe();
    loop {
        let instance = engine.record(&id.to_string()).unwrap();
        if done(&instance) {
            return instance.instance;
        }
        tokio::time::timeout(Duration::from_secs(24 * 3600), changes.changed())
            .await
            .unwrap_or_else(|_| panic!("conversation stuck in {:?}", instance.state))
            .unwrap();
    }
}

/// An engine on the sandbox channel whose home outlives it, for the tests of
/// what relay enforces whatever the agent does (courtesy, first contact,
/// budgets): they restart it, play contacts, and read what was sent.
pub struct SandboxWorld {
    _dir: tempfile::TempDir,
    pub home: Home,
    pub engine: Engine,
    pub channel: Arc<relay::channel::SandboxChannel>,
    pub agent: Arc<TestAgent>,
    pub settings: Settings,
}

impl SandboxWorld {
    pub fn start(agent: Arc<TestAgent>, settings: Settings) -> SandboxWorld {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let channel = Arc::new(relay::channel::SandboxChannel::open(&home).unwrap());
        let engine = start_engine_with(&home, channel.clone(), agent.clone(), settings.clone());
        SandboxWorld { _dir: dir, home, engine, channel, agent, settings }
    }

    /// Stops the engine and starts another on the same home.
    pub async fn restart(&mut self) {
        self.engine.shutdown().await;
        self.channel = Arc::new(relay::channel::SandboxChannel::open(&self.home).unwrap());
        self.engine = start_engine_with(&self.home, self.channel.clone(), self.agent.clone(), self.settings.clone());
    }

    /// `contact` writes, as over WhatsApp.
    pub async fn say(&self, contact: &str, text: &str) {
        self.channel.say(relay::contact::Contact::parse(contact).unwrap(), text.into()).await;
    }

    /// The agent's messages in conversation `id`, oldest first, as recorded.
    pub fn agent_messages(&self, id: uuid::Uuid) -> Vec<relay::api::TranscriptMessage> {
        let transcript = self.engine.transcript(&id.to_string()).unwrap();
        transcript.into_iter().filter(|m| m.role == relay::api::Role::Agent).collect()
    }

    /// What reached `contact`'s phone.
    pub fn received(&self, contact: &str) -> Vec<String> {
        let contact = relay::contact::Contact::parse(contact).unwrap();
        self.channel.outbox(Some(&contact)).into_iter().map(|e| e.text).collect()
    }
}

/// An agent that writes "Hello" first, answers every reply with "Noted" and
/// every follow-up with "Still there?".
pub fn polite_agent() -> Arc<TestAgent> {
    use relay::agent::{ConversationTools, ToolCall, Turn, TurnKind};
    Arc::new(TestAgent::new(|turn: Turn, tools: ConversationTools| -> relay::util::BoxFuture<'static, _> {
        Box::pin(async move {
            let text = match turn.kind {
                TurnKind::FirstMessage => "Hello",
                TurnKind::FollowUp { .. } => "Still there?",
                _ => "Noted",
            };
            tools.call(ToolCall::SendMessage { text: text.into() }).await.unwrap();
            Ok(())
        })
    }))
}
