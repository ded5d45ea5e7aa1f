//! `relay completions SHELL`: the shell's completion script on stdout,
//! generated from the same clap definitions the binary parses with, so it
//! cannot name a command or flag relay does not have.

use clap::CommandFactory;
use serde::Serialize;

use super::{Cli, CliError, output};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Serialize)]
struct Script {
    shell: String,
    script: String,
}

pub fn run(json: bool, args: Args) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "relay", &mut script);
    let script = String::from_utf8(script).map_err(|e| CliError::failure(format!("the script is not UTF-8: {e}")))?;
    if json {
        output::json(&Script { shell: args.shell.to_string(), script });
    } else {
        // `say!` would escape what a shell must see as generated.
        output::verbatim(&script, "the script")?;
    }
    Ok(())
}
