//! Contacts' files: fetched beside the conversation once their message is
//! recorded (as being fetched), then the message written again as it now
//! reads. The reply to it waits until every file it has is in (each fetch
//! is bounded: `media.download_attempts` × `media.download_timeout_secs`).

use uuid::Uuid;

use super::{Actor, Msg};
use crate::api::{MediaInfo, TranscriptMessage};
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
            let done = crate::media::intake::intake(&media, record, instance, id, settings, shared.store.media()).await;
            let content = crate::media::label::label(&done, &media_label_context(&shared.settings));
            let message = TranscriptMessage { content, media: Some(Box::new(done)), ..recorded };
            // An actor that is gone was stopped: the next start settles it.
            let _ = me.send(Msg::MediaDone { message: Box::new(message) });
        });
    }

    /// A fetch has ended: the message is written again (the latest line of
    /// an id wins), and what the conversation remembers of it follows.
    pub(super) fn media_done(&mut self, message: TranscriptMessage) {
        let (instance, id) = (message.instance_id, message.id);
        self.fetching.retain(|&fetch| fetch != (instance, id));
        if let Err(error) = self.shared.store.append_message(&message) {
            tracing::error!(%instance, %error, "cannot record a contact's file");
            return;
        }
        if let Some(media) = &message.media {
            tracing::info!(%instance, status = media.status.as_str(), "a contact's file is in");
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
    }

    /// Whether a file of conversation `id` is still being fetched.
    pub(super) fn fetching_for(&self, id: Uuid) -> bool {
        self.fetching.iter().any(|&(instance, _)| instance == id)
    }
}
