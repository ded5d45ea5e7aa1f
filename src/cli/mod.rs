//! The `relay` command line: argument definitions here, one file per
//! subcommand. Every subcommand but `init`, `start`, `stop`, `daemon`,
//! `service`, `doctor` (which works without one), `skill`, `completions` and `version`
//! (which need not even a home) is a thin client of the daemon's API (`mcp`
//! too: one request per tool call).

mod answer;
mod completions;
mod control;
mod create;
mod daemon;
mod demo;
mod doctor;
mod eval;
mod events;
mod get;
mod init;
mod link;
mod list;
mod mcp;
mod media;
mod optout;
mod output;
pub mod reference;
mod sandbox;
mod send;
mod service;
mod skill;
mod start;
mod status;
mod stop;
mod template;
mod transcript;
mod ui;
mod version;
mod wait;
mod webhook;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::api::{ApiErrorResponse, ErrorCode};
use crate::client::Client;
use crate::config::{Config, ConfigError};
use crate::home::Home;
use output::complain;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  failure (daemon error, I/O, channel unavailable; `relay doctor`: a check failed)
  2  invalid arguments or request, or a config.json relay cannot use (it says how to repair it)
  3  the daemon is not running (run `relay start`)
  4  no such conversation (unknown id or prefix), template, webhook or listed number, or events no longer kept
  5  not allowed in the conversation's current state, or the number is on the do-not-contact list
  6  relay is not initialised (run `relay init`)
  7  refused by the daemon's API guard (token, host)
  8  `relay wait` timed out before the conversation got there";

#[derive(Debug, Parser)]
#[command(
    name = "relay",
    version,
    about = "A sandboxed WhatsApp conversation agent for your AI agent",
    long_about = "relay runs conversations with people over WhatsApp on behalf of an AI agent (the Main Agent).\n\
                  Each conversation has an objective and a todo list, and its own small agent whose only powers \
                  are eight conversation-scoped tools.",
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// Print exactly one JSON document on stdout (errors as JSON on stderr).
    #[arg(long, global = true)]
    pub json: bool,

    /// The daemon's port [default: the running daemon's, else config.json's, else 3214].
    #[arg(long, global = true, env = "RELAY_PORT", value_parser = port_number)]
    pub port: Option<u16>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Watch a whole conversation on this machine: simulated model and contact, no keys, no WhatsApp.
    Demo,
    /// Score a model at relay's job: whole conversations with a scripted contact, checked by rule.
    Eval(eval::Args),
    /// Create the relay home and its config.json.
    Init(init::Args),
    /// Start the daemon in the background and wait until it answers.
    Start,
    /// Stop the daemon gracefully and wait until it is gone.
    Stop,
    /// Run the daemon in the foreground (for service managers); it logs to stderr too.
    Daemon(daemon::Args),
    /// Run the daemon as a service of your user (systemd, launchd): install, uninstall, status.
    #[command(subcommand)]
    Service(service::Command),
    /// Show the daemon, its channel and its conversations at a glance.
    Status,
    /// Check what a conversation needs (home, config, daemon, channel, model, disk, clock) and say what to fix.
    Doctor(doctor::Args),
    /// Start a conversation; prints its id.
    Create(create::Args),
    /// List conversations.
    List(list::Args),
    /// Show one conversation: state, todos and notes, heartbeat, history.
    Get(IdArg),
    /// Show a conversation's messages, oldest first, a page at a time.
    Transcript(transcript::Args),
    /// Copy the file of a conversation's message (a contact's photo, voice note, document) out.
    Media(media::Args),
    /// Cancel a conversation (FAILED, reason "cancelled"); nothing is sent.
    Cancel(IdArg),
    /// Pause a conversation: no follow-ups, no agent, until resumed.
    Pause(IdArg),
    /// Resume a paused conversation, or hand one that needs a human back to the agent.
    Resume(IdArg),
    /// Send a message to the conversation's contact yourself.
    Send(send::Args),
    /// Wait until a conversation ends, needs you, reaches a state, or changes; then show it.
    Wait(wait::Args),
    /// Answer the conversation agent's question (the agent gets it, not the contact).
    Answer(answer::Args),
    /// Open the live view in a browser: prints a one-time sign-in address of the daemon's own page.
    Ui(ui::Args),
    /// Print the event log (every change, numbered); --follow for new ones as they happen.
    Events(events::Args),
    /// URLs relay POSTs every event to, signed: add, list, remove.
    #[command(subcommand)]
    Webhook(webhook::Command),
    /// The do-not-contact list, numbers relay does not write to: list, add, remove.
    #[command(subcommand)]
    Optout(optout::Command),
    /// Conversations written once with {{placeholders}}: add, list, show, remove.
    #[command(subcommand)]
    Template(template::Command),
    /// Play a contact on the sandbox channel (for trying relay and for tests).
    #[command(subcommand)]
    Sandbox(sandbox::Command),
    /// Serve relay's tools to an AI agent over MCP (stdio).
    Mcp(mcp::Args),
    /// Print the SKILL.md that teaches a coding agent to use relay, or --install it.
    Skill(skill::Args),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::Args),
    /// Print relay's version (`--json`: name, version, os, arch).
    Version,
}

#[derive(Debug, clap::Args)]
pub struct IdArg {
    /// The conversation id, or a unique prefix of at least 4 characters.
    pub id: String,
}

/// A duration flag (`90s`, `2m`) of at least one second.
pub(crate) fn at_least_a_second(text: &str) -> Result<std::time::Duration, String> {
    match crate::duration::parse(text).map_err(|e| e.to_string())? {
        d if d < std::time::Duration::from_secs(1) => Err(format!("{text} is less than 1s")),
        d => Ok(d),
    }
}

/// What every subcommand gets.
pub struct Context {
    pub home: Home,
    pub json: bool,
    pub port: Option<u16>,
}

impl Context {
    pub fn config(&self) -> Result<Config, CliError> {
        Config::load(&self.home).map_err(CliError::from)
    }

    /// `--port`/`RELAY_PORT`, else the running daemon's, else the config's.
    pub fn port(&self, config: &Config) -> u16 {
        crate::client::port(&self.home, self.port, config)
    }

    /// A client for this home's daemon (see `Client::new`).
    pub fn client(&self) -> Result<Client, CliError> {
        Ok(Client::new(&self.home, self.port)?)
    }
}

/// A failed command: the API's error (or the CLI's own, in the same shape);
/// its code says the exit code.
#[derive(Debug)]
pub struct CliError {
    pub error: ApiErrorResponse,
}

impl CliError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> CliError {
        CliError { error: ApiErrorResponse::new(code, message) }
    }

    pub fn failure(message: impl Into<String>) -> CliError {
        CliError::new(ErrorCode::Failure, message)
    }

    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::new(ErrorCode::InvalidArguments, message)
    }

    pub fn api(error: ApiErrorResponse) -> CliError {
        CliError { error }
    }

    /// The documented exit code (`EXIT_CODES`) of each error code.
    pub fn exit(&self) -> u8 {
        use ErrorCode::*;
        match self.error.code {
            InvalidArguments | InvalidRequest | AmbiguousId | PayloadTooLarge | UnsupportedMediaType
            | IdempotencyKeyReused | InvalidConfig => 2,
            DaemonNotRunning | DaemonStopped => 3,
            NotFound | Gone => 4,
            InvalidTransition | Ended | NotSandbox | NotWhatsapp | OptedOut => 5,
            NotInitialised => 6,
            Unauthorized | Forbidden => 7,
            TimedOut => 8,
            Failure | ReaderGone | MethodNotAllowed | ChannelUnavailable | NotSent | ShuttingDown
            | IdempotencyKeyInUse | StorageUnavailable | TooManyConnections | Internal => 1,
        }
    }
}

impl From<ConfigError> for CliError {
    fn from(error: ConfigError) -> CliError {
        CliError::api(crate::client::config_error(error))
    }
}

impl From<ApiErrorResponse> for CliError {
    fn from(error: ApiErrorResponse) -> CliError {
        CliError::api(error)
    }
}

/// The command line, parsed. Beyond clap's derive: each `relay create
/// --answer` is for the `--todo` just before it, which only the places of
/// the arguments tell.
pub fn parse() -> Result<Cli, clap::Error> {
    parse_from(std::env::args_os())
}

/// `parse`, of these words (the first is the program's name).
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let mut command = reference::command();
    let matches = command.try_get_matches_from_mut(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let places =
        |of: &clap::ArgMatches, id: &str| of.indices_of(id).map(Iterator::collect::<Vec<_>>).unwrap_or_default();
    let pair = |of: &clap::ArgMatches, command: &mut clap::Command| {
        create::pair_answers(&places(of, "todos"), &places(of, "answers"))
            .map_err(|why| command.error(clap::error::ErrorKind::ArgumentConflict, why))
    };
    match (&mut cli.command, matches.subcommand()) {
        (Command::Create(args), Some(("create", of))) => args.answer_of = pair(of, &mut command)?,
        (Command::Template(template::Command::Add(args)), Some(("template", of))) => {
            if let Some(("add", of)) = of.subcommand() {
                args.answer_of = pair(of, &mut command)?;
            }
        }
        _ => {}
    }
    Ok(cli)
}

/// Runs the parsed command line and returns the process exit code.
pub fn main(cli: Cli) -> ExitCode {
    // SIGPIPE stays ignored, as Rust leaves it: a daemon that answers an
    // upload before reading it closes a socket the client is writing to,
    // and that must be an error to handle, not a silent death (exit 141).
    // A closed stdout still ends the process quietly (`output::stdout`).
    // What needs neither a home nor a runtime: it works where HOME is unset
    // too (a package build generating completions).
    let result = match cli.command {
        Command::Completions(args) => completions::run(cli.json, args),
        Command::Skill(args) => skill::run(cli.json, args),
        Command::Version => {
            version::print(cli.json);
            Ok(())
        }
        command => return with_home(cli.json, cli.port, command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => report(cli.json, error),
    }
}

fn with_home(json: bool, port: Option<u16>, command: Command) -> ExitCode {
    let home = match Home::from_env() {
        Ok(home) => home,
        Err(e) => return report(json, CliError::failure(e.to_string())),
    };
    let ctx = Context { home, json, port };
    let result = match command {
        // The daemon gets the multi-threaded runtime; every client command a
        // single thread, which starts faster.
        Command::Daemon(args) => daemon::run(&ctx, args),
        command => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
            runtime.block_on(dispatch(&ctx, command))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => report(ctx.json, error),
    }
}

async fn dispatch(ctx: &Context, command: Command) -> Result<(), CliError> {
    match command {
        Command::Demo => demo::run(ctx).await,
        Command::Eval(args) => eval::run(ctx, args).await,
        Command::Init(args) => init::run(ctx, args).await,
        Command::Start => start::run(ctx).await,
        Command::Stop => stop::run(ctx).await,
        Command::Service(command) => service::run(ctx, command).await,
        Command::Daemon(_) => unreachable!("run before dispatch"),
        Command::Skill(_) | Command::Completions(_) | Command::Version => unreachable!("run before the home"),
        Command::Status => status::run(ctx).await,
        Command::Doctor(args) => doctor::run(ctx, args).await,
        Command::Create(args) => create::run(ctx, args).await,
        Command::List(args) => list::run(ctx, args).await,
        Command::Get(IdArg { id }) => get::run(ctx, &id).await,
        Command::Transcript(args) => transcript::run(ctx, args).await,
        Command::Media(args) => media::run(ctx, args).await,
        Command::Cancel(IdArg { id }) => control::run(ctx, &id, control::Action::Cancel).await,
        Command::Pause(IdArg { id }) => control::run(ctx, &id, control::Action::Pause).await,
        Command::Resume(IdArg { id }) => control::run(ctx, &id, control::Action::Resume).await,
        Command::Send(args) => send::run(ctx, args).await,
        Command::Wait(args) => wait::run(ctx, args).await,
        Command::Answer(args) => answer::run(ctx, args).await,
        Command::Events(args) => events::run(ctx, args).await,
        Command::Ui(args) => ui::run(ctx, args).await,
        Command::Sandbox(command) => sandbox::run(ctx, command).await,
        Command::Template(command) => template::run(ctx, command),
        Command::Webhook(command) => webhook::run(ctx, command).await,
        Command::Optout(command) => optout::run(ctx, command).await,
        Command::Mcp(args) => mcp::run(ctx, args).await,
    }
}

/// clap's own errors (an unknown flag, a value that does not parse) echo
/// what was typed: like every other error they reach the terminal through
/// `visible`, and as one JSON object with `--json`. Help and version are
/// relay's own text and go out as clap writes them.
/// `--port` (or `RELAY_PORT`): 1 to 65535. clap's own parser said "not in
/// 0..=65535", as if 0 were a port relay could use; the OS reads 0 as "any
/// free port", so a daemon would start where no client finds it.
fn port_number(text: &str) -> Result<u16, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("--port 0 (or RELAY_PORT=0) is not a port the daemon can be reached on: give one from 1 to \
                      65535 (the default is 3214)"
            .into()),
        Ok(n) if n <= u64::from(u16::MAX) => Ok(n as u16),
        _ => Err("a port is a number from 1 to 65535 (the default is 3214)".into()),
    }
}

pub fn argument_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if error.kind() == ErrorKind::DisplayVersion && std::env::args_os().any(|arg| arg == "--json") {
        version::print(true);
        return ExitCode::SUCCESS;
    }
    if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = error.print();
        return ExitCode::SUCCESS;
    }
    let text = error.render().to_string();
    if std::env::args_os().any(|arg| arg == "--json") {
        // The error is its lines up to the usage: "the following required
        // arguments were not provided:" goes on with their names.
        let said: Vec<&str> = text
            .lines()
            .take_while(|line| !line.is_empty() && !line.starts_with("Usage:"))
            .map(|line| line.trim().trim_start_matches("error: "))
            .collect();
        return report(true, CliError::usage(said.join(" ")));
    }
    complain!("{}", text.trim_end());
    ExitCode::from(2)
}

fn report(json: bool, mut error: CliError) -> ExitCode {
    error.error.reword_for(crate::courtesy::optout::Surface::Cli);
    if json {
        eprintln!("{}", serde_json::to_string(&error.error).expect("errors serialise"));
    } else {
        complain!("relay: {}", error.error.error);
    }
    ExitCode::from(error.exit())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    #[test]
    fn a_port_out_of_range_is_refused_without_offering_zero() {
        for wrong in ["70000", "99999999999", "http"] {
            let error = Cli::try_parse_from(["relay", "--port", wrong, "status"]).unwrap_err().to_string();
            assert!(error.contains("a port is a number from 1 to 65535"), "{wrong}: {error}");
            assert!(!error.contains("0.."), "{wrong}: {error}");
        }
        assert_eq!(Cli::try_parse_from(["relay", "--port", "65535", "status"]).unwrap().port, Some(65535));
        // Not 0 either, for any command: `relay --port 0 start` started a
        // daemon on a random port and then said it had not.
        let error = Cli::try_parse_from(["relay", "--port", "0", "start"]).unwrap_err().to_string();
        assert!(error.contains("--port 0") && error.contains("from 1 to"), "{error}");
    }
}
