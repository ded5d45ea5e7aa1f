//! whatsapp-rust's WebSocket dialer, wrapped to say why each dial failed
//! (whatsapp-rust only logs it, and retries), in plain words.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use whatsapp_rust::transport::TokioWebSocketTransportFactory;
use whatsapp_rust::wacore::net::{Transport, TransportEvent, TransportFactory};

use super::Session;

/// whatsapp-rust's WebSocket dialer, telling the session why each dial
/// failed (whatsapp-rust only logs it, and retries).
pub(super) struct ReportingDialer {
    pub(super) inner: TokioWebSocketTransportFactory,
    pub(super) url: String,
    pub(super) session: Weak<Session>,
}

/// whatsapp-rust gives up on a dial after this long (dropping it).
const DIAL_TIMEOUT: Duration = Duration::from_secs(20);

type Dialed =
    whatsapp_rust::anyhow::Result<(Arc<dyn Transport>, whatsapp_rust::async_channel::Receiver<TransportEvent>)>;

// By hand, what `#[async_trait]` would write (relay does not depend on it).
impl TransportFactory for ReportingDialer {
    fn create_transport<'life0, 'async_trait>(
        &'life0 self,
    ) -> Pin<Box<dyn Future<Output = Dialed> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let mut dial = Dial { dialer: self, started: Instant::now(), settled: false };
            let dialed = self.inner.create_transport().await;
            dial.settled = true;
            if let Err(error) = &dialed {
                self.report(dial_failure(&self.url, &format!("{error:#}")));
            }
            dialed
        })
    }
}

impl ReportingDialer {
    fn report(&self, cause: String) {
        if let Some(session) = self.session.upgrade()
            && !session.stop.is_cancelled()
        {
            session.dial_failed(cause);
        }
    }
}

/// A dial under way: dropped unsettled after whatsapp-rust's timeout, it
/// timed out (dropped sooner, the session is stopping).
struct Dial<'a> {
    dialer: &'a ReportingDialer,
    started: Instant,
    settled: bool,
}

impl Drop for Dial<'_> {
    fn drop(&mut self) {
        if !self.settled && self.started.elapsed() >= DIAL_TIMEOUT - Duration::from_secs(1) {
            let host = host_of(&self.dialer.url);
            self.dialer.report(format!("{host} did not answer within {} s (timed out)", DIAL_TIMEOUT.as_secs()));
        }
    }
}

/// A failed dial in plain words, then the error itself.
fn dial_failure(url: &str, error: &str) -> String {
    let host = host_of(url);
    let lower = error.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let why =
        if has(&["dns", "lookup address", "name resolution", "name or service not known", "no address associated"]) {
            format!("cannot resolve {host} (name resolution failed: no network, or no DNS)")
        } else if has(&["connection refused"]) {
            format!("{host} refused the connection")
        } else if has(&["timed out", "timeout"]) {
            format!("{host} did not answer (timed out)")
        } else if has(&["network is unreachable", "no route to host", "host is unreachable"]) {
            format!("no route to {host} (network unreachable: offline?)")
        } else if has(&["certificate", "tls", "handshake"]) {
            format!("the secure connection to {host} failed (a proxy or firewall in the way?)")
        } else {
            format!("cannot connect to {host}")
        };
    format!("{why}: {error}")
}

/// `web.whatsapp.com` of `wss://web.whatsapp.com/ws/chat`.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed dial says why in plain words first, then the error as is.
    #[test]
    fn dial_failures_say_why_in_plain_words() {
        let url = "wss://web.whatsapp.com/ws/chat";
        for (error, plain) in [
            ("WebSocket connect failed: client DNS lookup failed", "cannot resolve web.whatsapp.com"),
            ("failed to lookup address information: Temporary failure in name resolution", "cannot resolve"),
            ("WebSocket connect failed: Connection refused (os error 111)", "web.whatsapp.com refused the connection"),
            ("WebSocket connect failed: connection timed out", "web.whatsapp.com did not answer (timed out)"),
            ("WebSocket connect failed: Network is unreachable (os error 101)", "no route to web.whatsapp.com"),
            ("WebSocket connect failed: invalid peer certificate: UnknownIssuer", "the secure connection"),
            ("something new", "cannot connect to web.whatsapp.com"),
        ] {
            let said = dial_failure(url, error);
            assert!(said.starts_with(plain) && said.ends_with(error), "{error}: {said}");
        }
        assert_eq!(host_of("ws://127.0.0.1:9/ws?x=1"), "127.0.0.1:9");
    }
}
