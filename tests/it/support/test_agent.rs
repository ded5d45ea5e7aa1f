//! The scripted agent of the in-process engine tests: runs a closure for
//! every turn, through the real tools, and remembers what each turn was given.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use relay::agent::{Agent, AgentError, ConversationTools, Turn, TurnKind, Verdict, Verification};
use relay::api::TokenUsage;
use relay::util::BoxFuture;

pub type Behaviour = dyn Fn(Turn, ConversationTools) -> BoxFuture<'static, Result<(), AgentError>> + Send + Sync;

pub struct TestAgent {
    pub behaviour: Box<Behaviour>,
    pub turns: Mutex<Vec<Turn>>,
    /// How many of the next `ready` checks panic (a bug in relay, played:
    /// the engine calls `ready` in the contact's task, before a turn).
    pub ready_panics: AtomicU32,
    /// The second looks asked for, and the verdicts to give them in order;
    /// past the end, each is confirmed (a test of refusals says so).
    pub verifications: Mutex<Vec<Verification>>,
    pub verdicts: Mutex<std::collections::VecDeque<Verdict>>,
}

impl TestAgent {
    pub fn new(
        behaviour: impl Fn(Turn, ConversationTools) -> BoxFuture<'static, Result<(), AgentError>> + Send + Sync + 'static,
    ) -> TestAgent {
        TestAgent {
            behaviour: Box::new(behaviour),
            turns: Mutex::new(Vec::new()),
            ready_panics: AtomicU32::new(0),
            verifications: Mutex::new(Vec::new()),
            verdicts: Mutex::new(Default::default()),
        }
    }

    pub fn kinds(&self) -> Vec<TurnKind> {
        self.turns.lock().unwrap().iter().map(|t| t.kind).collect()
    }
}

impl Agent for TestAgent {
    fn model(&self) -> Option<String> {
        Some("test-agent".into())
    }

    fn ready(&self) -> Result<(), AgentError> {
        if self.ready_panics.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            panic!("a bug, played by the test agent");
        }
        Ok(())
    }

    fn run_turn(&self, turn: Turn, tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>> {
        self.turns.lock().unwrap().push(turn.clone());
        (self.behaviour)(turn, tools)
    }

    fn verify(&self, verification: Verification) -> BoxFuture<'_, Result<(Verdict, TokenUsage), AgentError>> {
        self.verifications.lock().unwrap().push(verification);
        let verdict = self.verdicts.lock().unwrap().pop_front().unwrap_or(Verdict::Confirmed);
        Box::pin(async move { Ok((verdict, TokenUsage { model_calls: 1, ..TokenUsage::default() })) })
    }
}
