//! What the in-process conversation tests share: a world (engine, home,
//! sandbox channel) whose test agent acts as a test says, restarting its
//! engine, a create request, and waiting for a state.

use std::sync::Arc;
use std::time::Duration;

use relay::agent::{AgentError, ConversationTools, ToolCall, Turn};
use relay::api::{ConversationInstance, CreateInstanceRequest, HeartbeatOverrides, NewTodo, State};
use relay::channel::SandboxChannel;
use relay::contact::Contact;
use relay::engine::Engine;
use relay::home::Home;
use relay::util::BoxFuture;

use crate::support::engine::{self, start_engine, until};
use crate::support::test_agent::TestAgent;

pub(super) const CONTACT: &str = "+56912345678";

pub(super) type World = engine::World<SandboxChannel>;

pub(super) fn world(
    behaviour: impl Fn(Turn, ConversationTools) -> BoxFuture<'static, Result<(), AgentError>> + Send + Sync + 'static,
) -> World {
    World::start(sandbox, Arc::new(TestAgent::new(behaviour)))
}

/// A world whose agent sends `text` every turn (and expects it taken).
pub(super) fn saying(text: &'static str) -> World {
    world(move |_turn, tools| {
        Box::pin(async move {
            tools.call(send(text)).await.unwrap();
            Ok(())
        })
    })
}

/// A world whose agent shares `T` with the test (something to wait on, or
/// to keep what the tools answered in), made fresh for it.
pub(super) fn world_sharing<T: Default + Send + Sync + 'static>(
    behaviour: impl Fn(Turn, ConversationTools, Arc<T>) -> BoxFuture<'static, Result<(), AgentError>>
    + Send
    + Sync
    + 'static,
) -> (World, Arc<T>) {
    let shared = Arc::new(T::default());
    let theirs = shared.clone();
    (world(move |turn, tools| behaviour(turn, tools, theirs.clone())), shared)
}

pub(super) fn sandbox(home: &Home) -> SandboxChannel {
    SandboxChannel::open(home).unwrap()
}

/// A new engine on the world's home (after the old one shut down), with the same agent.
pub(super) fn restart(w: &World) -> Engine {
    start_engine(&w.home, Arc::new(sandbox(&w.home)), w.agent.clone())
}

pub(super) fn request(todos: &[&str], interval: Option<Duration>, max_followups: Option<u32>) -> CreateInstanceRequest {
    CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: CONTACT.into(),
        todos: todos.iter().map(|t| NewTodo::new(t.to_string())).collect(),
        heartbeat_config: Some(HeartbeatOverrides {
            interval_ms: interval.map(|d| d.as_millis() as u64),
            max_followups,
        }),
        ..Default::default()
    }
}

pub(super) async fn until_state(engine: &Engine, id: uuid::Uuid, state: State) -> ConversationInstance {
    until(engine, id, |i| i.state == state).await
}

pub(super) fn triggers(instance: &ConversationInstance) -> Vec<&str> {
    instance.history.iter().map(|t| t.trigger.as_str()).collect()
}

pub(super) async fn say(w: &World, text: &str) {
    w.channel.say(Contact::parse(CONTACT).unwrap(), text.into()).await;
}

pub(super) fn send(text: &str) -> ToolCall {
    ToolCall::SendMessage { text: text.into() }
}
