//! `relay daemon`: the daemon in the foreground (what `relay start` spawns).

use super::{CliError, Context};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Log to relay.log only, not to stderr too (`relay start`, `relay demo` and `relay eval` run it so; an error that stops
    /// the daemon still goes to stderr).
    #[arg(long)]
    pub quiet: bool,
    /// Listen on any free port, named in the home's port file (`relay eval`'s trials: a port found free before
    /// the daemon starts can be taken before it binds).
    #[arg(long, hide = true)]
    pub any_port: bool,
}

pub fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    crate::daemon::memory::tune();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("relay-daemon")
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    // In the foreground stderr is a terminal or a service manager's journal:
    // it gets the log too.
    let stderr_log = !args.quiet;
    let port = if args.any_port { Some(0) } else { ctx.port };
    runtime.block_on(crate::daemon::run(ctx.home.clone(), port, stderr_log)).map_err(|e| match e {
        crate::daemon::DaemonError::Config(e) => CliError::from(e),
        other => CliError::failure(other.to_string()),
    })
}
