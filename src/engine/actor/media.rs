//! Contacts' files: fetched beside the conversation once their message is
//! recorded (as being fetched), then the message written again as it now
//! reads. The reply to it waits until every file it has is in (each fetch
//! is bounded: `media.download_attempts` × `media.download_timeout_secs`).

use uuid::Uuid;

use super::{Actor, Msg};
use crate::agent::TurnImage;
use crate::api::{EventData, MediaInfo, MediaKind, MediaStatus, TranscriptMessage, TranscriptStatus};
use crate::courtesy::OptOutSource;
use crate::engine::media_label_context;
use crate::media::InboundMedia;

impl Actor {
    /// Starts fetching the file of the contact's message `recorded`
    /// (recorded with `record`, pending).
    pub(super) fn fetch(&mut self, recorded: TranscriptMessage, media: InboundMedia, record: MediaInfo) {
        self.fetching.push((recorded.instance_id, recorded.id));
        let me = self.me.clone();
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let (instance, id) = (recorded.instance_id, recorded.id);
            let settings = &shared.settings.media;
            let mut done =
                crate::media::intake::intake(&media, record, instance, id, settings, shared.store.media()).await;
            hear(&shared, &mut done).await;
            let content = crate::media::label::label(&done, &media_label_context(&shared.settings));
            let message = TranscriptMessage { content, media: Some(Box::new(done)), ..recorded };
            // An actor that is gone was stopped: the next start settles it.
            let _ = me.send(Box::new(Msg::MediaDone { message: Box::new(message) }));
        });
    }

    /// A fetch has ended: the message is written again (the latest line of
    /// an id wins), and what the conversation remembers of it follows.
    pub(super) fn media_done(&mut self, message: TranscriptMessage) {
        let (instance, id) = (message.instance_id, message.id);
        self.fetching.retain(|&fetch| fetch != (instance, id));
        super::release_if_empty(&mut self.fetching);
        if let Err(error) = self.shared.store.append_message(&message) {
            tracing::error!(%instance, %error, "cannot record a contact's file");
            return;
        }
        if let Some(media) = &message.media {
            tracing::info!(%instance, status = media.status.as_str(), "a contact's file is in");
            let event = EventData::Media {
                message_id: id,
                untrusted_contact_text: message.content.clone(),
                media: media.clone(),
            };
            self.shared.emit(instance, event);
        }
        let relabel = |text: &mut String, message_id: Uuid| {
            if message_id == id {
                text.clone_from(&message.content);
            }
        };
        if let Some(running) = self.turn.as_mut().filter(|t| t.instance == instance) {
            running.answering.iter_mut().for_each(|m| relabel(&mut m.untrusted_contact_text, m.message_id));
        }
        let latest = self.index(instance).ok().and_then(|at| self.convs[at].last_contact_message.clone());
        if latest.is_some_and(|m| m.message_id == id)
            && let Err(error) = self.update(instance, |i| {
                if let Some(m) = i.last_contact_message.as_mut() {
                    relabel(&mut m.untrusted_contact_text, m.message_id);
                }
            })
        {
            tracing::error!(%instance, %error, "cannot save a contact's file's effect");
        }
        self.spoken_opt_out(&message);
    }

    /// A voice note whose words are in says "stop" the way a typed message
    /// does: a whole message of an opt-out word (machine-heard, so only
    /// the exact-word rule, never a guess).
    fn spoken_opt_out(&mut self, message: &TranscriptMessage) {
        let words = message.media.as_ref().filter(|m| m.transcript_status == Some(TranscriptStatus::Done));
        let Some(words) = words.and_then(|m| m.transcript.as_deref()) else { return };
        if crate::courtesy::is_opt_out(words, &self.shared.settings.courtesy.opt_out_words) {
            let reason = "the contact's voice note was an opt-out word".to_string();
            if let Err(error) = self.opt_out(OptOutSource::Contact, Some(message.instance_id), reason) {
                tracing::error!(instance = %message.instance_id, %error, "cannot record an opt-out");
            }
        }
    }

    /// Whether a file of conversation `id` is still being fetched.
    pub(super) fn fetching_for(&self, id: Uuid) -> bool {
        self.fetching.iter().any(|&(instance, _)| instance == id)
    }
}

/// A stored voice note or audio file, transcribed if anyone can
/// (`media.transcription`); what became of it is its `transcript_status`.
/// Bytes that are not audio, whatever the message said, are not sent.
async fn hear(shared: &crate::engine::Shared, media: &mut MediaInfo) {
    let audio = matches!(media.kind, MediaKind::VoiceNote | MediaKind::Audio);
    if !audio || media.status != MediaStatus::Stored {
        return;
    }
    let ty = media.mime.as_deref().and_then(crate::media::sniff::from_mime);
    let Some(ty) = ty.filter(|ty| ty.class == crate::media::sniff::MediaClass::Audio) else {
        media.transcript_status = Some(TranscriptStatus::NotAudio);
        return;
    };
    let Some(transcriber) = &shared.transcriber else {
        media.transcript_status = Some(TranscriptStatus::NotConfigured);
        return;
    };
    let path = std::path::PathBuf::from(media.path.as_deref().unwrap_or_default());
    let heard = match shared.store.media().read(&path) {
        Ok(bytes) => transcriber.transcribe(bytes, ty.ext).await,
        Err(error) => Err(format!("relay could not read the stored file: {error}")),
    };
    match heard {
        Ok(words) => {
            media.transcript = Some(words);
            media.transcript_status = Some(TranscriptStatus::Done);
        }
        Err(error) => {
            media.transcript_status = Some(TranscriptStatus::Failed);
            media.error = Some(error);
        }
    }
}

/// The contact's photos a model that sees is shown in a turn: the newest
/// `media.images_to_model` that are kept, of a type every provider takes
/// (by their bytes: not HEIC) and no larger than
/// `media.max_image_bytes_to_model`; each with its label as it reads when
/// shown. One that cannot be read is left out (its label still says it is
/// not shown).
pub(super) fn images_to_show(shared: &crate::engine::Shared, transcript: &[TranscriptMessage]) -> Vec<TurnImage> {
    let settings = &shared.settings.media;
    let shown = crate::media::label::Context { shown: true, ..media_label_context(&shared.settings) };
    let showable = |m: &&TranscriptMessage| {
        m.media.as_ref().is_some_and(|media| {
            media.kind == MediaKind::Photo
                && media.status == MediaStatus::Stored
                && media.bytes.is_some_and(|n| n <= settings.max_image_bytes_to_model)
                && media.mime.as_deref().and_then(crate::media::sniff::from_mime).is_some_and(|ty| ty.model_can_see())
        })
    };
    let mut images: Vec<TurnImage> = transcript
        .iter()
        .rev()
        .filter(|m| m.role == crate::api::Role::Contact)
        .filter(showable)
        .take(settings.images_to_model as usize)
        .filter_map(|m| {
            let media = m.media.as_ref()?;
            let path = std::path::PathBuf::from(media.path.as_deref()?);
            let bytes = shared
                .store
                .media()
                .read(&path)
                .map_err(|error| tracing::warn!(%error, "cannot read a photo to show"))
                .ok()?;
            Some(TurnImage {
                message_id: m.id,
                mime: media.mime.clone()?,
                bytes,
                label: crate::media::label::label(media, &shown),
            })
        })
        .collect();
    images.reverse();
    images
}
