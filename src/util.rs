//! Small shared helpers.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future, for the async methods of the `Channel`, `Agent` and
/// `InboundSink` traits (which are used as trait objects).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Makes ring the TLS crypto of every HTTPS client relay builds; call it
/// before building one (later calls do nothing). whatsapp-rust's transport
/// installs ring for itself, so relay uses one implementation rather than
/// two: reqwest's default, aws-lc, is a C library whose build was 100 s of a
/// clean release build (docs/benchmarks.md, "Build time").
pub fn choose_tls_crypto() {
    // An error means a provider is installed already: ring, by this or by
    // whatsapp-rust.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// relay's one retry policy: wait `first`, then twice as long each time, up
/// to `max`. Model calls, WhatsApp sends and reconnects, and webhook
/// deliveries all back off this way; what differs is only their settings.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff { next: first.min(max), max }
    }

    /// The wait before the next try; each call doubles the one after.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        wait
    }
}

/// "1 model call", "2 model calls": a count and its noun, in agreement.
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let mut backoff = Backoff::new(Duration::from_secs(2), Duration::from_secs(10));
        let waits: Vec<u64> = (0..5).map(|_| backoff.next_wait().as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 10, 10]);
        let mut huge = Backoff::new(Duration::from_secs(u64::MAX / 2), Duration::MAX);
        huge.next_wait();
        assert_eq!(huge.next_wait(), Duration::from_secs(u64::MAX / 2) * 2, "no overflow");
    }

    #[test]
    fn a_count_agrees_with_its_noun() {
        assert_eq!(count(1u64, "model call"), "1 model call");
        assert_eq!(count(0u64, "model call"), "0 model calls");
        assert_eq!(count(6u32, "model call"), "6 model calls");
    }
}
