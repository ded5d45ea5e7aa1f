//! `relay doctor`: runs [`crate::doctor`]'s checks and prints them, one line
//! each with its fix (or the report as JSON). It changes nothing. Exit 1
//! when a check failed; warnings alone exit 0.

use super::output::say;
use super::{CliError, Context, output};
use crate::doctor::{Check, Status};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Send nothing over the network: the model check is skipped.
    #[arg(long)]
    pub offline: bool,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let report = crate::doctor::examine(&ctx.home, ctx.port, args.offline).await;
    let failed = report.failed();
    if ctx.json {
        output::json(&report);
    } else {
        print(&report.checks);
    }
    if failed.is_empty() {
        return Ok(());
    }
    Err(CliError::failure(format!(
        "{} failed ({}): each says its fix",
        output::count(failed.len() as u64, "check"),
        failed.join(", ")
    )))
}

fn print(checks: &[Check]) {
    for check in checks {
        let mut line = format!("{:<8} {:<9} {}", check.status.word(), check.name, check.detail);
        if let Some(fix) = &check.fix {
            line.push_str(&format!("; fix: {fix}"));
        }
        // One line per check, whatever the daemon or a provider wrote.
        say!("{}", line.replace('\n', " "));
    }
    let warnings = checks.iter().filter(|c| c.status == Status::Warning).count();
    if !checks.iter().any(|c| c.status == Status::Failed) {
        match warnings {
            0 => say!("Everything relay needs is in order."),
            n => say!("Nothing failed; {} to look at.", output::count(n as u64, "warning")),
        }
    }
}
