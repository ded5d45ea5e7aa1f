//! The browser live view's sign-in, in memory only: one-time codes that
//! `relay ui` asks for (`POST /login-codes`, with the API token), and the
//! sessions a browser gets for one (`GET /ui/login?code=...`), held as an
//! HttpOnly, `SameSite=Strict` cookie. The API token never reaches a
//! browser. A daemon that stops forgets them all: `relay ui` again.
//!
//! Secrets are kept as their SHA-256, so a lookup's timing says nothing of
//! the secret itself.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::Digest;
use uuid::Uuid;

/// How long a code works, used or not.
pub const CODE_LIFETIME: Duration = Duration::from_secs(5 * 60);
/// How long a session lasts after its sign-in (the cookie itself ends
/// with the browser).
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// At most this many codes and sessions are kept; past it, the oldest go.
const MAX_KEPT: usize = 64;

/// Why a code was not taken, in the words the sign-in page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// It was exchanged already, `ago` before.
    Used { ago: Duration },
    /// It was given, and ran out before it was used.
    Expired,
    /// This daemon never gave it (or has restarted since).
    Unknown,
}

impl Refusal {
    pub fn words(&self) -> String {
        match self {
            Refusal::Used { ago } => format!(
                "This sign-in address was used already ({} ago): each works once.",
                crate::duration::format(Duration::from_secs(ago.as_secs().max(1)))
            ),
            Refusal::Expired => format!(
                "This sign-in address has expired: each works for {} after `relay ui` prints it.",
                crate::duration::format(CODE_LIFETIME)
            ),
            Refusal::Unknown => {
                "This sign-in address is not one this daemon gave (or the daemon has restarted since).".to_string()
            }
        }
    }
}

struct Code {
    expires: Instant,
    conversation: Option<Uuid>,
    used: Option<Instant>,
}

#[derive(Default)]
struct Inner {
    codes: HashMap<[u8; 32], Code>,
    sessions: HashMap<[u8; 32], Instant>,
}

#[derive(Default)]
pub struct Sessions {
    inner: Mutex<Inner>,
}

fn digest(secret: &str) -> [u8; 32] {
    sha2::Sha256::digest(secret.as_bytes()).into()
}

/// A new secret: `words` random UUIDs (122 random bits each), as hex.
fn secret(words: usize) -> String {
    (0..words).map(|_| Uuid::new_v4().simple().to_string()).collect()
}

impl Sessions {
    /// A new code, for a sign-in that opens on `conversation`, if given.
    pub fn new_code(&self, conversation: Option<Uuid>) -> String {
        let code = secret(1);
        let now = Instant::now();
        let mut inner = self.inner.lock().unwrap();
        inner.codes.retain(|_, c| c.expires > now);
        if inner.codes.len() >= MAX_KEPT
            && let Some(oldest) = inner.codes.iter().min_by_key(|(_, c)| c.expires).map(|(k, _)| *k)
        {
            inner.codes.remove(&oldest);
        }
        inner.codes.insert(digest(&code), Code { expires: now + CODE_LIFETIME, conversation, used: None });
        code
    }

    /// Exchanges `code` for a new session: its cookie value and the
    /// conversation the page opens on. A code works once.
    pub fn exchange(&self, code: &str) -> Result<(String, Option<Uuid>), Refusal> {
        let now = Instant::now();
        let mut inner = self.inner.lock().unwrap();
        let entry = inner.codes.get_mut(&digest(code)).ok_or(Refusal::Unknown)?;
        if let Some(used) = entry.used {
            return Err(Refusal::Used { ago: now - used });
        }
        if entry.expires <= now {
            return Err(Refusal::Expired);
        }
        entry.used = Some(now);
        let conversation = entry.conversation;
        let session = secret(2);
        inner.sessions.retain(|_, expires| *expires > now);
        if inner.sessions.len() >= MAX_KEPT
            && let Some(oldest) = inner.sessions.iter().min_by_key(|(_, e)| **e).map(|(k, _)| *k)
        {
            inner.sessions.remove(&oldest);
        }
        inner.sessions.insert(digest(&session), now + SESSION_LIFETIME);
        Ok((session, conversation))
    }

    /// Whether `session` is a live session of this daemon.
    pub fn is_valid(&self, session: &str) -> bool {
        let inner = self.inner.lock().unwrap();
        inner.sessions.get(&digest(session)).is_some_and(|expires| *expires > Instant::now())
    }
}

/// The session cookie's name: with the daemon's port, as a browser sends
/// a host's cookies to all its ports, and two daemons on one machine
/// must not take each other's.
pub fn cookie_name(port: u16) -> String {
    format!("relay_session_{port}")
}

/// The value of cookie `name` in a `Cookie` header, if there.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').filter_map(|pair| pair.trim().split_once('=')).find(|(n, _)| *n == name).map(|(_, v)| v.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_and_gives_a_session() {
        let sessions = Sessions::default();
        let id = Uuid::new_v4();
        let code = sessions.new_code(Some(id));
        let (session, conversation) = sessions.exchange(&code).unwrap();
        assert_eq!(conversation, Some(id));
        assert!(sessions.is_valid(&session));
        assert!(matches!(sessions.exchange(&code), Err(Refusal::Used { .. })));
        assert_eq!(sessions.exchange("0123"), Err(Refusal::Unknown));
        assert!(!sessions.is_valid(&code), "a code is not a session");
        assert!(!sessions.is_valid(""));
    }

    #[test]
    fn an_expired_code_is_refused() {
        let sessions = Sessions::default();
        let code = sessions.new_code(None);
        sessions.inner.lock().unwrap().codes.values_mut().for_each(|c| c.expires = Instant::now());
        assert_eq!(sessions.exchange(&code), Err(Refusal::Expired));
    }

    #[test]
    fn cookies_are_found_by_name() {
        assert_eq!(cookie("a=1; relay_session_3214=xyz; b=2", "relay_session_3214"), Some("xyz"));
        assert_eq!(cookie("relay_session_32145=xyz", "relay_session_3214"), None);
        assert_eq!(cookie("", "relay_session_3214"), None);
    }

    #[test]
    fn no_more_than_the_cap_is_kept() {
        let sessions = Sessions::default();
        for _ in 0..MAX_KEPT * 2 {
            sessions.new_code(None);
        }
        assert!(sessions.inner.lock().unwrap().codes.len() <= MAX_KEPT);
    }
}
