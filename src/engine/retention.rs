//! How long relay keeps what piles up. Contacts' files: each is removed
//! `media.keep` after it came (by its message's time), and its transcript
//! line written again to say so (`pruned`, `pruned_at`, no path; the label
//! ", removed after 90 days"). Files given over the API and never used go
//! after an hour. The event log's days go `events.keep` after their last
//! event. A task runs this at start and every hour until the engine stops.

use std::path::PathBuf;
use std::time::Duration;

use super::{Shared, media_label_context};
use crate::api::{MediaStatus, Role, TranscriptMessage};
use crate::store::StoreError;

/// How often the files are looked at.
pub const EVERY: Duration = Duration::from_secs(3600);

/// How long a file given over the API waits to be used.
pub const UPLOADS_KEPT: Duration = Duration::from_secs(3600);

/// Runs [`prune`] now and every [`EVERY`] until the engine stops.
pub(super) async fn run(shared: std::sync::Weak<Shared>, stop: tokio_util::sync::CancellationToken) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        let Some(shared) = shared.upgrade() else { return };
        match prune(&shared) {
            Ok(0) => {}
            Ok(removed) => tracing::info!(removed, "contacts' files past media.keep removed"),
            Err(error) => tracing::error!(%error, "cannot remove old contacts' files"),
        }
        prune_event_log(&shared);
    }
}

/// Removes the event log's days past `events.keep`, and says so.
pub(super) fn prune_event_log(shared: &Shared) {
    match shared.prune_events() {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "days of the event log past events.keep removed"),
        Err(error) => tracing::error!(%error, "cannot remove old days of the event log"),
    }
}

/// Removes every contact's file older than `media.keep`, and staged uploads
/// older than [`UPLOADS_KEPT`]; returns how many files of conversations.
/// Only conversations that ever had one are read.
pub(super) fn prune(shared: &Shared) -> Result<usize, StoreError> {
    let media = shared.store.media();
    media.expire_uploads(UPLOADS_KEPT)?;
    let keep = chrono::Duration::from_std(shared.settings.media.keep).unwrap_or(chrono::Duration::MAX);
    let now = crate::clock::now();
    let cx = media_label_context(&shared.settings);
    let mut with_files = Vec::new();
    shared.read_view(|view| with_files.extend(view.entries().filter(|e| e.has_media()).map(|e| e.id())));
    let mut removed = 0;
    for id in with_files {
        for message in shared.store.read_transcript(id)? {
            let Some(file) = message.media.as_deref() else { continue };
            let old = message.timestamp + keep <= now;
            if message.role != Role::Contact || file.status != MediaStatus::Stored || !old {
                continue;
            }
            if let Some(path) = &file.path {
                media.remove(&PathBuf::from(path))?;
            }
            let mut pruned = file.clone();
            pruned.status = MediaStatus::Pruned;
            pruned.pruned_at = Some(now);
            pruned.path = None;
            let content = crate::media::label::label(&pruned, &cx);
            let event = crate::api::EventData::Media {
                message_id: message.id,
                untrusted_contact_text: content.clone(),
                media: Box::new(pruned.clone()),
            };
            shared.store.append_message(&TranscriptMessage { content, media: Some(Box::new(pruned)), ..message })?;
            shared.emit(id, event);
            removed += 1;
        }
    }
    Ok(removed)
}
