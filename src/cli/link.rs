//! Linking WhatsApp, for `relay init`: the QR code in the terminal (redrawn
//! as WhatsApp rotates it, with a countdown), or a pairing code typed on the
//! phone. Only one process may hold the session: when the daemon runs, it
//! pairs and streams the codes here; otherwise this process pairs itself.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::output::{self, say};
use super::{CliError, Context};
use crate::api::{PairRequest, PairingEvent};
use crate::channel::whatsapp::qr;
use crate::channel::whatsapp::session::{Endpoint, Session};
use crate::contact::Contact;
use crate::home::daemon_files;

/// How long a fresh link may take to finish its first sync before this
/// process lets go of the session.
const SETTLE: Duration = Duration::from_secs(60);

/// `timeout` bounds the wait for WhatsApp's first answer (a code, or the
/// outcome); once a code is shown, the codes' own expiry takes over.
pub async fn run(ctx: &Context, phone: Option<Contact>, force: bool, timeout: Duration) -> Result<(), CliError> {
    let mut screen = Screen::new(ctx.json);
    let phone = phone.map(|p| p.to_string());
    let outcome = if daemon_files::is_locked(&ctx.home) {
        screen.note("The daemon is running: it links, and this shows its codes.");
        let client = ctx.client()?;
        let (tx, events) = mpsc::unbounded_channel();
        let request = PairRequest { phone, force };
        let streaming = client.pair(&request, move |event| tx.send(event).is_ok());
        let watching = watch(&mut screen, events, None, timeout, || 0);
        // Giving up ends the stream too (the daemon stops pairing when nobody reads).
        tokio::select! {
            outcome = watching => outcome?,
            streamed = streaming => { streamed?; None }
        }
    } else {
        link_here(ctx, &mut screen, phone, force, timeout).await?
    };
    match outcome {
        Some(PairingEvent::Linked { .. } | PairingEvent::AlreadyLinked { .. }) => Ok(()),
        Some(PairingEvent::Failed { reason }) => Err(CliError::failure(reason)),
        _ => Err(CliError::failure("the pairing stopped before WhatsApp answered; run `relay init` again")),
    }
}

/// No daemon: this process holds the session (and the daemon lock, so a
/// `relay start` meanwhile cannot open it too) until the link is done.
async fn link_here(
    ctx: &Context,
    screen: &mut Screen,
    phone: Option<String>,
    force: bool,
    timeout: Duration,
) -> Result<Option<PairingEvent>, CliError> {
    let _lock = daemon_files::lock(&ctx.home).map_err(|e| CliError::failure(e.to_string()))?;
    let (session, _events) = Session::start(ctx.home.whatsapp_auth_dir(), Endpoint::from_env());
    screen.note("Connecting to WhatsApp...");
    let failures = session.dial_failures();
    let outcome = watch(screen, session.pair(phone, force), Some(failures), timeout, || session.failed_dials()).await;
    let Ok(outcome) = outcome else {
        session.shutdown().await;
        return outcome;
    };
    if matches!(outcome, Some(PairingEvent::Linked { .. })) {
        screen.note("Finishing the link (first sync)...");
        let mut state = session.state();
        let _ = tokio::time::timeout(SETTLE, state.wait_for(|s| s.is_connected())).await;
    }
    session.shutdown().await;
    Ok(outcome)
}

/// Shows the pairing events as they come, with a countdown between them,
/// until the outcome (or the end of the events). Until WhatsApp first
/// answers, each failed dial is shown with its cause, and after `timeout`
/// it gives up.
async fn watch(
    screen: &mut Screen,
    mut events: mpsc::UnboundedReceiver<PairingEvent>,
    mut failures: Option<broadcast::Receiver<String>>,
    timeout: Duration,
    failed_dials: impl Fn() -> u64,
) -> Result<Option<PairingEvent>, CliError> {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let give_up = tokio::time::sleep(timeout);
    tokio::pin!(give_up);
    let mut answered = false;
    let mut attempts = 0;
    let mut last_cause = None;
    loop {
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { return Ok(None) };
                answered = true;
                screen.show(&event);
                if is_outcome(&event) {
                    return Ok(Some(event));
                }
            }
            cause = next_failure(&mut failures), if !answered => {
                attempts += 1;
                screen.attempt_failed(attempts, &cause);
                last_cause = Some(cause);
            }
            _ = &mut give_up, if !answered => {
                screen.clear_status(&mut output::stdout());
                return Err(unreachable(timeout, attempts, last_cause, failures.is_none()));
            }
            _ = tick.tick() => screen.tick(failed_dials()),
        }
    }
}

/// The next failed dial; pending forever without a source.
async fn next_failure(failures: &mut Option<broadcast::Receiver<String>>) -> String {
    while let Some(receiver) = failures {
        match receiver.recv().await {
            Ok(cause) => return cause,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => *failures = None,
        }
    }
    std::future::pending().await
}

fn unreachable(timeout: Duration, attempts: u32, last_cause: Option<String>, by_daemon: bool) -> CliError {
    let waited = crate::duration::format(timeout);
    CliError::failure(match (by_daemon, last_cause) {
        (true, _) => format!(
            "the daemon did not reach WhatsApp within {waited}: `relay status` shows why (relay.log has each \
             attempt); --timeout waits longer"
        ),
        (false, Some(cause)) => format!(
            "cannot reach WhatsApp: gave up after {waited} and {attempts} failed attempt{} (the last: {cause}); \
             check the network, then run `relay init --link` again (--timeout waits longer)",
            if attempts == 1 { "" } else { "s" }
        ),
        (false, None) => format!(
            "no answer from WhatsApp within {waited}; check the network, then run `relay init --link` again \
             (--timeout waits longer)"
        ),
    })
}

fn is_outcome(event: &PairingEvent) -> bool {
    matches!(event, PairingEvent::Linked { .. } | PairingEvent::AlreadyLinked { .. } | PairingEvent::Failed { .. })
}

/// Draws pairing events: JSON lines for programs, codes for people.
struct Screen {
    json: bool,
    tty: bool,
    /// Lines of the QR code on screen (to redraw it in place).
    drawn: usize,
    expires: Option<Instant>,
    spinner: usize,
}

impl Screen {
    fn new(json: bool) -> Screen {
        Screen { json, tty: std::io::stdout().is_terminal(), drawn: 0, expires: None, spinner: 0 }
    }

    fn note(&self, text: &str) {
        if !self.json {
            say!("{text}");
        }
    }

    fn show(&mut self, event: &PairingEvent) {
        if self.json {
            let _ = writeln!(output::stdout(), "{}", serde_json::to_string(event).expect("pairing events serialise"));
            return;
        }
        let mut out = output::stdout();
        match event {
            PairingEvent::Qr { code, expires_in_secs } => {
                let lines = match qr::render(code) {
                    Ok(lines) => lines,
                    Err(error) => vec![error],
                };
                if self.tty && self.drawn > 0 {
                    // Back over the previous code, to draw the new one in place.
                    let _ = write!(out, "\r\x1b[{}A\x1b[J", self.drawn);
                }
                let _ =
                    writeln!(out, "Scan this with WhatsApp on your phone: Settings > Linked devices > Link a device.");
                for line in &lines {
                    let _ = writeln!(out, "{line}");
                }
                let _ = writeln!(
                    out,
                    "(No camera at hand? `relay init --pair-phone +<your number>` gives a code to type.)"
                );
                self.drawn = lines.len() + 2;
                self.expires = Some(Instant::now() + Duration::from_secs(*expires_in_secs));
                if !self.tty {
                    let _ = writeln!(out, "This code is valid for {expires_in_secs} s; a new one follows.");
                }
            }
            PairingEvent::PairCode { code, expires_in_secs } => {
                let spaced: String = code.chars().flat_map(|c| [c, ' ']).collect();
                let _ = writeln!(
                    out,
                    "On your phone: Settings > Linked devices > Link a device > Link with phone number instead,"
                );
                let _ = writeln!(out, "and type this code (valid for {} min):\n", expires_in_secs.div_ceil(60));
                let _ = writeln!(out, "        {}\n", spaced.trim_end());
                self.drawn = 0;
                self.expires = Some(Instant::now() + Duration::from_secs(*expires_in_secs));
            }
            PairingEvent::Linked { phone } => {
                self.clear_status(&mut out);
                let _ = writeln!(
                    out,
                    "Linked to WhatsApp as {}.",
                    output::visible(phone.as_deref().unwrap_or("this account"))
                );
            }
            PairingEvent::AlreadyLinked { phone } => {
                let _ = writeln!(
                    out,
                    "WhatsApp is already linked ({}). `relay init --force` unlinks it and links again.",
                    output::visible(phone.as_deref().unwrap_or("unknown number"))
                );
            }
            PairingEvent::Failed { .. } => self.clear_status(&mut out),
        }
    }

    /// The countdown under the code, redrawn every second on a terminal.
    fn tick(&mut self, failed_dials: u64) {
        if self.json || !self.tty {
            return;
        }
        const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
        self.spinner = (self.spinner + 1) % FRAMES.len();
        let line = match self.expires {
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now()).as_secs();
                format!("{} waiting for the scan: {left} s left on this code", FRAMES[self.spinner])
            }
            None if failed_dials > 0 => {
                format!("{} cannot reach WhatsApp yet ({failed_dials} attempts); retrying", FRAMES[self.spinner])
            }
            None => format!("{} connecting", FRAMES[self.spinner]),
        };
        let mut out = output::stdout();
        let _ = write!(out, "\r\x1b[2K{line}");
        let _ = out.flush();
    }

    /// One failed dial, on a line of its own (above the status line).
    fn attempt_failed(&self, attempt: u32, cause: &str) {
        if self.json {
            return;
        }
        self.clear_status(&mut output::stdout());
        say!("Attempt {attempt} to reach WhatsApp failed: {cause}");
    }

    fn clear_status(&self, out: &mut impl Write) {
        if self.tty {
            let _ = write!(out, "\r\x1b[2K");
        }
    }
}
