//! The scripted agent of the in-process engine tests: runs a closure for
//! every turn, through the real tools, and remembers what each turn was given.

use std::sync::Mutex;

use relay::agent::{Agent, AgentError, ConversationTools, Turn, TurnKind};
use relay::util::BoxFuture;

pub type Behaviour = dyn Fn(Turn, ConversationTools) -> BoxFuture<'static, Result<(), AgentError>> + Send + Sync;

pub struct TestAgent {
    pub behaviour: Box<Behaviour>,
    pub turns: Mutex<Vec<Turn>>,
}

impl TestAgent {
    pub fn new(
        behaviour: impl Fn(Turn, ConversationTools) -> BoxFuture<'static, Result<(), AgentError>> + Send + Sync + 'static,
    ) -> TestAgent {
        TestAgent { behaviour: Box::new(behaviour), turns: Mutex::new(Vec::new()) }
    }

    pub fn kinds(&self) -> Vec<TurnKind> {
        self.turns.lock().unwrap().iter().map(|t| t.kind).collect()
    }
}

impl Agent for TestAgent {
    fn model(&self) -> Option<String> {
        Some("test-agent".into())
    }

    fn run_turn(&self, turn: Turn, tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>> {
        self.turns.lock().unwrap().push(turn.clone());
        (self.behaviour)(turn, tools)
    }
}
