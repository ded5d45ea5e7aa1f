//! Which WhatsApp Web version the session announces, and what it does when
//! WhatsApp refuses it (`Event::ClientOutdated`, "405").
//!
//! whatsapp-rust fetches the current version at most once a day and keeps
//! announcing a refused one until then (`whatsapp-rust-0.7.0/src/version.rs`
//! 54-68). So on a refusal relay fetches the version itself, through a
//! [`VersionSource`] (tests give a fake one), and builds the next bot with
//! it as an override; if the fetch fails, or brings the very version that was
//! refused, it falls back to the last version that connected and backs off.

use std::sync::Arc;
use std::time::Duration;

use crate::util::{Backoff, BoxFuture};

/// A WhatsApp Web version: `(2, 3000, 1029030078)`.
pub type Version = (u32, u32, u32);

/// Where the current WhatsApp Web version comes from.
pub trait VersionSource: Send + Sync + 'static {
    fn latest(&self) -> BoxFuture<'_, Result<Version, String>>;
}

/// WhatsApp's own: `https://web.whatsapp.com/sw.js`, read the way
/// whatsapp-rust reads it.
pub struct WebVersion;

impl VersionSource for WebVersion {
    fn latest(&self) -> BoxFuture<'_, Result<Version, String>> {
        Box::pin(async {
            let http: Arc<dyn whatsapp_rust::http::HttpClient> = Arc::new(whatsapp_rust::http::UreqHttpClient::new());
            whatsapp_rust::version::fetch_latest_app_version(&http).await.map_err(|e| format!("{e:#}"))
        })
    }
}

/// `2.3000.1029030078`.
pub fn shown(version: Version) -> String {
    format!("{}.{}.{}", version.0, version.1, version.2)
}

/// What to do after WhatsApp refused `rejected`.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// The version the next bot announces (`None`: whatsapp-rust's own choice).
    pub version: Option<Version>,
    /// How long to wait before building it.
    pub wait: Duration,
    /// What relay does, in words, for `relay status`.
    pub plan: String,
}

/// The retry after a refusal of `rejected`, given what the fetch brought and
/// the last version that connected. A fetched version ending in 0 is
/// whatsapp-rust's parse of a page without the revision: no version at all.
pub fn retry_after(
    rejected: Option<Version>,
    fetched: Result<Version, String>,
    last_working: Option<Version>,
    backoff: &mut Backoff,
) -> Retry {
    let fresh = match fetched {
        Ok(version) if version.2 == 0 => Err("WhatsApp's page named no version".to_string()),
        Ok(version) if Some(version) == rejected => Err(format!("WhatsApp still names {}", shown(version))),
        other => other,
    };
    match fresh {
        Ok(version) => {
            Retry { version: Some(version), wait: Duration::ZERO, plan: format!("connecting with {}", shown(version)) }
        }
        Err(why) => {
            let fallback = last_working.filter(|v| Some(*v) != rejected);
            let wait = backoff.next_wait();
            let with = fallback.map(|v| format!(" with {}, the last version that connected,", shown(v)));
            Retry {
                version: fallback,
                wait,
                plan: format!(
                    "cannot get the current version ({why}); trying again{} in {}",
                    with.unwrap_or_default(),
                    crate::duration::format(wait)
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff() -> Backoff {
        Backoff::new(Duration::from_secs(2), Duration::from_secs(300))
    }

    #[test]
    fn a_fresh_version_is_used_at_once() {
        let retry = retry_after(Some((2, 3000, 1)), Ok((2, 3000, 2)), Some((2, 3000, 1)), &mut backoff());
        assert_eq!((retry.version, retry.wait), (Some((2, 3000, 2)), Duration::ZERO));
        assert_eq!(retry.plan, "connecting with 2.3000.2");
    }

    #[test]
    fn no_fresh_version_falls_back_to_the_last_that_worked_and_backs_off() {
        let mut backoff = backoff();
        let failed = retry_after(Some((2, 3000, 5)), Err("offline".into()), Some((2, 3000, 4)), &mut backoff);
        assert_eq!((failed.version, failed.wait), (Some((2, 3000, 4)), Duration::from_secs(2)));
        assert!(failed.plan.contains("offline") && failed.plan.contains("2.3000.4"), "{}", failed.plan);
        let same = retry_after(Some((2, 3000, 5)), Ok((2, 3000, 5)), Some((2, 3000, 4)), &mut backoff);
        assert_eq!((same.version, same.wait), (Some((2, 3000, 4)), Duration::from_secs(4)));
        let zero = retry_after(Some((2, 3000, 5)), Ok((2, 3000, 0)), None, &mut backoff);
        assert_eq!((zero.version, zero.wait), (None, Duration::from_secs(8)));
        // The refused version is never chosen again, even as the last that worked.
        let refused = retry_after(Some((2, 3000, 5)), Err("x".into()), Some((2, 3000, 5)), &mut backoff);
        assert_eq!(refused.version, None);
    }
}
