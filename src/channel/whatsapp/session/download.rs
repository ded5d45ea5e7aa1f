//! A contact's file from WhatsApp's media servers, decrypted, within the
//! size relay takes.
//!
//! whatsapp-rust streams the download and decrypts it in one blocking
//! thread, writing the plain bytes to a writer relay gives it. That writer
//! is where the size cap is: it refuses the byte past `max_bytes`, so the
//! transfer stops there rather than after the whole file (the HTTP client's
//! own cap is 2 GiB, for every file). The writer also refuses everything once
//! the fetch is given up (the engine's timeout drops it), so an abandoned
//! transfer stops at its next chunk. Not capped: a connection that stalls
//! without sending anything. The HTTP client (ureq's default agent) has no
//! timeout, so that thread waits until the OS gives up on the socket; the
//! engine has stopped waiting for it long before.

use std::io::{Cursor, Seek, SeekFrom, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use whatsapp_rust::ErrorChainExt;
use whatsapp_rust::anyhow;
use whatsapp_rust::download::DownloadWriter;
use whatsapp_rust::prelude::*;

use crate::channel::whatsapp::inbound::MediaRef;
use crate::media::intake::FetchError;

/// The most relay sets aside before the first byte, whatever the message
/// declared (a lying length must not reserve gigabytes).
const PREALLOCATE_AT_MOST: u64 = 16 * 1024 * 1024;

/// Downloads and decrypts `media` with `client` (`None`: not connected).
pub(super) async fn download(
    client: Option<Arc<Client>>,
    media: &MediaRef,
    max_bytes: u64,
) -> Result<Vec<u8>, FetchError> {
    // Without these whatsapp-rust cannot build the address or open the
    // file; asking again will not change the message.
    if media.direct_path.is_none() || media.media_key.is_none() || media.file_enc_sha256.is_none() {
        return Err(FetchError::fatal("the message did not say where its file is"));
    }
    let client = client.ok_or_else(|| FetchError::retryable("WhatsApp is not connected"))?;
    let stop = Arc::new(Stop::default());
    let _abandoned_if_dropped = Abandon(stop.clone());
    let capacity = media.file_length.unwrap_or(0).min(max_bytes).min(PREALLOCATE_AT_MOST);
    let writer =
        CappedWriter { bytes: Cursor::new(Vec::with_capacity(capacity as usize)), max_bytes, stop: stop.clone() };
    match client.download_to_writer(media, writer).await {
        Ok(writer) => Ok(writer.bytes.into_inner()),
        Err(error) => Err(fetch_error(&error, stop.over.load(Ordering::SeqCst), max_bytes)),
    }
}

/// Why a download failed, in relay's words, and whether another try may
/// help. whatsapp-rust has already tried each media host, and refreshed its
/// media connection once after a 401/403/404/410.
pub(crate) fn fetch_error(error: &anyhow::Error, over_cap: bool, max_bytes: u64) -> FetchError {
    if over_cap {
        let max = crate::media::label::size(max_bytes);
        return FetchError::fatal(format!("the file is larger than {max} (media.max_bytes)"));
    }
    let cause: &(dyn std::error::Error + 'static) = error.as_ref();
    match cause.http_status() {
        Some(status @ (404 | 410)) => FetchError::fatal(format!("WhatsApp no longer has the file (HTTP {status})")),
        Some(status) => FetchError::retryable(format!("WhatsApp's media server answered HTTP {status}")),
        // The bytes came but were not the file (cut short, or corrupted on
        // the way): another download may get it whole.
        None if error.chain().any(|e| e.to_string().contains("MAC")) => {
            FetchError::retryable("the file did not pass WhatsApp's integrity check")
        }
        None => {
            tracing::warn!(error = format!("{error:#}"), "a WhatsApp download failed");
            FetchError::retryable("the download from WhatsApp failed")
        }
    }
}

/// What the download's thread learns from the writer, and tells it.
#[derive(Default)]
struct Stop {
    /// The file went past `max_bytes`.
    over: AtomicBool,
    /// Nobody waits for the bytes any more.
    abandoned: AtomicBool,
}

/// Dropped with the fetch: the thread still downloading stops writing.
struct Abandon(Arc<Stop>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.abandoned.store(true, Ordering::SeqCst);
    }
}

/// The plain file in memory, refusing the byte past `max_bytes`. Once over
/// it refuses every write, so whatsapp-rust's next media host (it tries
/// each after a failure) is not downloaded up to the cap again.
struct CappedWriter {
    bytes: Cursor<Vec<u8>>,
    max_bytes: u64,
    stop: Arc<Stop>,
}

impl Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.stop.abandoned.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the download was given up"));
        }
        let end = self.bytes.position().saturating_add(data.len() as u64);
        if self.stop.over.load(Ordering::SeqCst) || end > self.max_bytes {
            self.stop.over.store(true, Ordering::SeqCst);
            return Err(std::io::Error::other("the file is larger than relay takes"));
        }
        self.bytes.write(data)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for CappedWriter {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.bytes.seek(to)
    }
}

impl DownloadWriter for CappedWriter {
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.bytes.get_mut().truncate(usize::try_from(len).unwrap_or(usize::MAX));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use whatsapp_rust::download::{DownloadUtils, MediaType};

    use super::*;

    fn writer(max_bytes: u64) -> (CappedWriter, Arc<Stop>) {
        let stop = Arc::new(Stop::default());
        (CappedWriter { bytes: Cursor::new(Vec::new()), max_bytes, stop: stop.clone() }, stop)
    }

    /// What relay relies on in wacore: a file encrypted with a media key as
    /// WhatsApp does is given back whole by the download's decryption (both
    /// the streaming one whatsapp-rust uses with relay's writer and the
    /// in-memory one), and one flipped byte fails the MAC check, never
    /// yielding other bytes.
    #[test]
    fn wacore_decrypts_what_whatsapp_encrypts_and_a_flipped_byte_fails_the_mac() {
        use whatsapp_rust::wacore::upload::encrypt_media_with_key;
        let plain: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let key = [7u8; 32];
        let encrypted = encrypt_media_with_key(&plain, MediaType::Image, Some(&key)).unwrap();
        let upload = encrypted.data_to_upload;

        let (mut capped, _) = writer(1_000_000);
        DownloadUtils::decrypt_stream_to_writer(upload.as_slice(), &key, MediaType::Image, &mut capped).unwrap();
        assert_eq!(capped.bytes.into_inner(), plain);
        assert_eq!(DownloadUtils::verify_and_decrypt(&upload, &key, MediaType::Image).unwrap(), plain);
        let digest: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(&plain).into();
        assert_eq!(encrypted.file_sha256, digest, "file_sha256 is the plain file's, as relay checks it");

        let mut flipped = upload.clone();
        flipped[100] ^= 1;
        let error = DownloadUtils::verify_and_decrypt(&flipped, &key, MediaType::Image).unwrap_err();
        assert!(matches!(error, whatsapp_rust::download::MediaDecryptionError::InvalidMac), "{error}");
        let streamed = DownloadUtils::decrypt_stream(flipped.as_slice(), &key, MediaType::Image).unwrap_err();
        let mapped = fetch_error(&streamed, false, 1_000_000);
        assert_eq!(mapped, FetchError::retryable("the file did not pass WhatsApp's integrity check"));

        // Another kind's keys do not open it either.
        assert!(DownloadUtils::verify_and_decrypt(&upload, &key, MediaType::Document).is_err());
    }

    #[test]
    fn the_writer_refuses_the_byte_past_the_cap_and_everything_after() {
        let plain = vec![1u8; 5_000];
        let key = [9u8; 32];
        let upload =
            whatsapp_rust::wacore::upload::encrypt_media_with_key(&plain, MediaType::Audio, Some(&key)).unwrap();
        let (mut capped, stop) = writer(4_999);
        let error = DownloadUtils::decrypt_stream_to_writer(
            upload.data_to_upload.as_slice(),
            &key,
            MediaType::Audio,
            &mut capped,
        )
        .unwrap_err();
        assert!(stop.over.load(Ordering::SeqCst), "{error}");
        assert!(capped.bytes.get_ref().len() <= 4_999);
        capped.truncate(0).unwrap();
        capped.rewind().unwrap();
        assert!(capped.write(&[1]).is_err(), "the next host is refused at once");
        assert_eq!(
            fetch_error(&error, true, 4_999),
            FetchError::fatal("the file is larger than 4.9 KB (media.max_bytes)")
        );

        let (mut exact, _) = writer(5_000);
        DownloadUtils::decrypt_stream_to_writer(upload.data_to_upload.as_slice(), &key, MediaType::Audio, &mut exact)
            .unwrap();
        assert_eq!(exact.bytes.into_inner(), plain, "a file of exactly the cap is taken");
    }

    #[test]
    fn a_given_up_download_stops_writing() {
        let (mut capped, stop) = writer(1_000);
        capped.write_all(&[1; 10]).unwrap();
        drop(Abandon(stop.clone()));
        assert!(capped.write(&[1]).is_err());
    }

    #[test]
    fn download_errors_say_whether_to_try_again() {
        use whatsapp_rust::http::HttpStatusError;
        // As whatsapp-rust reports a refused download.
        let status = |status: u16| {
            anyhow::Error::new(HttpStatusError { status }).context(format!("Download failed with status: {status}"))
        };
        assert_eq!(
            fetch_error(&status(404), false, 1),
            FetchError::fatal("WhatsApp no longer has the file (HTTP 404)")
        );
        assert!(!fetch_error(&status(410), false, 1).retryable);
        assert_eq!(
            fetch_error(&status(503), false, 1),
            FetchError::retryable("WhatsApp's media server answered HTTP 503")
        );
        assert!(fetch_error(&status(403), false, 1).retryable, "after whatsapp-rust's own refresh, worth one more");
        let transport = anyhow::anyhow!("io: Connection reset by peer");
        assert_eq!(fetch_error(&transport, false, 1), FetchError::retryable("the download from WhatsApp failed"));
    }

    #[tokio::test]
    async fn without_a_connection_or_an_address_nothing_is_downloaded() {
        let media = MediaRef {
            direct_path: Some("/v/t62.7118-24/1_2_3.enc".into()),
            media_key: Some(vec![1; 32]),
            file_sha256: Some(vec![2; 32]),
            file_enc_sha256: Some(vec![3; 32]),
            file_length: Some(10),
            media_type: MediaType::Image,
        };
        assert_eq!(download(None, &media, 100).await, Err(FetchError::retryable("WhatsApp is not connected")));
        let nowhere = MediaRef { direct_path: None, ..media.clone() };
        assert_eq!(
            download(None, &nowhere, 100).await,
            Err(FetchError::fatal("the message did not say where its file is"))
        );
        let no_key = MediaRef { media_key: None, ..media };
        assert!(!download(None, &no_key, 100).await.unwrap_err().retryable);
    }
}
