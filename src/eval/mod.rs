//! How good a model is at relay's job (`relay eval`). Each scenario is one
//! whole conversation on a relay of its own ([`crate::trial`]: a temporary
//! home, the sandbox channel, the real daemon) with the model under test
//! and a scripted contact; what relay recorded is then checked by rule
//! (`score.rs`), and each scenario's result is a [`ScenarioScore`], all of
//! them a [`Scorecard`]. Nothing is sent over WhatsApp; the model is real,
//! and so are its costs. Printing the scorecard is the command line's.

mod honesty;
mod scenario;
mod score;

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::api::{ErrorCode, OutboxQuery, Outcome, Role, SandboxSayRequest, State, WaitQuery};
use crate::client::{Error, InstanceId};
use crate::config::{AgentSettings, ChannelKind, Config, ModelConfig};
use crate::trial::{self, Relay};

/// The photo a scenario's contact sends: a valid 1x1 PNG (a vision model's
/// provider decodes it), whose caption says what it shows.
const ONE_PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];
pub use scenario::Scenario;
pub use score::Check;

/// One scenario's result, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct ScenarioScore {
    pub name: String,
    pub about: String,
    pub passed: bool,
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Why it went to a person, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intervention_reason: Option<String>,
    pub timed_out: bool,
    pub checks: Vec<Check>,
    #[serde(flatten)]
    pub spent: Spent,
    /// The conversation as it went: who wrote what.
    pub conversation: Vec<Line>,
}

#[derive(Debug, Serialize)]
pub struct Line {
    pub from: &'static str,
    pub text: String,
}

/// What a scenario (or all of them) took.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Spent {
    /// Messages relay sent.
    pub messages: usize,
    /// Agent turns: the first message, each reply, each follow-up.
    pub turns: usize,
    pub model_calls: u64,
    pub input_tokens: u64,
    /// The part of `input_tokens` the server read from its prompt cache.
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    /// Tool calls read from the model's text.
    pub text_tool_calls: u64,
    pub seconds: f64,
}

impl std::ops::Add for Spent {
    type Output = Spent;
    fn add(self, other: Spent) -> Spent {
        Spent {
            messages: self.messages + other.messages,
            turns: self.turns + other.turns,
            model_calls: self.model_calls + other.model_calls,
            input_tokens: self.input_tokens + other.input_tokens,
            cached_input_tokens: self.cached_input_tokens + other.cached_input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            text_tool_calls: self.text_tool_calls + other.text_tool_calls,
            seconds: self.seconds + other.seconds,
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct Total {
    pub scenarios: usize,
    pub passed: usize,
    pub checks: usize,
    pub checks_passed: usize,
    #[serde(flatten)]
    pub spent: Spent,
}

#[derive(Debug, Serialize)]
pub struct Scorecard {
    pub model: String,
    pub scenarios: Vec<ScenarioScore>,
    pub total: Total,
}

/// The scenarios to run: those in `dir` (every *.toml) or the built-in
/// ones, and of them only those named in `only` (all when it is empty).
pub fn scenarios(dir: Option<&Path>, only: &[String]) -> Result<Vec<Scenario>, Error> {
    let mut scenarios = match dir {
        Some(dir) => Scenario::from_dir(dir).map_err(usage)?,
        None => Scenario::built_in(),
    };
    if !only.is_empty() {
        if let Some(unknown) = only.iter().find(|name| !scenarios.iter().any(|s| &&s.name == name)) {
            let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            return Err(usage(format!("no scenario {unknown:?}; there are: {}", names.join(", "))));
        }
        scenarios.retain(|s| only.contains(&s.name));
    }
    Ok(scenarios)
}

/// An evaluation of one model, ready to run its scenarios one by one.
pub struct Eval {
    /// The model, as the scorecard names it.
    label: String,
    /// The config of every scenario's trial relay.
    config: Config,
    scenarios: Vec<Scenario>,
    /// The run's secret, in every objective (see [`Eval::new`]).
    canary: String,
    /// How long one scenario may run; then it is scored as it stands.
    timeout: Duration,
    /// Hears the voice notes of scenarios that have them (its
    /// `/audio/transcriptions`): running while the evaluation lives.
    _transcriber: Option<crate::scripted_model::ScriptedModel>,
}

impl Eval {
    /// An evaluation of `model`, its turns run with `agent`'s settings.
    pub fn new(
        model: ModelConfig,
        agent: AgentSettings,
        scenarios: Vec<Scenario>,
        timeout: Duration,
    ) -> Result<Eval, Error> {
        let mut config = Config::new(ChannelKind::Sandbox);
        config.model = Some(model.clone());
        config.agent = agent;
        // A scenario's time is short: the agent may not put its next look further off.
        config.agent.min_scheduled_heartbeat_secs = 1;
        config.agent.max_scheduled_heartbeat_secs = 120;
        // Scenarios run at any hour, and rate the model's own words: no quiet
        // hours, no daily cap, no disclosure line before its first message
        // (the scorecard says so).
        config.courtesy = config.courtesy.any_hour();
        config.courtesy.disclosure = "off".into();
        // A contact who speaks needs someone to hear them: the scripted
        // transcriber hears the words a scripted voice note carries, so the
        // scenario rates the model, not a speech model.
        let speaks = scenarios.iter().any(|s| s.file.contact.iter().any(|line| scenario::spoken(line).is_some()));
        let transcriber =
            speaks.then(|| crate::scripted_model::ScriptedModel::start_on_thread(crate::scripted_model::queue(vec![])));
        config.media.transcription =
            transcriber.as_ref().map(|t| crate::config::TranscriptionConfig::new(t.base_url(), "scripted"));
        config.check().map_err(usage)?;
        // A key that cannot be found fails every scenario: say so before any runs.
        crate::agent::provider::connect(&model).map_err(usage)?;
        // A fresh secret per run, in every objective: no message may carry it.
        let canary = format!("RC-{}", &uuid::Uuid::new_v4().simple().to_string()[..scenario::CANARY_CHARS - 3]);
        let label = match &model.base_url {
            Some(url) => format!("{} at {url}", model.label()),
            None => model.label(),
        };
        Ok(Eval { label, config, scenarios, canary, timeout, _transcriber: transcriber })
    }

    /// The model under test, as the scorecard names it (with its URL when
    /// one is given).
    pub fn model(&self) -> &str {
        &self.label
    }

    pub fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    /// Runs `scenario` on a trial relay of its own, to its end or its time
    /// limit, and scores it; its time is the wall clock's, the relay's start
    /// and stop included.
    pub async fn run(&self, scenario: &Scenario) -> Result<ScenarioScore, Error> {
        let started = Instant::now();
        let score = trial::with_relay("eval", self.config.clone(), async |relay: &Relay| {
            play(relay, scenario, &self.canary, self.timeout).await
        })
        .await?;
        Ok(ScenarioScore { spent: Spent { seconds: started.elapsed().as_secs_f64(), ..score.spent }, ..score })
    }

    /// The scorecard of `scores`, the results of [`Eval::run`].
    pub fn scorecard(&self, scores: Vec<ScenarioScore>) -> Scorecard {
        let total = total(&scores);
        Scorecard { model: self.label.clone(), scenarios: scores, total }
    }
}

fn usage(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidArguments, message)
}

/// The scripted contact's next line, as the sandbox delivers it: words, a
/// photo, a voice note, an edit of their last message, or the operator
/// writing on their own phone (see [`scenario`]'s line prefixes).
async fn say_line(client: &crate::client::Client, id: &InstanceId, contact: &str, line: &str) -> Result<(), Error> {
    if let Some(words) = scenario::by_operator(line) {
        let message = SandboxSayRequest { from_operator: true, ..SandboxSayRequest::text(contact, words) };
        return client.sandbox_say(&message).await.map(drop);
    }
    if let Some(words) = scenario::edited(line) {
        let transcript = client.transcript(id).await?;
        let last = transcript.iter().rev().find(|m| m.role == Role::Contact).map(|m| m.id.to_string());
        let act = crate::api::SandboxActRequest {
            contact: contact.to_string(),
            act: crate::api::SandboxAct::Edit,
            message: last,
            emoji: None,
            text: Some(words.to_string()),
        };
        return client.sandbox_act(&act).await.map(drop);
    }
    let message = match (scenario::spoken(line), scenario::photographed(line)) {
        (None, None) => SandboxSayRequest::text(contact, line),
        (None, Some(caption)) => {
            let upload_id = client.upload(ONE_PIXEL_PNG.to_vec()).await?.upload_id;
            let media = crate::api::SandboxMedia {
                kind: crate::api::MediaKind::Photo,
                upload_id,
                mime: None,
                file_name: None,
                seconds: None,
                fail_downloads: 0,
            };
            SandboxSayRequest { media: Some(media), ..SandboxSayRequest::text(contact, caption) }
        }
        (Some(words), _) => {
            // About two and a half words a second, as people speak.
            let seconds = (words.split_whitespace().count() as u32 * 2 / 5).max(1);
            let note = crate::media::ogg::scripted_voice_note(words, seconds);
            let upload_id = client.upload(note).await?.upload_id;
            let media = crate::api::SandboxMedia {
                kind: crate::api::MediaKind::VoiceNote,
                upload_id,
                mime: None,
                file_name: None,
                seconds: Some(seconds),
                fail_downloads: 0,
            };
            SandboxSayRequest { media: Some(media), ..SandboxSayRequest::text(contact, "") }
        }
    };
    client.sandbox_say(&message).await.map(drop)
}

/// Runs one scenario's conversation to its end (or its time limit) and scores it.
async fn play(relay: &Relay, scenario: &Scenario, canary: &str, limit: Duration) -> Result<ScenarioScore, Error> {
    let client = &relay.client;
    let file = &scenario.file;
    let id = InstanceId::parse(&client.create(&scenario.request(canary)).await?.id.to_string())?;
    let to_contact = OutboxQuery { contact: Some(file.contact_number.clone()) };
    let started = Instant::now();
    // The contact writes their next line once relay has written and waits.
    let (mut said, mut answered) = (0, 0);
    // Wakes on any change; the timeout bounds a change missed between calls.
    let change = WaitQuery { until: Some("change".into()), timeout_ms: Some(2_000) };
    let (instance, timed_out) = loop {
        let instance = client.get(&id).await?;
        if instance.state.is_terminal() || matches!(instance.state, State::NeedsHumanIntervention | State::Paused) {
            break (instance, false);
        }
        if started.elapsed() > limit {
            break (instance, true);
        }
        if instance.state == State::WaitingForReply && said < file.contact.len() {
            let sent = client.sandbox_outbox(&to_contact).await?.len();
            if sent > answered {
                say_line(client, &id, &file.contact_number, &file.contact[said]).await?;
                (said, answered) = (said + 1, sent);
                continue;
            }
        }
        // An ended conversation refuses the wait: the next look sees it ended.
        if let Err(error) = client.wait(&id, &change).await
            && error.code != ErrorCode::Ended
        {
            return Err(error);
        }
    };
    let transcript = client.transcript(&id).await?;
    let outbox = client.sandbox_outbox(&OutboxQuery::default()).await?;
    let run = score::Run { scenario, instance: &instance, transcript: &transcript, outbox: &outbox, canary, timed_out };
    let checks = score::checks(&run);
    let conversation = transcript
        .iter()
        .map(|m| Line {
            from: match m.role {
                Role::Contact => "contact",
                Role::Agent => "relay",
                Role::Manual => "operator",
                Role::System => "note",
            },
            text: m.content.clone(),
        })
        .collect();
    Ok(ScenarioScore {
        name: scenario.name.clone(),
        about: file.about.clone(),
        passed: checks.iter().all(|c| c.passed),
        state: instance.state,
        outcome: instance.outcome,
        intervention_reason: instance.intervention_reason.clone(),
        timed_out,
        checks,
        spent: Spent {
            messages: transcript.iter().filter(|m| m.role == Role::Agent).count(),
            // A turn runs in ACTIVE (first message, replies) or
            // HEARTBEAT_SCHEDULED (follow-ups): one per entry into either.
            turns: instance
                .history
                .iter()
                .filter(|t| matches!(t.to_state, State::Active | State::HeartbeatScheduled))
                .count(),
            model_calls: instance.usage.model_calls,
            input_tokens: instance.usage.input_tokens,
            cached_input_tokens: instance.usage.cached_input_tokens,
            output_tokens: instance.usage.output_tokens,
            text_tool_calls: instance.usage.text_tool_calls,
            seconds: 0.0,
        },
        conversation,
    })
}

fn total(scores: &[ScenarioScore]) -> Total {
    scores.iter().fold(Total::default(), |t, s| Total {
        scenarios: t.scenarios + 1,
        passed: t.passed + usize::from(s.passed),
        checks: t.checks + s.checks.len(),
        checks_passed: t.checks_passed + s.checks.iter().filter(|c| c.passed).count(),
        spent: t.spent + s.spent,
    })
}
