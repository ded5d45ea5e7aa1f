//! A contact's file, from the channel's message to the home: fetched (with
//! retries, within a size cap and a timeout), checked against what the
//! message declared, its type sniffed from the bytes, and stored under
//! relay's own name. The channel delivers the message at once with a
//! [`Fetch`]; the engine runs [`intake`] beside the conversation and writes
//! the message again when it is done. Nothing here is dropped: every way it
//! can end is a [`MediaStatus`] with its reason.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{label, names, ogg, sniff};
use crate::api::{MediaInfo, MediaKind, MediaStatus};
use crate::config::MediaSettings;
use crate::store::MediaStore;
use crate::util::{Backoff, BoxFuture};

/// How the channel fetches one file: called with the most bytes relay
/// takes, it gives them all or says why not. Called again for a retry.
pub type Fetch = Arc<dyn Fn(u64) -> BoxFuture<'static, Result<Vec<u8>, FetchError>> + Send + Sync>;

/// Why a fetch failed, and whether trying again may help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    pub retryable: bool,
    /// Short, relay's words (it is shown in the transcript's `error`).
    pub reason: String,
}

impl FetchError {
    pub fn retryable(reason: impl Into<String>) -> FetchError {
        FetchError { retryable: true, reason: reason.into() }
    }

    pub fn fatal(reason: impl Into<String>) -> FetchError {
        FetchError { retryable: false, reason: reason.into() }
    }
}

/// Media as a channel delivers it: what the message said about the file
/// (all of it the contact's or their phone's, so data to check, not to
/// trust), and how to fetch it.
#[derive(Clone)]
pub struct InboundMedia {
    pub kind: MediaKind,
    pub declared_mime: Option<String>,
    pub declared_bytes: Option<u64>,
    /// SHA-256 of the plain file, when the channel knows it (WhatsApp does).
    pub declared_sha256: Option<[u8; 32]>,
    /// How long it plays, as the message said.
    pub seconds: Option<u32>,
    pub file_name: Option<String>,
    pub caption: Option<String>,
    pub fetch: Fetch,
}

impl std::fmt::Debug for InboundMedia {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundMedia")
            .field("kind", &self.kind)
            .field("declared_mime", &self.declared_mime)
            .field("declared_bytes", &self.declared_bytes)
            .field("seconds", &self.seconds)
            .finish_non_exhaustive()
    }
}

/// Two deliveries are the same when they say the same; how they fetch is
/// not compared.
impl PartialEq for InboundMedia {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, &self.declared_mime, self.declared_bytes, self.declared_sha256, self.seconds)
            == (other.kind, &other.declared_mime, other.declared_bytes, other.declared_sha256, other.seconds)
            && (&self.file_name, &self.caption) == (&other.file_name, &other.caption)
    }
}

impl InboundMedia {
    /// The record of it before anything is fetched: `pending`, with what the
    /// message said (the caption made one line, the file name fit to show).
    pub fn pending(&self, reference: String) -> MediaInfo {
        MediaInfo {
            declared_mime: self.declared_mime.as_deref().map(|m| label::contact_text(m, 100)),
            bytes: self.declared_bytes,
            file_name: self.file_name.as_deref().and_then(names::display_name),
            caption: self.caption.clone().filter(|c| !c.trim().is_empty()),
            duration_s: self.seconds,
            ..MediaInfo::new(self.kind, MediaStatus::Pending, reference)
        }
    }
}

/// The first wait between two fetches; it doubles each time.
const FIRST_RETRY: Duration = Duration::from_secs(2);

/// Fetches, checks and stores the file of message `message_id` in
/// conversation `instance`, starting from its `pending` record. Returns
/// the record as it ends: `stored` (with the sniffed type, size, SHA-256,
/// path, and a voice note's length from its bytes), `too_large` (never
/// fetched when the message said so) or `failed` with the reason.
pub async fn intake(
    media: &InboundMedia,
    mut record: MediaInfo,
    instance: Uuid,
    message_id: Uuid,
    settings: &MediaSettings,
    store: &MediaStore,
) -> MediaInfo {
    let max = settings.max_bytes;
    if media.declared_bytes.is_some_and(|n| n > max) {
        record.status = MediaStatus::TooLarge;
        return record;
    }
    let attempts = settings.download_attempts.max(1);
    let timeout = Duration::from_secs(settings.download_timeout_secs);
    let mut backoff = Backoff::new(FIRST_RETRY, Duration::from_secs(60));
    let mut last = FetchError::fatal("it was not fetched");
    for attempt in 1..=attempts {
        let outcome = match tokio::time::timeout(timeout, (media.fetch)(max)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(FetchError::retryable(format!("no answer within {}s", timeout.as_secs()))),
        };
        let error = match outcome.and_then(|bytes| checked(bytes, media, max)) {
            Ok(bytes) => return stored(record, &bytes, instance, message_id, store),
            Err(error) => error,
        };
        tracing::warn!(instance = %instance, attempt, reason = %error.reason, "a contact's file could not be fetched");
        let again = error.retryable && attempt < attempts;
        last = error;
        if !again {
            break;
        }
        tokio::time::sleep(backoff.next_wait()).await;
    }
    record.status = MediaStatus::Failed;
    record.error = Some(last.reason);
    record
}

/// The fetched bytes, if they are what the message promised: within the
/// cap, and with its SHA-256 when it gave one. A mismatch may be a transfer
/// gone wrong, so it is worth another try; a file over the cap is not.
fn checked(bytes: Vec<u8>, media: &InboundMedia, max: u64) -> Result<Vec<u8>, FetchError> {
    if bytes.len() as u64 > max {
        return Err(FetchError::fatal(format!("the file is larger than {} (media.max_bytes)", label::size(max))));
    }
    if let Some(declared) = media.declared_sha256
        && Sha256::digest(&bytes).as_slice() != declared
    {
        return Err(FetchError::retryable("the file's SHA-256 is not the one its message gave"));
    }
    Ok(bytes)
}

/// `record` once `bytes` are stored, or failed if the home refused them.
fn stored(mut record: MediaInfo, bytes: &[u8], instance: Uuid, message_id: Uuid, store: &MediaStore) -> MediaInfo {
    let ty = sniff::sniff(bytes);
    match store.write(instance, &names::stored_file(message_id, ty), bytes) {
        Ok(file) => {
            record.status = MediaStatus::Stored;
            record.mime = Some(ty.mime.to_string());
            record.bytes = Some(file.bytes);
            record.sha256 = Some(file.sha256);
            record.path = Some(file.rel_path.display().to_string());
            // The bytes know better than the message how long it plays.
            if let Some(seconds) = ogg::seconds(bytes) {
                record.duration_s = Some(seconds);
            }
        }
        Err(error) => {
            tracing::error!(instance = %instance, %error, "cannot store a contact's file");
            record.status = MediaStatus::Failed;
            record.error = Some("relay could not store the file".into());
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::home::Home;

    /// A fetch that fails `failures` times (retryably), then gives `bytes`;
    /// and how many times it was called.
    fn flaky(bytes: Vec<u8>, failures: u32) -> (Fetch, Arc<AtomicU32>) {
        let calls = Arc::new(AtomicU32::new(0));
        let counted = calls.clone();
        let fetch: Fetch = Arc::new(move |_max| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let bytes = bytes.clone();
            Box::pin(
                async move { if n < failures { Err(FetchError::retryable("the server said 503")) } else { Ok(bytes) } },
            )
        });
        (fetch, calls)
    }

    fn photo(fetch: Fetch) -> InboundMedia {
        InboundMedia {
            kind: MediaKind::Photo,
            declared_mime: Some("image/jpeg".into()),
            declared_bytes: None,
            declared_sha256: None,
            seconds: None,
            file_name: None,
            caption: Some("the meter".into()),
            fetch,
        }
    }

    async fn run(media: &InboundMedia, settings: &MediaSettings) -> (MediaInfo, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::open(&Home::at(dir.path()));
        let record = media.pending("m1".into());
        (intake(media, record, Uuid::nil(), Uuid::max(), settings, &store).await, dir)
    }

    #[tokio::test(start_paused = true)]
    async fn a_photo_is_stored_under_relays_name_with_its_type_from_the_bytes() {
        let bytes = sniff::fixtures::jpeg();
        let (fetch, _) = flaky(bytes.clone(), 0);
        let media = InboundMedia { declared_mime: Some("application/pdf".into()), ..photo(fetch) };
        let (done, dir) = run(&media, &MediaSettings::default()).await;
        assert_eq!(done.status, MediaStatus::Stored);
        assert_eq!(done.mime.as_deref(), Some("image/jpeg"), "the bytes, not the message");
        assert_eq!(done.declared_mime.as_deref(), Some("application/pdf"));
        let path = done.path.clone().unwrap();
        assert_eq!(path, format!("media/{}/{}.jpg", Uuid::nil(), Uuid::max()));
        assert_eq!(std::fs::read(dir.path().join(&path)).unwrap(), bytes);
        assert_eq!(done.sha256.as_deref(), Some(crate::store::media::sha256_hex(&bytes).as_str()));
        assert_eq!((done.bytes, done.caption.as_deref()), (Some(bytes.len() as u64), Some("the meter")));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_retried_up_to_the_attempts_then_recorded() {
        let settings = MediaSettings { download_attempts: 3, ..MediaSettings::default() };
        let (fetch, calls) = flaky(sniff::fixtures::png(), 2);
        let (done, _dir) = run(&photo(fetch), &settings).await;
        assert_eq!((done.status, calls.load(Ordering::SeqCst)), (MediaStatus::Stored, 3));

        let (fetch, calls) = flaky(sniff::fixtures::png(), 5);
        let (done, _dir) = run(&photo(fetch), &settings).await;
        assert_eq!((done.status, calls.load(Ordering::SeqCst)), (MediaStatus::Failed, 3));
        assert_eq!(done.error.as_deref(), Some("the server said 503"));
        assert_eq!(done.path, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_file_declared_too_large_is_never_fetched_and_one_found_too_large_is_not_kept() {
        let settings = MediaSettings { max_bytes: 1_000, ..MediaSettings::default() };
        let (fetch, calls) = flaky(vec![0; 10], 0);
        let media = InboundMedia { declared_bytes: Some(45_000_000), ..photo(fetch) };
        let (done, _dir) = run(&media, &settings).await;
        assert_eq!(
            (done.status, done.bytes, calls.load(Ordering::SeqCst)),
            (MediaStatus::TooLarge, Some(45_000_000), 0)
        );

        let (fetch, calls) = flaky(vec![0; 1_001], 0);
        let (done, dir) = run(&photo(fetch), &settings).await;
        assert_eq!((done.status, calls.load(Ordering::SeqCst)), (MediaStatus::Failed, 1), "not worth a retry");
        assert!(done.error.unwrap().contains("larger than"));
        assert!(!dir.path().join("media").exists(), "nothing written");
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_that_are_not_the_declared_sha256_are_fetched_again() {
        let bytes = sniff::fixtures::png();
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        let calls = Arc::new(AtomicU32::new(0));
        let counted = calls.clone();
        let good = bytes.clone();
        let fetch: Fetch = Arc::new(move |_| {
            let first = counted.fetch_add(1, Ordering::SeqCst) == 0;
            let bytes = if first { vec![1, 2, 3] } else { good.clone() };
            Box::pin(async move { Ok(bytes) })
        });
        let media = InboundMedia { declared_sha256: Some(digest), ..photo(fetch) };
        let (done, _dir) = run(&media, &MediaSettings::default()).await;
        assert_eq!((done.status, calls.load(Ordering::SeqCst)), (MediaStatus::Stored, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_fetch_that_hangs_is_cut_at_the_timeout() {
        let settings = MediaSettings { download_attempts: 2, download_timeout_secs: 5, ..MediaSettings::default() };
        let fetch: Fetch = Arc::new(|_| Box::pin(std::future::pending()));
        let (done, _dir) = run(&photo(fetch), &settings).await;
        assert_eq!(done.status, MediaStatus::Failed);
        assert_eq!(done.error.as_deref(), Some("no answer within 5s"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_voice_notes_length_comes_from_its_bytes() {
        // 48 kHz granules: 12.5 s after a pre-skip of 312.
        let bytes = ogg::fixtures::ogg_opus(600_312, 312);
        let (fetch, _) = flaky(bytes, 0);
        let media = InboundMedia { kind: MediaKind::VoiceNote, seconds: Some(99), ..photo(fetch) };
        let (done, _dir) = run(&media, &MediaSettings::default()).await;
        assert_eq!((done.status, done.mime.as_deref()), (MediaStatus::Stored, Some("audio/ogg; codecs=opus")));
        assert_eq!(done.duration_s, Some(13));
    }
}
