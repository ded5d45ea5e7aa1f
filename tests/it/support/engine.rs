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
use relay::store::Store;

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
    done: impl Fn(&ConversationInstance) -> bool,
) -> ConversationInstance {
    let mut changes = engine.subscribe();
    loop {
        let instance = engine.get(&id.to_string()).unwrap();
        if done(&instance) {
            return instance;
        }
        tokio::time::timeout(Duration::from_secs(24 * 3600), changes.changed())
            .await
            .unwrap_or_else(|_| panic!("conversation stuck in {:?}", instance.state))
            .unwrap();
    }
}
