//! The conversation agent seam. The engine asks an [`Agent`] to take a turn
//! (write the first message, answer the contact, write a follow-up); the
//! agent acts only through the [`ConversationTools`] it is handed, which are
//! scoped to its own conversation and carry no recipient.
//!
//! Until a model is configured, [`NoModel`] answers every turn with
//! [`AgentError::NotConfigured`], and the engine hands the conversation to a
//! human (NEEDS_HUMAN_INTERVENTION), who can drive it with `relay send`.

pub mod acts;
pub mod excerpt;
pub mod guard;
pub mod json_calls;
pub mod llm;
pub mod probe;
pub mod prompt;
pub mod provider;
pub mod seam;
pub mod text_calls;
pub mod tools;
pub mod transcribe;
pub mod verify;

use crate::api::{ConversationInstance, TokenUsage, TranscriptMessage};
use crate::util::BoxFuture;

pub use seam::{ConversationTools, ToolCall, ToolError, ToolSink};
pub use verify::{Verdict, Verification};

/// Why the engine asks for a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// A new conversation: open it.
    FirstMessage,
    /// The contact wrote (one or more messages since the last turn).
    Reply,
    /// The contact stayed silent: write follow-up `number` of `max`.
    FollowUp { number: u32, max: u32 },
    /// An operator handed the conversation back (`relay resume`). A turn cut
    /// short by a daemon restart re-runs with its original kind.
    Resume,
    /// The operator answered the agent's question (`relay answer`).
    Answered,
}

/// Everything the agent may know, rebuilt from disk for every turn.
#[derive(Debug, Clone)]
pub struct Turn {
    pub kind: TurnKind,
    pub instance: ConversationInstance,
    pub transcript: Vec<TranscriptMessage>,
    /// A message already went out to the contact since the conversation
    /// entered its current state: this turn re-runs one cut short (a restart,
    /// a pause) after it spoke, and owes the contact nothing more.
    pub already_spoke: bool,
    /// The contact's photos the model is shown in this turn (the newest
    /// few, when it can see: see [`Agent::sees_images`]), read by the
    /// engine: the agent opens no file.
    pub images: Vec<TurnImage>,
}

/// A contact's photo, for the model to see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnImage {
    /// The transcript message it came in.
    pub message_id: uuid::Uuid,
    /// What relay found it to be (`image/jpeg`).
    pub mime: String,
    pub bytes: Vec<u8>,
    /// The message as the model reads it while it sees the photo
    /// (`[photo m1] the meter`, where the transcript keeps "not shown to you").
    pub label: String,
}

/// How a turn may end. It must leave the conversation with someone to act:
/// the contact (a message went out to them), nobody (it ended the
/// conversation) or the operator (it asked for a human). The one silent
/// ending allowed: a turn answering the contact that chose, with
/// `schedule_next_heartbeat`, when to follow up (the contact asked for time).
/// Any other turn that sends nothing stalls the conversation, and relay hands
/// it to a person instead ([`AgentError::Silent`]). Both the agent's loop
/// (which first tells the model once) and the engine (for any agent) apply it.
pub fn may_end_without_sending(kind: TurnKind, scheduled_follow_up: bool) -> bool {
    kind == TurnKind::Reply && scheduled_follow_up
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error("no model is configured: answer the contact with `relay send`")]
    NotConfigured,
    #[error("the model failed: {0}")]
    Model(String),
    /// The turn ended having sent nothing it had to (see [`may_end_without_sending`]).
    #[error("the model answered without using its tools")]
    Silent,
    /// The same, but the model did try `send_message` or `send_attachment`:
    /// the channel refused it.
    #[error("nothing the model tried to send went out")]
    NotSent,
    /// The turn panicked: a bug in relay, caught (see `engine::actor::turns`).
    #[error("relay hit an internal error (a bug) during the agent's turn; see relay.log")]
    Crashed,
}

pub trait Agent: Send + Sync + 'static {
    /// The model, as `relay status` shows it, or None.
    fn model(&self) -> Option<String>;

    /// Whether the model is shown the contact's photos as images
    /// (`model.vision`); otherwise it reads their labels only.
    fn sees_images(&self) -> bool {
        false
    }

    /// The last model failure, until a call succeeds again.
    fn last_error(&self) -> Option<String> {
        None
    }

    /// Whether a turn can start at all. One that cannot fails at once, in
    /// step with the conversation's other events, rather than in a task.
    fn ready(&self) -> Result<(), AgentError> {
        Ok(())
    }

    /// Takes one turn. Side effects happen only through `tools`.
    fn run_turn(&self, turn: Turn, tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>>;

    /// A second look at a value relay cannot read by rule ([`verify`]),
    /// and what it cost.
    fn verify(&self, verification: Verification) -> BoxFuture<'_, Result<(Verdict, TokenUsage), AgentError>>;
}

/// The agent of a relay whose model is configured but cannot be used (its
/// API key is missing): every turn fails with the reason.
pub struct Misconfigured {
    pub model: String,
    pub error: String,
}

impl Agent for Misconfigured {
    fn model(&self) -> Option<String> {
        Some(self.model.clone())
    }

    fn last_error(&self) -> Option<String> {
        Some(self.error.clone())
    }

    fn ready(&self) -> Result<(), AgentError> {
        Err(AgentError::Model(self.error.clone()))
    }

    fn run_turn(&self, _turn: Turn, _tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>> {
        let error = self.error.clone();
        Box::pin(async move { Err(AgentError::Model(error)) })
    }

    fn verify(&self, _verification: Verification) -> BoxFuture<'_, Result<(Verdict, TokenUsage), AgentError>> {
        let error = self.error.clone();
        Box::pin(async move { Err(AgentError::Model(error)) })
    }
}

/// Builds the agent `config` describes.
pub fn from_config(config: &crate::config::Config) -> std::sync::Arc<dyn Agent> {
    match &config.model {
        None => std::sync::Arc::new(NoModel),
        Some(model) => match llm::LlmAgent::new(model, config.agent.clone()) {
            Ok(agent) => std::sync::Arc::new(agent),
            Err(error) => {
                tracing::error!(model = %model.label(), %error, "the model cannot be used");
                std::sync::Arc::new(Misconfigured { model: model.label(), error })
            }
        },
    }
}

/// The agent of a relay with no model configured.
pub struct NoModel;

impl Agent for NoModel {
    fn model(&self) -> Option<String> {
        None
    }

    fn ready(&self) -> Result<(), AgentError> {
        Err(AgentError::NotConfigured)
    }

    fn run_turn(&self, _turn: Turn, _tools: ConversationTools) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async { Err(AgentError::NotConfigured) })
    }

    fn verify(&self, _verification: Verification) -> BoxFuture<'_, Result<(Verdict, TokenUsage), AgentError>> {
        Box::pin(async { Err(AgentError::NotConfigured) })
    }
}
