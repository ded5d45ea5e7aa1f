//! The daemon: binds 127.0.0.1, holds the channel, runs the engine, serves
//! the API, and shuts down on `POST /shutdown`, SIGTERM or SIGINT.
//!
//! Start-up order matters: lock the home (one daemon per home), bind the port
//! (a clear error if taken), load every conversation, and only then write the
//! pid file and serve. Shutdown is the reverse; every change is already on
//! disk, so "flushing" means letting in-flight requests finish and stopping
//! the conversation actors.
//!
//! One signal stops it all: a tree of cancellation tokens, described in
//! [`serve`].

pub mod error;
pub mod guard;
pub mod memory;
pub mod routes;
mod server;
pub mod sessions;
mod ui;

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::channel::{Channel, SandboxChannel, whatsapp::WhatsappChannel};
use crate::config::{ChannelKind, Config, ConfigError};
use crate::engine::Engine;
use crate::home::{Home, daemon_files};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] daemon_files::LockError),
    #[error(
        "port {0} on 127.0.0.1 is already in use by another program: stop it, or choose another port with --port or RELAY_PORT"
    )]
    PortInUse(u16),
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Runs the daemon in the foreground until it is told to stop; its log goes
/// to relay.log, and to stderr too with `stderr_log`.
pub async fn run(home: Home, port: Option<u16>, stderr_log: bool) -> Result<(), DaemonError> {
    let config = Config::load(&home)?;
    let port = port.unwrap_or(config.daemon_port);
    let loose = home.secure()?;
    home.create()?;
    let _lock = daemon_files::lock(&home)?;
    // A daemon that was killed left its pid, port and token files: gone now,
    // so while the lock is held, a port file is this daemon's (clients trust it).
    daemon_files::clean_up(&home);
    init_logging(&home, stderr_log)?;
    for path in loose {
        tracing::warn!(path = %path.display(), "was readable by other users; made owner-only");
    }
    // A file-size limit (ulimit -f) must fail the write, not kill the daemon.
    crate::sys::set_disposition(libc::SIGXFSZ, crate::sys::Disposition::Ignore);
    let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|source| match source.kind() {
        io::ErrorKind::AddrInUse => DaemonError::PortInUse(port),
        _ => DaemonError::Bind { port, source },
    })?;
    let port = listener.local_addr()?.port();
    let token = daemon_files::write_token(&home)?;
    let served = serve(&home, &config, listener, port, token).await;
    // Whatever happened, leave no token, pid or port file behind.
    daemon_files::clean_up(&home);
    tracing::info!("daemon stopped");
    served
}

/// Runs the parts and stops them in order.
///
/// The daemon stops on one cancellation token tree. Each part's token is a
/// child of the token of the part it is built on, so a part never outlives
/// what it uses: cancelling one cancels every part above it.
///
/// ```text
/// channel          root: cancelled last, by the channel's shutdown
/// └─ engine        sends through the channel
///    └─ webhooks   follow the engine's events
///       └─ api     the HTTP server, and the waits and streams it serves;
///                  cancelled by SIGTERM, SIGINT and `relay stop`
/// ```
///
/// A signal cancels the leaf only: the server stops taking requests and
/// lets those under way finish. Then each part, in turn, is cancelled and
/// awaited before the one below it goes: the webhooks' deliveries end, the
/// engine's actors answer what they were asked and finish their sends (which
/// need the channel still connected), and last the channel disconnects.
async fn serve(
    home: &Home,
    config: &Config,
    listener: TcpListener,
    port: u16,
    token: String,
) -> Result<(), DaemonError> {
    let channel_stop = CancellationToken::new();
    let engine_stop = channel_stop.child_token();
    let webhooks_stop = engine_stop.child_token();
    let api_stop = webhooks_stop.child_token();
    let store = Store::open(home)?;
    let channel: Arc<dyn Channel> = match config.channel {
        ChannelKind::Sandbox => Arc::new(SandboxChannel::open(home)?),
        ChannelKind::Whatsapp => Arc::new(WhatsappChannel::open(home, config.whatsapp.clone(), channel_stop)),
    };
    let agent = crate::agent::from_config(config);
    let settings = crate::engine::Settings::from_config(config);
    let engine = Engine::start_with_stop(store, channel, agent, settings, engine_stop)?;
    let webhooks =
        crate::webhooks::Webhooks::start(home.webhooks_file(), engine.clone(), config.webhooks.clone(), webhooks_stop)?;
    let app = routes::App {
        engine: engine.clone(),
        token: token.into(),
        started: Instant::now(),
        port,
        home: home.root().display().to_string().into(),
        stop: api_stop.clone(),
        webhooks: webhooks.clone(),
        sessions: Default::default(),
    };
    daemon_files::write_port(home, port)?;
    daemon_files::write_pid(home)?;
    tracing::info!(pid = std::process::id(), port, channel = config.channel.as_str(), "daemon started");

    tokio::spawn(stop_on_signals(api_stop.clone()));
    tokio::spawn(memory::trim_periodically());
    // Phone numbers are parsed with metadata loaded on first use (tens of
    // ms): load it now, off the request path, not in the first create.
    tokio::task::spawn_blocking(|| crate::contact::Contact::parse("+14155552671"));
    server::serve(listener, routes::router(app), config.http, api_stop).await;
    webhooks.shutdown().await;
    engine.shutdown().await;
    engine.channel().shutdown().await;
    Ok(())
}

async fn stop_on_signals(stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::error!("cannot install signal handlers; stop the daemon with `relay stop`");
        return;
    };
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    tracing::info!(signal = name, "stopping");
    stop.cancel();
}

/// Logs go to `<home>/relay.log`, and with `stderr_log` the same lines to
/// stderr (a service manager's journal); the level comes from `RELAY_LOG`
/// (default info). A bare level applies to relay only, so no dependency can
/// log request internals; a full filter (`relay=debug,hyper=info`) is taken
/// as is.
fn init_logging(home: &Home, stderr_log: bool) -> io::Result<()> {
    use tracing_subscriber::fmt::writer::MakeWriterExt;
    let file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(home.log_file())?;
    let wanted = std::env::var("RELAY_LOG").unwrap_or_else(|_| "info".into());
    let directive = if wanted.contains('=') { wanted } else { format!("warn,relay={wanted}") };
    let filter = tracing_subscriber::EnvFilter::try_new(&directive)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,relay=info"));
    let file = Mutex::new(NeverFails(file));
    // Plain text on both: no colour codes in a journal.
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false);
    let _ = if stderr_log {
        fmt.with_writer(file.and(|| NeverFails(io::stderr()))).try_init()
    } else {
        fmt.with_writer(file).try_init()
    };
    Ok(())
}

/// A log writer that never fails: on a full disk (or a journal gone away) a
/// log line is lost, quietly. (tracing-subscriber reports a failed write on
/// stderr with `eprintln!`, which panics when stderr is a file on that same
/// full disk, or a closed pipe, and would take down whichever task was
/// logging.)
struct NeverFails<W>(W);

impl<W: io::Write> io::Write for NeverFails<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
