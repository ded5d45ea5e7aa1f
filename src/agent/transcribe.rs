//! Voice notes into words: OpenAI's `/audio/transcriptions` (which OpenAI,
//! Groq and local whisper servers speak), through rig-core's own wire, with
//! the timeouts, retries and short private error excerpts of model calls.
//! What comes back is the contact's words, machine-heard: relay labels it
//! as a transcript wherever it shows it (`media::label`).

use std::time::Duration;

use rig_core::DynModel;
use rig_core::operation::Transcription;
use rig_core::providers::openai::OpenAIConfig;
use rig_core::transcription::TranscriptionRequestBuilder;

use super::excerpt;
use crate::config::TranscriptionConfig;
use crate::util::Backoff;

/// A configured transcription server (`media.transcription`).
pub struct Transcriber {
    model: Result<DynModel<Transcription>, String>,
    /// "whisper-1 at https://api.openai.com/v1", for errors and logs.
    label: String,
    /// Sent as the key, kept only to remove it from errors a server echoes.
    key: Option<String>,
    language: Option<String>,
    timeout: Duration,
    max_retries: u32,
    retry_backoff: Duration,
}

impl Transcriber {
    /// The server of `config`, a failed call retried `max_retries` times
    /// after `retry_backoff`, doubling (the model's settings). A key
    /// that cannot be found is an error at each transcription, not here:
    /// relay runs, and says why voice notes are not heard.
    pub fn new(config: &TranscriptionConfig, max_retries: u32, retry_backoff: Duration) -> Transcriber {
        let key =
            super::provider::resolve_key(config.api_key_env.as_deref(), config.api_key.as_deref(), "transcription");
        crate::util::choose_tls_crypto();
        let model = key.clone().map(|key| {
            let key = key.unwrap_or_default();
            let mut server = OpenAIConfig::new(key.clone()).with_base_url(config.base_url.trim_end_matches('/'));
            if key.is_empty() {
                // Local servers need none; rig then sends none.
                server = server.with_auth(rig_core::providers::openai::wire::Auth::OptionalBearer);
            }
            server.client().transcription(config.model.clone()).into()
        });
        Transcriber {
            model,
            label: format!("{} at {}", config.model, config.base_url),
            key: key.ok().flatten(),
            language: config.language.clone(),
            timeout: Duration::from_secs(config.request_timeout_secs),
            max_retries,
            retry_backoff,
        }
    }

    /// The words of `audio`, a file whose type `extension` names (`ogg`):
    /// servers pick their decoder by the file name. Retried with backoff on
    /// timeouts, 429 and 5xx; an error is short, relay's words and the
    /// server's, without the key.
    pub async fn transcribe(&self, audio: Vec<u8>, extension: &str) -> Result<String, String> {
        let model = self.model.as_ref().map_err(Clone::clone)?;
        let request = || {
            let mut request = TranscriptionRequestBuilder::new(audio.clone())
                .filename(format!("voice.{extension}"))
                .additional_params(serde_json::json!({"response_format": "json"}));
            if let Some(language) = &self.language {
                request = request.language(language.clone());
            }
            request.build()
        };
        let mut backoff = Backoff::new(self.retry_backoff, Duration::MAX);
        let mut attempt = 0;
        loop {
            let (error, retryable) = match tokio::time::timeout(self.timeout, model.call(request())).await {
                Ok(Ok(response)) => return Ok(response.text.trim().to_string()),
                Ok(Err(e)) => (e.to_string(), e.is_retryable()),
                Err(_) => (format!("no answer within {}s", self.timeout.as_secs()), true),
            };
            let secrets: Vec<&str> = self.key.iter().map(String::as_str).collect();
            let error = format!("{}: {}", self.label, excerpt::excerpt(&error, &[], &secrets));
            if !retryable || attempt >= self.max_retries {
                tracing::warn!(%error, "a voice note could not be transcribed");
                return Err(error);
            }
            tracing::warn!(attempt = attempt + 1, %error, "transcription failed; retrying");
            tokio::time::sleep(backoff.next_wait()).await;
            attempt += 1;
        }
    }
}
