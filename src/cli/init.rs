//! `relay init`: creates the home (owner-only) and writes config.json, then
//! links WhatsApp (see `link`). Run again, it changes only what its flags say.

use std::io::{BufRead, IsTerminal, Write};

use serde::Serialize;

use super::output::say;
use super::{CliError, Context, output};
use crate::config::{ChannelKind, Config, ModelConfig, Provider, ToolCalls, TranscriptionConfig};
use crate::contact::Contact;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The channel relay speaks through [default: whatsapp; asked when interactive].
    #[arg(long, value_enum)]
    pub channel: Option<ChannelKind>,
    /// The conversation agent's model provider.
    #[arg(long, value_enum, requires = "model")]
    pub provider: Option<Provider>,
    /// The model's name at the provider (e.g. claude-haiku-4-5, gpt-4o-mini, qwen3).
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's URL; openai-compatible: the URL that /chat/completions follows (e.g. http://127.0.0.1:8000/v1).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (preferred: the key stays out of config.json).
    #[arg(long, conflicts_with = "api_key")]
    pub api_key_env: Option<String>,
    /// The API key itself, stored in config.json (owner-only, never printed).
    #[arg(long)]
    pub api_key: Option<String>,
    /// The model's sampling temperature, 0 to 2 [default: 0.2 for openai-compatible and ollama, none sent otherwise].
    #[arg(long)]
    pub temperature: Option<f64>,
    /// The longest answer one model call may write, in tokens [default: 1024].
    #[arg(long, value_name = "TOKENS")]
    pub max_output_tokens: Option<u64>,
    /// How the model makes its tool calls [default: json_schema for openai-compatible and ollama, native otherwise].
    #[arg(long, value_enum)]
    pub tool_calls: Option<ToolCalls>,
    /// How long one model call may take (e.g. 90s, 5m) [default: 5m for openai-compatible and ollama, 1m otherwise].
    #[arg(long, value_name = "DURATION", value_parser = whole_seconds)]
    pub request_timeout: Option<std::time::Duration>,
    /// Link WhatsApp now [default when run in a terminal].
    #[arg(long, conflicts_with = "no_link")]
    pub link: bool,
    /// Do not link WhatsApp now.
    #[arg(long)]
    pub no_link: bool,
    /// Link with a code typed on this phone (E.164, e.g. +56912345678) instead of a QR code.
    #[arg(long, value_name = "PHONE", conflicts_with = "no_link")]
    pub pair_phone: Option<String>,
    /// Unlink the current WhatsApp session and link again.
    #[arg(long, conflicts_with = "no_link")]
    pub force: bool,
    /// How long linking tries to reach WhatsApp before it gives up (e.g. 30s, 5m).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_timeout)]
    pub timeout: std::time::Duration,
    /// Whom relay writes for, named in the line that tells each contact an
    /// automated assistant is writing (`courtesy.operator_name`), e.g. "Ana Pérez".
    #[arg(long, value_name = "NAME")]
    pub operator_name: Option<String>,
    /// The server that transcribes voice notes: the URL /audio/transcriptions
    /// follows (e.g. https://api.openai.com/v1, https://api.groq.com/openai/v1).
    #[arg(long, value_name = "URL")]
    pub transcription_url: Option<String>,
    /// Its transcription model [default: whisper-1 at api.openai.com,
    /// whisper-large-v3-turbo at api.groq.com; required for other servers].
    #[arg(long, value_name = "MODEL")]
    pub transcription_model: Option<String>,
    /// The environment variable holding its API key.
    #[arg(long, value_name = "VAR")]
    pub transcription_key_env: Option<String>,
    /// The contacts' language, as an ISO 639-1 code (e.g. es, en) [default: the server guesses].
    #[arg(long, value_name = "CODE")]
    pub transcription_language: Option<String>,
    /// Transcribe no voice notes: removes the transcription settings.
    #[arg(
        long,
        conflicts_with_all = ["transcription_url", "transcription_model", "transcription_key_env", "transcription_language"]
    )]
    pub no_transcription: bool,
}

#[derive(Serialize)]
struct Initialised {
    home: String,
    config_file: String,
    channel: ChannelKind,
    daemon_port: u16,
    /// "provider/name", or null: never the key.
    model: Option<String>,
    /// "model at base_url" of the voice notes' transcription, or null.
    transcription: Option<String>,
    created: bool,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let pair_phone =
        args.pair_phone.as_deref().map(Contact::parse).transpose().map_err(|e| CliError::usage(e.to_string()))?;
    let existing = match Config::read(&ctx.home) {
        Ok(config) => Some(config),
        Err(crate::config::ConfigError::Missing(_)) => None,
        Err(other) => return Err(other.into()),
    };
    let config = configure(ctx, &args, existing.as_ref())?;
    let fail = |e: std::io::Error| CliError::failure(format!("cannot write {}: {e}", ctx.home.root().display()));
    ctx.home.create().map_err(fail)?;
    config.save(&ctx.home.config_file()).map_err(fail)?;

    let done = Initialised {
        home: ctx.home.root().display().to_string(),
        config_file: ctx.home.config_file().display().to_string(),
        channel: config.channel,
        daemon_port: config.daemon_port,
        model: config.model.as_ref().map(ModelConfig::label),
        transcription: config.media.transcription.as_ref().map(TranscriptionConfig::label),
        created: existing.is_none(),
    };
    let asked_to_link = args.link || args.force || pair_phone.is_some();
    if asked_to_link && config.channel != ChannelKind::Whatsapp {
        return Err(CliError::usage(
            "--link, --pair-phone and --force link WhatsApp, and this home uses the sandbox channel (add --channel whatsapp)",
        ));
    }
    let link = config.channel == ChannelKind::Whatsapp
        && !args.no_link
        && (asked_to_link || (!ctx.json && std::io::stdout().is_terminal()));
    if ctx.json {
        output::json(&done);
        return match link {
            true => super::link::run(ctx, pair_phone, args.force, args.timeout).await,
            false => Ok(()),
        };
    }
    say_done(&done, &config, link, args.no_transcription);
    let running = crate::home::daemon_files::is_locked(&ctx.home);
    if running && existing.as_ref() != Some(&config) {
        say!("The daemon is running: `relay stop && relay start` to apply this config.");
    }
    if link {
        super::link::run(ctx, pair_phone, args.force, args.timeout).await?;
        if !running {
            say!("Next: `relay start`; it reconnects with this link, no QR code needed.");
        }
    }
    Ok(())
}

/// The config this run makes: the one there was (if any) with what was
/// given here, checked.
fn configure(ctx: &Context, args: &Args, existing: Option<&Config>) -> Result<Config, CliError> {
    let channel = match (args.channel, existing) {
        (Some(channel), _) => channel,
        (None, Some(config)) => config.channel,
        (None, None) if !ctx.json && std::io::stdin().is_terminal() => ask_channel()?,
        (None, None) => ChannelKind::Whatsapp,
    };
    let mut config = existing.cloned().unwrap_or_else(|| Config::new(channel));
    config.channel = channel;
    if let Some(port) = ctx.port {
        config.daemon_port = port;
    }
    config.model = model_config(args, config.model.take())?;
    config.media.transcription = transcription_config(args, config.media.transcription.take())?;
    if let Some(name) = &args.operator_name {
        if let Some(problem) = crate::config::operator_name_problem(name) {
            return Err(CliError::usage(format!("--operator-name {problem}")));
        }
        config.courtesy.operator_name = Some(name.trim().to_string());
    }
    // The daemon refuses to start on what this check refuses: better said now.
    config.check().map_err(CliError::usage)?;
    Ok(config)
}

/// What was set up, and what to do next.
fn say_done(done: &Initialised, config: &Config, link: bool, no_transcription: bool) {
    let channel = config.channel;
    let verb = if done.created { "Initialised" } else { "Updated" };
    say!("{verb} relay in {} (channel {}, port {}).", done.home, channel.as_str(), done.daemon_port);
    match &config.model {
        Some(model) => {
            say!("Model: {} ({}; tool calls: {}).", model.label(), model.key_source(), model.tool_calls().as_str())
        }
        None => say!("No model: conversations go to you (`relay send`). Add one with --provider and --model."),
    }
    match channel {
        ChannelKind::Sandbox => {
            say!("The sandbox channel simulates contacts: nothing is sent over WhatsApp.");
            say!("Next: `relay start`, then `relay create ...` and play the contact with `relay sandbox say`.");
        }
        ChannelKind::Whatsapp if link => {}
        ChannelKind::Whatsapp => {
            say!("WhatsApp is not linked by this run: `relay init --link` shows the QR code to scan.");
        }
    }
    courtesy(&config.courtesy);
    match &config.media.transcription {
        Some(transcription) => say!("Transcription: {} ({}).", transcription.label(), transcription.key_source()),
        None if no_transcription => say!("Transcription: none."),
        None => {}
    }
}

/// What relay does to be a careful sender, said once, where to change it.
fn courtesy(courtesy: &crate::config::CourtesySettings) {
    say!("Courtesy: {} (config.json's courtesy section).", courtesy.describe());
    match (&courtesy.operator_name, courtesy.disclosure_line()) {
        (_, None) => say!("The disclosure is off: contacts are not told an assistant writes (the law may require it)."),
        (Some(_), Some(line)) => say!("Each conversation opens with: \"{line}\""),
        (None, Some(_)) => {
            say!("Each conversation opens by saying an assistant writes; name yourself with --operator-name.")
        }
    }
}

/// `--request-timeout`, kept in config.json as whole seconds: a fraction
/// would be cut off unseen, so it is refused.
fn whole_seconds(text: &str) -> Result<std::time::Duration, String> {
    let timeout = super::at_least_a_second(text)?;
    match timeout.subsec_nanos() {
        0 => Ok(timeout),
        _ => Err(format!("{text} is not a whole number of seconds")),
    }
}

fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    crate::duration::parse(text).map_err(|e| e.to_string())
}

fn ask_channel() -> Result<ChannelKind, CliError> {
    let mut out = output::stdout();
    let _ = write!(out, "Channel: whatsapp, or sandbox (simulated contacts, to try relay) [whatsapp]: ");
    let _ = out.flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).map_err(|e| CliError::failure(e.to_string()))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "" | "whatsapp" => Ok(ChannelKind::Whatsapp),
        "sandbox" => Ok(ChannelKind::Sandbox),
        other => Err(CliError::usage(format!("unknown channel '{other}' (whatsapp or sandbox)"))),
    }
}

/// The model section after this `init`: the flags change what they name and
/// keep the rest.
fn model_config(args: &Args, existing: Option<ModelConfig>) -> Result<Option<ModelConfig>, CliError> {
    let named = args.model.is_some()
        || args.base_url.is_some()
        || args.api_key.is_some()
        || args.api_key_env.is_some()
        || args.temperature.is_some()
        || args.max_output_tokens.is_some()
        || args.request_timeout.is_some()
        || args.tool_calls.is_some();
    let mut model = match (args.provider, existing) {
        (Some(provider), existing) => {
            let same = existing.filter(|m| m.provider == provider);
            ModelConfig {
                provider,
                name: String::new(),
                base_url: same.as_ref().and_then(|m| m.base_url.clone()),
                api_key_env: same.as_ref().and_then(|m| m.api_key_env.clone()),
                tool_calls: same.as_ref().and_then(|m| m.tool_calls),
                text_tool_calls: same.as_ref().and_then(|m| m.text_tool_calls),
                temperature: same.as_ref().and_then(|m| m.temperature),
                max_output_tokens: same.as_ref().and_then(|m| m.max_output_tokens),
                request_timeout_secs: same.as_ref().and_then(|m| m.request_timeout_secs),
                vision: same.as_ref().and_then(|m| m.vision),
                api_key: same.and_then(|m| m.api_key),
            }
        }
        (None, Some(existing)) => existing,
        (None, None) if named => {
            return Err(CliError::usage(
                "say which provider with --provider (anthropic, openai, openai-compatible, ollama)",
            ));
        }
        (None, None) => return Ok(None),
    };
    if let Some(name) = &args.model {
        model.name = name.trim().to_string();
    }
    if model.name.is_empty() {
        return Err(CliError::usage("say which model with --model"));
    }
    if let Some(url) = &args.base_url {
        model.base_url = Some(url.trim_end_matches('/').to_string());
    }
    if let Some(var) = &args.api_key_env {
        model.api_key_env = Some(var.clone());
        model.api_key = None;
    }
    if let Some(key) = &args.api_key {
        model.api_key = Some(key.clone());
        model.api_key_env = None;
    }
    // Out of range, the config check below says which setting and why.
    model.temperature = args.temperature.or(model.temperature);
    model.max_output_tokens = args.max_output_tokens.or(model.max_output_tokens);
    if let Some(timeout) = args.request_timeout {
        model.request_timeout_secs = Some(timeout.as_secs());
    }
    // Written out, so config.json says how calls are made; the flag also
    // replaces the old `text_tool_calls`.
    if args.tool_calls.is_some() {
        model.text_tool_calls = None;
    }
    model.tool_calls = Some(args.tool_calls.unwrap_or(model.tool_calls()));
    Ok(Some(model))
}

/// The transcription section after this `init`: `--no-transcription` removes
/// it; the other flags change what they name and keep the rest. A new URL
/// is a new server: its model and key are asked anew (a known server's
/// model is the default), and only the contacts' language and the timeout
/// carry over.
fn transcription_config(
    args: &Args,
    existing: Option<TranscriptionConfig>,
) -> Result<Option<TranscriptionConfig>, CliError> {
    if args.no_transcription {
        return Ok(None);
    }
    let named = args.transcription_model.is_some()
        || args.transcription_key_env.is_some()
        || args.transcription_language.is_some();
    let url = args.transcription_url.as_deref().map(|url| url.trim().trim_end_matches('/').to_string());
    let mut transcription = match (url, existing) {
        (Some(url), Some(existing)) if existing.base_url == url => existing,
        (Some(url), existing) => {
            let model = match (&args.transcription_model, TranscriptionConfig::default_model(&url)) {
                (Some(model), _) => model.clone(),
                (None, Some(model)) => model.to_string(),
                // No URL at all: the config check says so, naming the setting.
                (None, None) if !(url.starts_with("http://") || url.starts_with("https://")) => String::new(),
                (None, None) => {
                    return Err(CliError::usage(format!(
                        "say which model {url} transcribes with: --transcription-model NAME (relay knows the \
                         default only for api.openai.com, whisper-1, and api.groq.com, whisper-large-v3-turbo)"
                    )));
                }
            };
            let mut new = TranscriptionConfig::new(&url, &model);
            if let Some(existing) = existing {
                new.language = existing.language;
                new.request_timeout_secs = existing.request_timeout_secs;
            }
            new
        }
        (None, Some(existing)) => existing,
        (None, None) if named => {
            return Err(CliError::usage(
                "say which server transcribes with --transcription-url URL (e.g. https://api.openai.com/v1)",
            ));
        }
        (None, None) => return Ok(None),
    };
    if let Some(model) = &args.transcription_model {
        transcription.model = model.trim().to_string();
    }
    if let Some(var) = &args.transcription_key_env {
        transcription.api_key_env = Some(var.clone());
        transcription.api_key = None;
    }
    // Out of shape, the config check says which setting and why.
    if let Some(language) = &args.transcription_language {
        transcription.language = Some(language.trim().to_ascii_lowercase());
    }
    Ok(Some(transcription))
}
