//! The files a conversation may send its contact: given at create
//! (`--attach`, staged first with `POST /media`) or by the operator's
//! `relay send --file`. Each is moved out of the stage into the
//! conversation's folder under relay's own name (`att-a1.pdf`, the type
//! found in its bytes) and listed in the conversation as `a1`, `a2`…: the
//! agent names one by that id, never by a path.

use uuid::Uuid;

use super::EngineError;
use crate::api::{Attachment, MediaKind, NewAttachment, limits};
use crate::media::{names, sniff};
use crate::store::ConversationRecord;
use crate::store::MediaStore;

/// Moves the staged uploads `wanted` into new conversation `instance` as
/// its attachments. Every upload is checked before any is used, so a wrong
/// id leaves the others staged for another try.
pub(super) fn attach_at_create(
    media: &MediaStore,
    instance: &mut ConversationRecord,
    wanted: Vec<NewAttachment>,
) -> Result<(), EngineError> {
    if wanted.len() > limits::MAX_ATTACHMENTS {
        return Err(EngineError::Invalid(format!(
            "at most {} files per conversation (got {})",
            limits::MAX_ATTACHMENTS,
            wanted.len()
        )));
    }
    for (n, file) in wanted.iter().enumerate() {
        if wanted[..n].iter().any(|earlier| earlier.upload_id == file.upload_id) {
            return Err(EngineError::Invalid(format!("the file {} is given twice", file.upload_id)));
        }
        if !media.has_upload(file.upload_id) {
            return Err(no_upload(file.upload_id));
        }
    }
    for file in wanted {
        let bytes = media.take_upload(file.upload_id)?.ok_or_else(|| no_upload(file.upload_id))?;
        let attachment = store(media, instance, &bytes, file.name.as_deref())?;
        instance.attachments.push(attachment);
    }
    Ok(())
}

/// Why the upload `id` cannot be used, in the caller's words.
pub(crate) fn no_upload(id: Uuid) -> EngineError {
    EngineError::Missing(format!(
        "relay has no file {id}: it was never given (POST /media), was used already, or waited more than an hour; \
         give the file again"
    ))
}

/// Stores `bytes` as `instance`'s next attachment (not yet added to it):
/// its file written, durably, before anything names it.
pub(super) fn store(
    media: &MediaStore,
    instance: &ConversationRecord,
    bytes: &[u8],
    name: Option<&str>,
) -> Result<Attachment, EngineError> {
    let n = instance.attachments.len() as u32 + 1;
    let ty = sniff::sniff(bytes);
    let file = names::attachment_file(n, ty);
    let stored = media.write(instance.id, &file, bytes)?;
    let id = names::attachment_id(n);
    // The operator's name, one line; otherwise relay's (`a1.pdf`).
    let name = name.and_then(names::display_name).unwrap_or_else(|| format!("{id}.{}", ty.ext));
    Ok(Attachment {
        id,
        name,
        kind: kind_of(ty),
        mime: ty.mime.to_string(),
        bytes: stored.bytes,
        sha256: stored.sha256,
        path: stored.rel_path.to_string_lossy().into_owned(),
    })
}

/// How a file goes out: JPEG and PNG as a photo (what WhatsApp shows as an
/// image everywhere), anything else as a document.
pub fn kind_of(ty: sniff::FileType) -> MediaKind {
    if ty == sniff::JPEG || ty == sniff::PNG { MediaKind::Photo } else { MediaKind::Document }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::HeartbeatConfig;
    use crate::home::Home;

    fn instance() -> ConversationRecord {
        ConversationRecord::new("o".into(), "+56912345678".into(), Vec::new(), HeartbeatConfig::default())
    }

    #[test]
    fn uploads_become_attachments_under_relays_names() {
        let dir = tempfile::tempdir().unwrap();
        let media = MediaStore::open(&Home::at(dir.path()));
        let (pdf, _) = media.stage_upload(b"%PDF-1.4\n1 0 obj\n").unwrap();
        let png = [&b"\x89PNG\r\n\x1a\n"[..], &[0; 16]].concat();
        let (photo, _) = media.stage_upload(&png).unwrap();
        let mut i = instance();
        let wanted = vec![
            NewAttachment { upload_id: pdf, name: Some("Factura\nmarzo.pdf".into()) },
            NewAttachment { upload_id: photo, name: None },
        ];
        attach_at_create(&media, &mut i, wanted).unwrap();
        let [a1, a2] = &i.attachments[..] else { panic!("{:?}", i.attachments) };
        assert_eq!((a1.id.as_str(), a1.name.as_str(), a1.kind), ("a1", "Facturamarzo.pdf", MediaKind::Document));
        assert_eq!(a1.path, format!("media/{}/att-a1.pdf", i.id));
        assert_eq!((a2.name.as_str(), a2.kind, a2.mime.as_str()), ("a2.png", MediaKind::Photo, "image/png"));
        assert_eq!(media.read(std::path::Path::new(&a2.path)).unwrap(), png);
        assert_eq!(crate::media::label::attachment(a1), "a1: Facturamarzo.pdf (PDF, 17 bytes)");
        // Used once.
        let again = attach_at_create(&media, &mut instance(), vec![NewAttachment { upload_id: pdf, name: None }]);
        assert!(again.unwrap_err().to_string().contains("was used already"));
    }

    #[test]
    fn a_wrong_upload_uses_none_of_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let media = MediaStore::open(&Home::at(dir.path()));
        let (good, _) = media.stage_upload(b"hello").unwrap();
        let wanted = vec![
            NewAttachment { upload_id: good, name: None },
            NewAttachment { upload_id: Uuid::new_v4(), name: None },
        ];
        let refused = attach_at_create(&media, &mut instance(), wanted).unwrap_err();
        assert!(refused.to_string().starts_with("relay has no file "), "{refused}");
        assert!(media.has_upload(good));
        let twice = vec![NewAttachment { upload_id: good, name: None }, NewAttachment { upload_id: good, name: None }];
        assert!(attach_at_create(&media, &mut instance(), twice).unwrap_err().to_string().contains("given twice"));
        let many = (0..11).map(|_| NewAttachment { upload_id: good, name: None }).collect();
        assert!(attach_at_create(&media, &mut instance(), many).unwrap_err().to_string().contains("at most 10 files"));
    }
}
