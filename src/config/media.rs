//! The `media` section: how relay takes the photos, voice notes and files
//! contacts send (how large, how long kept, how many tries to fetch one,
//! how many photos a turn shows the model) and who transcribes voice notes
//! (`media.transcription`, absent: no one). The design is
//! docs/plans/media.md, section 7.7.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The largest file relay may fetch: WhatsApp's own limit for a document.
pub const MAX_MEDIA_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// The shortest and longest time a file may be kept.
pub const MIN_KEEP: Duration = Duration::from_secs(3_600);
pub const MAX_KEEP: Duration = Duration::from_secs(3_650 * 86_400);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MediaSettings {
    /// A file larger than this is not fetched (16 MiB).
    pub max_bytes: u64,
    /// A contact's file is removed this long after it arrived ("90d").
    #[serde(with = "crate::duration::text")]
    pub keep: Duration,
    /// Tries to fetch one file before it counts as failed.
    pub download_attempts: u32,
    /// How long one try may take.
    pub download_timeout_secs: u64,
    /// The newest this many photos of a conversation are shown to a model
    /// that can see ([`super::ModelConfig::vision`]); 0: none.
    pub images_to_model: u32,
    /// A photo larger than this is not shown to the model (3.75 MiB: what
    /// stays under 5 MB once base64-encoded, Anthropic's limit).
    pub max_image_bytes_to_model: u64,
    /// Who transcribes voice notes; absent: no one, and the agent is told
    /// to ask the contact to write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcription: Option<TranscriptionConfig>,
}

impl Default for MediaSettings {
    fn default() -> Self {
        MediaSettings {
            max_bytes: 16 * 1024 * 1024,
            keep: Duration::from_secs(90 * 86_400),
            download_attempts: 3,
            download_timeout_secs: 60,
            images_to_model: 3,
            max_image_bytes_to_model: 3_932_160,
            transcription: None,
        }
    }
}

/// A server speaking OpenAI's `/audio/transcriptions` (OpenAI, Groq, a
/// local whisper server), named like [`super::ModelConfig`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// The URL `/audio/transcriptions` follows, e.g. https://api.openai.com/v1.
    pub base_url: String,
    /// The transcription model at that server, e.g. "whisper-1".
    pub model: String,
    /// The environment variable that holds the API key (preferred).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The API key itself; this file is owner-only (0600). Never logged or shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The contacts' language (ISO 639-1, "es"), which helps the model;
    /// absent: it guesses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// How long one transcription may take.
    #[serde(default = "default_transcription_timeout")]
    pub request_timeout_secs: u64,
}

/// How long one transcription may take when the section sets nothing.
pub const DEFAULT_TRANSCRIPTION_TIMEOUT_SECS: u64 = 120;

fn default_transcription_timeout() -> u64 {
    DEFAULT_TRANSCRIPTION_TIMEOUT_SECS
}

impl TranscriptionConfig {
    /// The server at `base_url` and its model, every other setting left to
    /// its default.
    pub fn new(base_url: &str, model: &str) -> TranscriptionConfig {
        TranscriptionConfig {
            base_url: base_url.to_string(),
            model: model.to_string(),
            api_key_env: None,
            api_key: None,
            language: None,
            request_timeout_secs: DEFAULT_TRANSCRIPTION_TIMEOUT_SECS,
        }
    }

    /// The model a known server is asked for when none is named: `whisper-1`
    /// at OpenAI, `whisper-large-v3-turbo` at Groq; any other server must be
    /// told.
    pub fn default_model(base_url: &str) -> Option<&'static str> {
        match host(base_url)?.as_str() {
            "api.openai.com" => Some("whisper-1"),
            "api.groq.com" => Some("whisper-large-v3-turbo"),
            _ => None,
        }
    }

    /// "model at base_url", as `relay init` shows it (never the key).
    pub fn label(&self) -> String {
        format!("{} at {}", self.model, self.base_url)
    }

    /// Where the API key comes from, in words, for `relay init` to show.
    pub fn key_source(&self) -> String {
        match (&self.api_key_env, &self.api_key) {
            (Some(var), _) => format!("key from ${var}, which the daemon's environment must have"),
            (None, Some(_)) => "key stored in config.json".into(),
            (None, None) => "no API key is sent".into(),
        }
    }

    fn check(&self) -> Result<(), String> {
        let url = &self.base_url;
        if !(url.starts_with("http://") || url.starts_with("https://")) || host(url).is_none() {
            return Err(format!(
                "media.transcription.base_url must be an http:// or https:// URL (it is '{url}'), the part before \
                 /audio/transcriptions, e.g. https://api.openai.com/v1: `relay init --transcription-url URL` sets it"
            ));
        }
        if self.model.trim().is_empty() {
            return Err(format!(
                "media.transcription.model is empty: say which model {url} transcribes with: \
                 `relay init --transcription-url {url} --transcription-model NAME`"
            ));
        }
        if self.request_timeout_secs == 0 {
            return Err("media.transcription.request_timeout_secs must be at least 1".into());
        }
        match &self.language {
            Some(code) if !((2..=3).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase())) => {
                Err(format!(
                    "media.transcription.language must be a language's ISO 639-1 code in lower case, such as \"es\" \
                     or \"en\" (it is '{code}'); leave it out to let the server guess"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// The host of an http(s) URL, lower-cased, if it has one.
fn host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    parsed.host_str().filter(|h| !h.is_empty()).map(str::to_ascii_lowercase)
}

impl MediaSettings {
    /// Refuses settings under which no file could be fetched, kept or shown.
    pub fn check(&self) -> Result<(), String> {
        if self.max_bytes == 0 || self.max_bytes > MAX_MEDIA_BYTES {
            return Err(format!(
                "media.max_bytes must be from 1 to {MAX_MEDIA_BYTES} (2 GiB, the largest file WhatsApp carries); \
                 it is {}",
                self.max_bytes
            ));
        }
        if !(MIN_KEEP..=MAX_KEEP).contains(&self.keep) {
            return Err(format!(
                "media.keep must be from 1h to 3650d (it is {}; a duration such as \"90d\")",
                crate::duration::format(self.keep)
            ));
        }
        if self.download_attempts == 0 {
            return Err("media.download_attempts must be at least 1".into());
        }
        if self.download_timeout_secs == 0 {
            return Err("media.download_timeout_secs must be at least 1".into());
        }
        if self.max_image_bytes_to_model == 0 {
            return Err("media.max_image_bytes_to_model must be at least 1 (to show the model no photos, set \
                        media.images_to_model to 0, or model.vision to false)"
                .into());
        }
        match &self.transcription {
            Some(transcription) => transcription.check(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults are the design's, written as a person reads them, and
    /// read back; an empty section is the defaults.
    #[test]
    fn the_defaults_read_back_and_an_empty_section_is_them() {
        let written = serde_json::to_value(MediaSettings::default()).unwrap();
        assert_eq!(
            written,
            serde_json::json!({
                "max_bytes": 16_777_216,
                "keep": "90d",
                "download_attempts": 3,
                "download_timeout_secs": 60,
                "images_to_model": 3,
                "max_image_bytes_to_model": 3_932_160
            })
        );
        assert_eq!(serde_json::from_value::<MediaSettings>(written).unwrap(), MediaSettings::default());
        assert_eq!(serde_json::from_str::<MediaSettings>("{}").unwrap(), MediaSettings::default());
        assert_eq!(MediaSettings::default().check(), Ok(()));
    }

    #[test]
    fn a_transcription_section_reads_back_with_its_timeout_defaulted() {
        let read: MediaSettings = serde_json::from_value(serde_json::json!({"transcription": {
            "base_url": "https://api.openai.com/v1", "model": "whisper-1",
            "api_key_env": "OPENAI_API_KEY", "language": "es"
        }}))
        .unwrap();
        let transcription = read.transcription.clone().unwrap();
        assert_eq!(transcription.request_timeout_secs, 120);
        assert_eq!(transcription.language.as_deref(), Some("es"));
        assert_eq!(read.check(), Ok(()));
        let written = serde_json::to_value(&read).unwrap();
        assert_eq!(written["transcription"]["request_timeout_secs"], 120);
        assert!(written["transcription"].get("api_key").is_none());
        assert_eq!(serde_json::from_value::<MediaSettings>(written).unwrap(), read);
    }

    /// Unknown keys are refused, in the section and in transcription; so is
    /// a `keep` that is not a duration.
    #[test]
    fn unknown_keys_and_a_keep_that_is_no_duration_are_refused() {
        for wrong in [
            serde_json::json!({"max_size": 10}),
            serde_json::json!({"transcription": {"base_url": "http://x", "model": "m", "key": "k"}}),
            serde_json::json!({"transcription": {"base_url": "http://x"}}),
            serde_json::json!({"keep": "three months"}),
            serde_json::json!({"keep": 90}),
        ] {
            assert!(serde_json::from_value::<MediaSettings>(wrong.clone()).is_err(), "{wrong}");
        }
    }

    /// Each setting no file could be fetched, kept or shown under is
    /// refused, naming it.
    #[test]
    fn settings_nothing_could_work_with_are_refused_by_name() {
        let transcription = |change: fn(&mut TranscriptionConfig)| {
            let mut t = TranscriptionConfig::new("https://api.groq.com/openai/v1", "whisper-large-v3-turbo");
            change(&mut t);
            MediaSettings { transcription: Some(t), ..Default::default() }
        };
        for (wrong, setting) in [
            (MediaSettings { max_bytes: 0, ..Default::default() }, "media.max_bytes"),
            (MediaSettings { max_bytes: MAX_MEDIA_BYTES + 1, ..Default::default() }, "media.max_bytes"),
            (MediaSettings { keep: Duration::ZERO, ..Default::default() }, "media.keep"),
            (MediaSettings { keep: Duration::from_secs(60), ..Default::default() }, "media.keep"),
            (MediaSettings { keep: MAX_KEEP + Duration::from_secs(1), ..Default::default() }, "media.keep"),
            (MediaSettings { download_attempts: 0, ..Default::default() }, "media.download_attempts"),
            (MediaSettings { download_timeout_secs: 0, ..Default::default() }, "media.download_timeout_secs"),
            (MediaSettings { max_image_bytes_to_model: 0, ..Default::default() }, "media.max_image_bytes_to_model"),
            (transcription(|t| t.base_url = "api.openai.com/v1".into()), "media.transcription.base_url"),
            (transcription(|t| t.base_url = "https://".into()), "media.transcription.base_url"),
            (transcription(|t| t.model = " ".into()), "media.transcription.model"),
            (transcription(|t| t.request_timeout_secs = 0), "media.transcription.request_timeout_secs"),
            (transcription(|t| t.language = Some("Spanish".into())), "media.transcription.language"),
            (transcription(|t| t.language = Some("ES".into())), "media.transcription.language"),
            (transcription(|t| t.language = Some(String::new())), "media.transcription.language"),
        ] {
            let problem = wrong.check().unwrap_err();
            assert!(problem.starts_with(setting), "{wrong:?}: {problem}");
        }
        assert_eq!(MediaSettings { images_to_model: 0, ..Default::default() }.check(), Ok(()));
        assert_eq!(transcription(|t| t.language = Some("es".into())).check(), Ok(()));
    }

    proptest::proptest! {
        /// Any `keep` from 1h to 3650d is taken and reads back as written;
        /// any other is refused by name.
        #[test]
        fn a_keep_is_taken_only_within_its_bounds(seconds in proptest::prop_oneof![0u64..400_000_000, 0u64..u64::MAX / 2]) {
            let settings = MediaSettings { keep: Duration::from_secs(seconds), ..Default::default() };
            let within = (3_600..=3_650 * 86_400).contains(&seconds);
            match settings.check() {
                Ok(()) => {
                    proptest::prop_assert!(within, "{}", seconds);
                    let read: MediaSettings = serde_json::from_value(serde_json::to_value(&settings).unwrap()).unwrap();
                    proptest::prop_assert_eq!(read, settings);
                }
                Err(problem) => {
                    proptest::prop_assert!(!within, "{}: {}", seconds, problem);
                    proptest::prop_assert!(problem.starts_with("media.keep must be"), "{}", problem);
                }
            }
        }
    }

    #[test]
    fn openai_and_groq_have_a_default_model_and_other_servers_none() {
        for (url, model) in [
            ("https://api.openai.com/v1", Some("whisper-1")),
            ("https://API.OpenAI.com/v1/", Some("whisper-1")),
            ("https://api.groq.com/openai/v1", Some("whisper-large-v3-turbo")),
            ("http://127.0.0.1:8000/v1", None),
            ("https://api.openai.com.example.net/v1", None),
            ("https://example.net/api.openai.com/v1", None),
            ("not a url", None),
        ] {
            assert_eq!(TranscriptionConfig::default_model(url), model, "{url}");
        }
    }
}
