//! Webhooks: relay POSTs each event of the event log to the URLs the
//! operator registered (`relay webhook add`), as JSON signed with
//! HMAC-SHA256.
//!
//! One task per webhook follows the log on its own, so a slow or failing
//! receiver holds up nothing else: not the engine, not other webhooks.
//! Events go out in order, one at a time; a failed delivery is retried
//! (backoff doubling up to a limit) until it succeeds, and the next event
//! waits for it. How far each webhook has got (`delivered_seq`) is kept in
//! `webhooks.json`, so deliveries resume after a restart. A crash between a
//! delivery and its record may deliver that one event twice: receivers
//! de-duplicate by `seq`.
//!
//! Each task stops on a cancellation token of its own, a child of the
//! webhooks' token: removing the webhook cancels the one, shutdown all.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{ConversationEvent, EventData, Webhook, WebhookCreated, WebhookRequest};
use crate::config::WebhookSettings;
use crate::engine::Engine;
use crate::store::{StoreError, atomic, to_pretty_json};
use crate::util::Backoff;

/// The header carrying the signature: `sha256=<hex of HMAC-SHA256(secret, body)>`.
pub const SIGNATURE_HEADER: &str = "relay-signature";

/// At most this many webhooks (each holds a task and a connection).
const MAX_WEBHOOKS: usize = 20;

/// A webhook id may be given by its first hex digits, at least this many
/// (as conversation ids).
const MIN_ID_PREFIX: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("{0}")]
    Invalid(String),
    #[error("no webhook has the id '{0}' (see `relay webhook list`)")]
    NotFound(String),
    #[error("the webhook id prefix '{prefix}' matches {} webhooks: {}; give more of it", matches.len(), matches.join(", "))]
    Ambiguous { prefix: String, matches: Vec<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One registered webhook, as `webhooks.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    id: String,
    url: String,
    #[serde(default)]
    events: Vec<String>,
    /// Never logged, shown only when the webhook is added.
    secret: String,
    created_at: DateTime<Utc>,
    delivered_seq: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    webhooks: Vec<Record>,
}

/// How a webhook's deliveries are going (in memory; shown by `list`).
#[derive(Debug, Clone, Default)]
struct Health {
    failures: u32,
    last_error: Option<String>,
    last_attempt_at: Option<DateTime<Utc>>,
    next_attempt_at: Option<DateTime<Utc>>,
}

struct Hook {
    record: Record,
    health: Health,
    delivery: Option<DeliveryTask>,
}

/// A webhook's delivery task, and what stops it.
struct DeliveryTask {
    stop: CancellationToken,
    task: JoinHandle<Option<()>>,
}

/// The registered webhooks and their delivery tasks.
pub struct Webhooks {
    path: PathBuf,
    engine: Engine,
    settings: WebhookSettings,
    client: reqwest::Client,
    hooks: Mutex<Vec<Hook>>,
    /// Stops every delivery (each has a child of it).
    stop: CancellationToken,
}

impl Webhooks {
    /// Loads `webhooks.json` and starts delivering where each webhook
    /// stopped, until `stop` is cancelled (see [`Webhooks::shutdown`]).
    pub fn start(
        path: PathBuf,
        engine: Engine,
        settings: WebhookSettings,
        stop: CancellationToken,
    ) -> Result<Arc<Webhooks>, StoreError> {
        let file: File = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|source| StoreError::Corrupt { path: path.display().to_string(), source })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(source) => return Err(StoreError::Read { path: path.display().to_string(), source }),
        };
        crate::util::choose_tls_crypto();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(settings.timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("relay/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("an HTTP client with these settings builds");
        let hooks = file.webhooks.into_iter().map(|record| Hook { record, health: Health::default(), delivery: None });
        let webhooks = Arc::new(Webhooks { path, engine, settings, client, hooks: Mutex::new(hooks.collect()), stop });
        let ids: Vec<String> = webhooks.lock().iter().map(|h| h.record.id.clone()).collect();
        for id in ids {
            webhooks.spawn(&id);
        }
        Ok(webhooks)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Hook>> {
        self.hooks.lock().expect("webhooks lock")
    }

    /// Registers a webhook; it gets the events from now on. A URL that is
    /// registered already, for the same events, is not registered twice
    /// (each event would go to it twice): the answer is that webhook, with
    /// `created: false` and no secret (it was shown when it was added), so a
    /// Main Agent can run `relay webhook add` at every start. For other
    /// events it is refused: changing them is a remove and an add.
    pub fn add(self: &Arc<Self>, request: WebhookRequest) -> Result<WebhookCreated, WebhookError> {
        let url = check_url(&request.url)?;
        for kind in &request.events {
            if !EventData::KINDS.contains(&kind.as_str()) {
                return Err(WebhookError::Invalid(format!(
                    "'{kind}' is not an event type (they are {})",
                    EventData::KINDS.join(", ")
                )));
            }
        }
        let record = Record {
            id: format!("wh_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
            url,
            events: request.events,
            // 244 random bits (two v4 UUIDs without their fixed bits' meaning).
            secret: format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple()),
            created_at: crate::clock::now(),
            delivered_seq: self.engine.last_event_seq(),
        };
        {
            let mut hooks = self.lock();
            // Under the same lock as the push: two adds of one URL make one webhook.
            if let Some(existing) = hooks.iter().find(|h| h.record.url == record.url) {
                let known = &existing.record;
                if !same_events(&known.events, &record.events) {
                    let events =
                        if known.events.is_empty() { "all events".to_string() } else { known.events.join(",") };
                    return Err(WebhookError::Invalid(format!(
                        "{} is registered already, as webhook {} for {events}; to change its events, remove it \
                         (`relay webhook remove {}`) and add it again",
                        known.url, known.id, known.id
                    )));
                }
                return Ok(WebhookCreated {
                    webhook: self.view(known, &existing.health),
                    secret: None,
                    created: false,
                });
            }
            if hooks.len() >= MAX_WEBHOOKS {
                return Err(WebhookError::Invalid(format!("at most {MAX_WEBHOOKS} webhooks; remove one first")));
            }
            hooks.push(Hook { record: record.clone(), health: Health::default(), delivery: None });
            if let Err(error) = self.save(&hooks) {
                hooks.pop();
                return Err(error.into());
            }
        }
        self.spawn(&record.id);
        tracing::info!(webhook = %record.id, url = %record.url, "webhook added");
        let webhook = self.view(&record, &Health::default());
        Ok(WebhookCreated { webhook, secret: Some(record.secret), created: true })
    }

    pub fn list(&self) -> Vec<Webhook> {
        self.lock().iter().map(|h| self.view(&h.record, &h.health)).collect()
    }

    /// The webhooks whose delivery is failing now (`relay status`).
    pub fn failing(&self) -> Vec<Webhook> {
        self.lock().iter().filter(|h| h.health.failures > 0).map(|h| self.view(&h.record, &h.health)).collect()
    }

    /// Removes webhook `id_or_prefix` (its whole id, or a unique prefix).
    pub fn remove(&self, id_or_prefix: &str) -> Result<Webhook, WebhookError> {
        let mut hooks = self.lock();
        let at = resolve(&hooks, id_or_prefix)?;
        let hook = hooks.remove(at);
        let id = hook.record.id.clone();
        if let Err(error) = self.save(&hooks) {
            hooks.insert(at, hook);
            return Err(error.into());
        }
        if let Some(delivery) = &hook.delivery {
            delivery.stop.cancel();
        }
        tracing::info!(webhook = %id, "webhook removed");
        Ok(self.view(&hook.record, &hook.health))
    }

    /// Stops every delivery and waits until each has (what is delivered is
    /// recorded already; an event half-sent goes again after a restart).
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let tasks: Vec<_> = self.lock().iter_mut().filter_map(|h| h.delivery.take()).map(|d| d.task).collect();
        for task in tasks {
            let _ = task.await;
        }
    }

    fn view(&self, record: &Record, health: &Health) -> Webhook {
        Webhook {
            id: record.id.clone(),
            url: record.url.clone(),
            events: record.events.clone(),
            created_at: record.created_at,
            delivered_seq: record.delivered_seq,
            pending: self.engine.last_event_seq().saturating_sub(record.delivered_seq),
            failures: health.failures,
            last_error: health.last_error.clone(),
            last_attempt_at: health.last_attempt_at,
            next_attempt_at: health.next_attempt_at,
        }
    }

    fn save(&self, hooks: &[Hook]) -> Result<(), StoreError> {
        let file = File { webhooks: hooks.iter().map(|h| h.record.clone()).collect() };
        atomic::replace(&self.path, &to_pretty_json(&file))
            .map_err(|source| StoreError::Write { path: self.path.display().to_string(), source })
    }

    fn spawn(self: &Arc<Self>, id: &str) {
        let stop = self.stop.child_token();
        let task = tokio::spawn(stop.clone().run_until_cancelled_owned(self.clone().deliver_all(id.to_string())));
        if let Some(hook) = self.lock().iter_mut().find(|h| h.record.id == id) {
            hook.delivery = Some(DeliveryTask { stop, task });
        }
    }

    /// The delivery task of webhook `id`: follows the log from where it got.
    async fn deliver_all(self: Arc<Self>, id: String) {
        let Some(record) = self.lock().iter().find(|h| h.record.id == id).map(|h| h.record.clone()) else { return };
        let events = match self.engine.events(record.delivered_seq, None, true) {
            // A webhook that was down longer than events.keep: what was
            // removed is gone; it goes on from the oldest kept.
            Err(crate::engine::EngineError::EventsGone { oldest, .. }) => {
                tracing::warn!(webhook = %id, from = record.delivered_seq + 1, to = oldest - 1, "events no longer kept were never delivered");
                self.engine.events(oldest - 1, None, true)
            }
            events => events,
        };
        let mut events = match events {
            Ok(events) => Box::pin(events),
            Err(error) => {
                tracing::error!(webhook = %id, %error, "cannot read the event log; deliveries stop until restart");
                return;
            }
        };
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    tracing::error!(webhook = %id, %error, "cannot read the event log; deliveries stop until restart");
                    return;
                }
            };
            let wanted = record.events.is_empty() || record.events.iter().any(|k| k == event.data.kind());
            if wanted {
                self.deliver(&record, &event).await;
            }
            self.delivered(&id, event.seq, wanted);
        }
    }

    /// Delivers one event, retrying until the receiver takes it.
    async fn deliver(&self, record: &Record, event: &ConversationEvent) {
        let body = serde_json::to_vec(event).expect("events serialise");
        let signature = sign(&record.secret, &body);
        let mut backoff = Backoff::new(
            Duration::from_millis(self.settings.retry_initial_ms),
            Duration::from_millis(self.settings.retry_max_ms),
        );
        loop {
            let attempt = self
                .client
                .post(&record.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(SIGNATURE_HEADER, &signature)
                .header("relay-event-seq", event.seq.to_string())
                .header("relay-event-type", event.data.kind())
                .header("relay-webhook-id", &record.id)
                .body(body.clone())
                .send()
                .await;
            let error = match attempt {
                Ok(response) if response.status().is_success() => return,
                Ok(response) => format!("the receiver answered {}", response.status()),
                // Without the URL: it may hold credentials.
                Err(e) => format!("cannot reach the receiver: {}", e.without_url()),
            };
            let wait = backoff.next_wait();
            let next = crate::clock::now() + chrono::Duration::from_std(wait).unwrap_or_default();
            tracing::warn!(webhook = %record.id, seq = event.seq, %error, retry_in_ms = wait.as_millis() as u64, "webhook delivery failed");
            self.update_health(&record.id, |h| {
                h.failures += 1;
                h.last_error = Some(error);
                h.last_attempt_at = Some(crate::clock::now());
                h.next_attempt_at = Some(next);
            });
            tokio::time::sleep(wait).await;
        }
    }

    /// Records that webhook `id` is done with event `seq`. Skipped events are
    /// only written with the next delivered one.
    fn delivered(&self, id: &str, seq: u64, write: bool) {
        let mut hooks = self.lock();
        let Some(hook) = hooks.iter_mut().find(|h| h.record.id == id) else { return };
        hook.record.delivered_seq = seq;
        if write {
            // Delivered: the webhook is healthy again, and an old error
            // shown next to it would only mislead.
            hook.health.failures = 0;
            hook.health.last_error = None;
            hook.health.last_attempt_at = Some(crate::clock::now());
            hook.health.next_attempt_at = None;
            if let Err(error) = self.save(&hooks) {
                // Delivered all the same; after a restart it may go again.
                tracing::error!(webhook = %id, %error, "cannot record a delivery");
            }
        }
    }

    fn update_health(&self, id: &str, change: impl FnOnce(&mut Health)) {
        if let Some(hook) = self.lock().iter_mut().find(|h| h.record.id == id) {
            change(&mut hook.health);
        }
    }
}

/// The JSON Schema `pattern` of what [`resolve`] takes as a webhook id: its
/// first (at least [`MIN_ID_PREFIX`]) hex digits, with or without `wh_`, in
/// either case. Whatever it matches names a webhook or none, never "not an id".
pub fn id_pattern() -> String {
    format!("^(?:[wW][hH]_)?[0-9a-fA-F]{{{MIN_ID_PREFIX},}}$")
}

/// The index of the webhook `wanted` names: its whole id or the first
/// (at least [`MIN_ID_PREFIX`]) hex digits of it, with or without `wh_`.
fn resolve(hooks: &[Hook], wanted: &str) -> Result<usize, WebhookError> {
    let given = wanted.trim().to_ascii_lowercase();
    let digits = given.strip_prefix("wh_").unwrap_or(&given);
    if digits.len() < MIN_ID_PREFIX || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(WebhookError::Invalid(format!(
            "'{wanted}' is not a webhook id: give the whole id (wh_ and 12 hex digits) or at least \
             {MIN_ID_PREFIX} of its first hex digits"
        )));
    }
    let matches: Vec<usize> = (0..hooks.len())
        .filter(|&at| hooks[at].record.id.strip_prefix("wh_").is_some_and(|id| id.starts_with(digits)))
        .collect();
    match matches.as_slice() {
        [] => Err(WebhookError::NotFound(wanted.trim().to_string())),
        [at] => Ok(*at),
        _ => Err(WebhookError::Ambiguous {
            prefix: wanted.trim().to_string(),
            matches: matches.iter().map(|&at| hooks[at].record.id.clone()).collect(),
        }),
    }
}

/// Whether two event filters let the same events through (order and
/// repetition aside).
fn same_events(a: &[String], b: &[String]) -> bool {
    use std::collections::BTreeSet;
    a.iter().collect::<BTreeSet<_>>() == b.iter().collect::<BTreeSet<_>>()
}

/// `sha256=` and the hex HMAC-SHA256 of `body` keyed with `secret`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// The JSON Schema `pattern` of the URLs [`check_url`] takes, in their
/// plainest form: `http://` or `https://` (either case); a host name (labels
/// of letters and digits, single dashes inside; the last starts with a
/// letter, as one of digits would be read as an IP address) or a dotted
/// IPv4 address; maybe a port; then anything but spaces after `/`, `?` or
/// `#`. It takes more (user info, IPv6); every string the pattern matches
/// it takes.
pub fn url_pattern() -> String {
    let label = "[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*";
    let last_label = "[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*";
    let octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    let port = "(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})";
    format!(
        "^[hH][tT][tT][pP][sS]?://(?:(?:{label}\\.)*{last_label}|(?:{octet}\\.){{3}}{octet})(?::{port})?(?:[/?#]\\S*)?$"
    )
}

fn check_url(url: &str) -> Result<String, WebhookError> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| {
        WebhookError::Invalid(format!("'{url}' is not a URL ({e}); e.g. https://example.com/relay-events"))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(WebhookError::Invalid(format!("'{url}' is not an http or https URL")));
    }
    Ok(parsed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_the_body() {
        // RFC 4231, test case 2.
        let signed = sign("Jefe", b"what do ya want for nothing?");
        assert_eq!(signed, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    fn hooks(ids: &[String]) -> Vec<Hook> {
        let record = |id: &String| Record {
            id: id.clone(),
            url: "http://127.0.0.1:9/x".into(),
            events: vec![],
            secret: "s".into(),
            created_at: crate::clock::now(),
            delivered_seq: 0,
        };
        ids.iter().map(|id| Hook { record: record(id), health: Health::default(), delivery: None }).collect()
    }

    proptest::proptest! {
        /// Any prefix of at least 4 hex digits (with or without `wh_`, in
        /// either case) names the one webhook it starts, or says which it
        /// could be; shorter ones and other text are refused.
        #[test]
        fn a_webhook_is_named_by_any_long_enough_prefix(
            ids in proptest::collection::btree_set("[0-9a-f]{12}", 1..6),
            pick in 0usize..6,
            len in 0usize..=12,
            with_wh in proptest::bool::ANY,
            upper in proptest::bool::ANY,
        ) {
            let ids: Vec<String> = ids.into_iter().map(|hex| format!("wh_{hex}")).collect();
            let hooks = hooks(&ids);
            let digits = &ids[pick % ids.len()][3..3 + len];
            let mut given = if with_wh { format!("wh_{digits}") } else { digits.to_string() };
            if upper {
                given = given.to_uppercase();
            }
            let starting: Vec<usize> = (0..ids.len()).filter(|&at| ids[at][3..].starts_with(digits)).collect();
            match resolve(&hooks, &given) {
                Ok(at) => {
                    proptest::prop_assert!(len >= MIN_ID_PREFIX);
                    proptest::prop_assert_eq!(vec![at], starting);
                }
                Err(WebhookError::Ambiguous { matches, .. }) => {
                    proptest::prop_assert!(len >= MIN_ID_PREFIX && starting.len() > 1);
                    proptest::prop_assert_eq!(matches.len(), starting.len());
                }
                Err(WebhookError::Invalid(message)) => {
                    proptest::prop_assert!(len < MIN_ID_PREFIX, "{}", message);
                    proptest::prop_assert!(message.contains("is not a webhook id"));
                }
                Err(other) => proptest::prop_assert!(false, "{}", other),
            }
        }
    }

    proptest::proptest! {
        /// Whatever the id pattern matches names a webhook or none (or
        /// several), never "not a webhook id".
        #[test]
        fn every_string_the_id_pattern_matches_is_an_id(
            given in proptest::string::string_regex(id_pattern().trim_start_matches('^').trim_end_matches('$')).unwrap(),
        ) {
            let hooks = hooks(&["wh_3f2a9c1e4b5d".to_string(), "wh_3f2a00000000".to_string()]);
            proptest::prop_assert!(regex::Regex::new(&id_pattern()).unwrap().is_match(&given));
            proptest::prop_assert!(!matches!(resolve(&hooks, &given), Err(WebhookError::Invalid(_))), "{}", given);
        }

        /// A client that writes a URL as the schema's pattern says is never
        /// refused for its form.
        #[test]
        fn every_url_the_pattern_matches_is_taken(
            url in proptest::string::string_regex(url_pattern().trim_start_matches('^').trim_end_matches('$')).unwrap(),
        ) {
            proptest::prop_assert!(regex::Regex::new(&url_pattern()).unwrap().is_match(&url));
            proptest::prop_assert!(check_url(&url).is_ok(), "{}: {:?}", url, check_url(&url));
        }
    }

    #[test]
    fn the_url_pattern_takes_the_plain_urls_and_refuses_the_others() {
        let pattern = regex::Regex::new(&url_pattern()).unwrap();
        for plain in
            ["https://example.com/relay-events", "http://127.0.0.1:9/hook", "HTTP://a", "http://a.b-c.io?x=1#y"]
        {
            assert!(pattern.is_match(plain) && check_url(plain).is_ok(), "{plain}");
        }
        for refused in
            ["", "ftp://example.com", "http://", "http://a b", "http://a.1", "http://256.0.0.1", "http://a:65536"]
        {
            assert!(!pattern.is_match(refused), "{refused}");
        }
    }

    #[test]
    fn other_text_is_not_a_webhook_id() {
        let hooks = hooks(&["wh_3f2a9c1e4b5d".to_string()]);
        for bad in ["", "wh_", "3f2", "wh_3f2a9c1e4b5dz", "3f2a-9c", "xx_3f2a"] {
            assert!(matches!(resolve(&hooks, bad), Err(WebhookError::Invalid(_))), "{bad}");
        }
        assert!(matches!(resolve(&hooks, "wh_3f2b"), Err(WebhookError::NotFound(_))));
        assert_eq!(resolve(&hooks, " WH_3F2A9C1E4B5D ").unwrap(), 0);
    }

    #[test]
    fn event_filters_compare_as_sets() {
        let events = |list: &[&str]| list.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert!(same_events(&events(&["todo", "transition"]), &events(&["transition", "todo", "todo"])));
        assert!(!same_events(&events(&[]), &events(&["todo"])));
    }

    #[test]
    fn only_http_urls_are_taken() {
        assert!(check_url("https://example.com/hook").is_ok());
        assert!(check_url("http://127.0.0.1:9000/x").is_ok());
        for bad in ["ftp://example.com", "example.com", "file:///etc/passwd", "http://"] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
