//! `relay skill`: the SKILL.md a coding agent reads to use relay (when to
//! delegate, the create → wait → get loop, what to trust), printed, or
//! installed where the agent looks for skills (`DIR/relay/SKILL.md`). The
//! text is `skill.md` beside this file, one copy; a test runs every
//! `relay ...` command it names so it cannot drift from the CLI.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{CliError, output};

pub const SKILL: &str = include_str!("skill.md");

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write it to DIR/relay/SKILL.md instead of printing it (DIR: where your
    /// agent reads skills, such as ~/.claude/skills).
    #[arg(long, value_name = "DIR")]
    pub install: Option<PathBuf>,
    /// With --install: replace a SKILL.md that is there already.
    #[arg(long, requires = "install")]
    pub force: bool,
}

#[derive(Serialize)]
struct Printed {
    skill: &'static str,
}

#[derive(Serialize)]
struct Installed {
    path: PathBuf,
    replaced: bool,
}

pub fn run(json: bool, args: Args) -> Result<(), CliError> {
    let Some(dir) = args.install else {
        if json {
            output::json(&Printed { skill: SKILL });
        } else {
            // Markdown for an agent to read, as written.
            output::verbatim(SKILL, "the skill")?;
        }
        return Ok(());
    };
    let installed = install(&dir, args.force)?;
    if json {
        output::json(&installed);
    } else {
        let verb = if installed.replaced { "Replaced" } else { "Installed" };
        output::say!("{verb} {}", installed.path.display());
    }
    Ok(())
}

fn install(dir: &Path, force: bool) -> Result<Installed, CliError> {
    // DIR itself is not created: a typo would otherwise install a skill
    // where no agent looks, and succeed.
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(CliError::usage(format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(CliError::usage(format!(
                "{} does not exist: give the directory your agent reads skills from (it is not created)",
                dir.display()
            )));
        }
        Err(e) => return Err(CliError::failure(format!("cannot read {}: {e}", dir.display()))),
    }
    let folder = dir.join("relay");
    let path = folder.join("SKILL.md");
    let cannot =
        |what: &str, at: &Path, e: std::io::Error| CliError::failure(format!("cannot {what} {}: {e}", at.display()));
    std::fs::create_dir_all(&folder).map_err(|e| cannot("create", &folder, e))?;
    let replaced = path.exists();
    if replaced && !force {
        return Err(CliError::usage(format!("{} exists already: add --force to replace it", path.display())));
    }
    crate::store::atomic::replace(&path, SKILL.as_bytes()).map_err(|e| cannot("write", &path, e))?;
    Ok(Installed { path, replaced })
}
