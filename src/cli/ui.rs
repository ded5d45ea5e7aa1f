//! `relay ui`: the browser live view. Asks the daemon for a one-time
//! sign-in address, prints it, and opens it in a browser when there is one
//! to open it in (a terminal of a desktop session).

use std::io::IsTerminal;

use super::output::say;
use super::{CliError, Context, output};
use crate::api::LoginCodeRequest;
use crate::client::InstanceId;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Open on this conversation (its id, or a unique prefix of at least 4 characters); left out, the list.
    pub id: Option<String>,
    /// Print the address only: do not open a browser.
    #[arg(long)]
    pub no_open: bool,
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let conversation = args.id.as_deref().map(InstanceId::parse).transpose()?;
    let request = LoginCodeRequest { conversation: conversation.map(|id| id.as_str().to_string()) };
    let code = ctx.client()?.login_code(&request).await?;
    if ctx.json {
        output::json(&code);
        return Ok(());
    }
    let opened = !args.no_open && std::io::stdout().is_terminal() && open_in_browser(&code.url);
    let what = match code.conversation {
        Some(id) => format!("conversation {id}"),
        None => "your conversations".to_string(),
    };
    say!("The live view of {what}, for a browser on this machine:\n\n  {}\n", code.url);
    say!(
        "The address works once, until {} ({}); `relay ui` gives another.{}",
        output::time(code.expires_at),
        output::relative(code.expires_at),
        if opened { " Opened in your browser." } else { "" }
    );
    Ok(())
}

/// Opens `url` with the desktop's opener, if this is a desktop session
/// that has one; whether it started.
fn open_in_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() {
        "xdg-open"
    } else {
        return false;
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}
