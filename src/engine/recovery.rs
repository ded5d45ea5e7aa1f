//! What a start puts right after a stop, before any conversation runs:
//! after a crash, sends under way are unconfirmed; after any stop, a receipt
//! that reached the transcript but not its conversation is noted, a fetch
//! under way counts as failed, and files no transcript names are removed.

use uuid::Uuid;

use super::delivery;
use crate::store::{Conversations, Store, StoreError};

/// The conversations on disk, with what the stop left half done put right.
pub(super) fn recover(store: &Store, settings: &super::Settings) -> Result<Conversations, StoreError> {
    let clean = store.take_clean_shutdown()?;
    if !clean {
        let unconfirmed = store.settle_interrupted_sends()?;
        if unconfirmed > 0 {
            tracing::warn!(unconfirmed, "relay stopped while sending; those messages are marked unconfirmed");
        }
    }
    let Conversations { mut live, ended } = store.load_conversations()?;
    // A receipt written to the transcript just before relay stopped may
    // not have reached its conversation: what the awaited message says
    // now is noted as the receipt would have been, or the conversation
    // would wait for one that already came.
    for instance in live.iter_mut().filter(|i| i.awaiting_delivery.is_some()) {
        let awaited = instance.awaiting_delivery.as_ref().map(|a| a.message_id);
        let transcript = store.read_transcript(instance.id)?;
        let Some(message) = transcript.iter().find(|m| Some(m.id) == awaited) else { continue };
        let before = instance.clone();
        delivery::note(instance, message);
        if *instance != before {
            store.save_instance(instance)?;
        }
    }
    // Even a clean stop leaves a fetch under way behind (its channel
    // handle is gone): the file counts as not fetched, and the agent is
    // told to ask for it again. After a clean stop only conversations
    // that had a file are read (a message and its count are written in
    // one step of the actor); after a crash, every transcript that
    // holds a pending file.
    let with_files: Vec<Uuid> = (live.iter().filter(|i| i.media_received > 0).map(|i| i.id))
        .chain(ended.iter().filter(|e| e.has_media).map(|e| e.id))
        .collect();
    let cx = super::media_label_context(settings);
    let unfetched = store.settle_interrupted_media(
        clean.then_some(with_files.as_slice()),
        "relay stopped before the file was fetched",
        |media| crate::media::label::label(media, &cx),
    )?;
    if unfetched > 0 {
        tracing::warn!(unfetched, "relay stopped while fetching contacts' files; they are marked failed");
    }
    // A crash can leave a file no transcript names yet, or a half-written
    // one: gone before anything new is written.
    let mut named = std::collections::HashSet::new();
    for id in &with_files {
        let paths = store.read_transcript(*id)?.into_iter().filter_map(|m| m.media?.path);
        named.extend(paths.map(std::path::PathBuf::from));
    }
    // Attachments are named by their conversation, sent or not.
    let attachments = (live.iter().flat_map(|i| i.attachments.iter().map(|a| &a.path)))
        .chain(ended.iter().flat_map(|e| &e.attachments));
    named.extend(attachments.map(std::path::PathBuf::from));
    let orphans = store.media().sweep_orphans(&named)?;
    if !orphans.is_empty() {
        tracing::warn!(removed = orphans.len(), "files no transcript names (left by a crash) were removed");
    }
    Ok(Conversations { live, ended })
}
