//! `relay daemon`: the daemon in the foreground (what `relay start` spawns).

use super::{CliError, Context};

pub fn run(ctx: &Context) -> Result<(), CliError> {
    crate::daemon::memory::tune();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("relay-daemon")
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(crate::daemon::run(ctx.home.clone(), ctx.port)).map_err(|e| match e {
        crate::daemon::DaemonError::Config(e) => CliError::from(e),
        other => CliError::failure(other.to_string()),
    })
}
