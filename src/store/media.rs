//! Media files in the home: `media/<instance-id>/<name>`, one per photo,
//! voice note or document, written owner-only (0600, folders 0700) and
//! crash-safely by [`atomic::replace`] before the transcript line that
//! points at them.
//!
//! The names are relay's own (a message's uuid and an extension, an
//! attachment id), never a contact's: a name that is not one plain file
//! name is refused, so no path ever leaves its conversation's folder.
//! Transcripts keep the path relative to the home ([`StoredFile::rel_path`]),
//! and reading one back checks its shape again: a transcript line edited by
//! hand cannot point relay at `config.json`.

use std::collections::HashSet;
use std::fs::{self, DirBuilder};
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{StoreError, atomic, read_error, write_error};
use crate::home::Home;

/// The folder under the home, and the first part of every stored path.
pub const MEDIA_DIR: &str = "media";

/// Where files given over the API wait to be used (`POST /media`).
pub const UPLOADS_DIR: &str = "uploads";

/// The longest name relay gives a file (a uuid and an extension is 40).
pub const MAX_NAME_LEN: usize = 100;

/// One file as stored: where (relative to the home), how big, and its
/// SHA-256 in lower-case hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// `media/<instance-id>/<name>`.
    pub rel_path: PathBuf,
    pub bytes: u64,
    pub sha256: String,
}

/// The conversations' media files (see the module's doc).
#[derive(Debug, Clone)]
pub struct MediaStore {
    /// The home's root: stored paths are relative to it.
    root: PathBuf,
}

impl MediaStore {
    /// The media files of `home`. Nothing is created until a file is written.
    pub fn open(home: &Home) -> MediaStore {
        MediaStore { root: home.root().to_path_buf() }
    }

    fn dir(&self) -> PathBuf {
        self.root.join(MEDIA_DIR)
    }

    /// Writes `contents` as `media/<instance>/<name>`, replacing a file of
    /// that name, durable once this returns. `name` must be a plain file
    /// name ([`name_problem`]); anything else is refused and nothing written.
    pub fn write(&self, instance: Uuid, name: &str, contents: &[u8]) -> Result<StoredFile, StoreError> {
        if let Some(problem) = name_problem(name) {
            return Err(StoreError::BadName { name: name.to_string(), problem });
        }
        let folder = self.dir().join(instance.to_string());
        let created = private_dirs(&[self.dir(), folder.clone()]).map_err(|source| write_error(&folder, source))?;
        if created {
            // The new folder's own entry must be on disk before the file is.
            atomic::sync_parent(&folder).map_err(|source| write_error(&folder, source))?;
        }
        let path = folder.join(name);
        atomic::replace(&path, contents).map_err(|source| write_error(&path, source))?;
        Ok(StoredFile {
            rel_path: Path::new(MEDIA_DIR).join(instance.to_string()).join(name),
            bytes: contents.len() as u64,
            sha256: sha256_hex(contents),
        })
    }

    /// Where the file a transcript names as `rel_path` is, if `rel_path` is
    /// one relay could have written (`media/<uuid>/<plain name>`).
    pub fn full_path(&self, rel_path: &Path) -> Result<PathBuf, StoreError> {
        let parts: Vec<Component> = rel_path.components().collect();
        let shaped = match parts.as_slice() {
            [Component::Normal(media), Component::Normal(id), Component::Normal(name)] => {
                *media == MEDIA_DIR
                    && id.to_str().and_then(|id| Uuid::parse_str(id).ok()).is_some()
                    && name.to_str().is_some_and(|name| name_problem(name).is_none())
            }
            _ => false,
        };
        match shaped {
            true => Ok(self.root.join(rel_path)),
            false => Err(StoreError::BadName {
                name: rel_path.display().to_string(),
                problem: "is not a path relay stores media at (media/<conversation id>/<file name>)".into(),
            }),
        }
    }

    /// The stored file's bytes. A symbolic link in its place is not followed.
    pub fn read(&self, rel_path: &Path) -> Result<Vec<u8>, StoreError> {
        let path = self.full_path(rel_path)?;
        let mut file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|source| read_error(&path, source))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|source| read_error(&path, source))?;
        Ok(bytes)
    }

    /// Removes a stored file, durably. One already gone is not an error (a
    /// removal cut short by a crash is simply done again).
    pub fn remove(&self, rel_path: &Path) -> Result<(), StoreError> {
        let path = self.full_path(rel_path)?;
        match fs::remove_file(&path) {
            Ok(()) => atomic::sync_parent(&path).map_err(|source| write_error(&path, source)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(write_error(&path, source)),
        }
    }

    /// Keeps `contents` (a file given to relay over the API, `POST /media`)
    /// until a request uses it: `media/uploads/<id>`, owner-only, durable
    /// once this returns. Returns its id and what it is.
    pub fn stage_upload(&self, contents: &[u8]) -> Result<(Uuid, StoredFile), StoreError> {
        let id = Uuid::new_v4();
        let folder = self.dir().join(UPLOADS_DIR);
        let created = private_dirs(&[self.dir(), folder.clone()]).map_err(|source| write_error(&folder, source))?;
        if created {
            atomic::sync_parent(&folder).map_err(|source| write_error(&folder, source))?;
        }
        let path = folder.join(id.to_string());
        atomic::replace(&path, contents).map_err(|source| write_error(&path, source))?;
        let rel_path = Path::new(MEDIA_DIR).join(UPLOADS_DIR).join(id.to_string());
        Ok((id, StoredFile { rel_path, bytes: contents.len() as u64, sha256: sha256_hex(contents) }))
    }

    /// Whether upload `id` is staged (not used, not expired).
    pub fn has_upload(&self, id: Uuid) -> bool {
        let path = self.dir().join(UPLOADS_DIR).join(id.to_string());
        fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
    }

    /// The SHA-256 of staged upload `id`, hex, without using it; `None`
    /// when there is no such upload.
    pub fn upload_sha256(&self, id: Uuid) -> Result<Option<String>, StoreError> {
        let path = self.dir().join(UPLOADS_DIR).join(id.to_string());
        match fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path) {
            Ok(mut file) => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).map_err(|source| read_error(&path, source))?;
                Ok(Some(sha256_hex(&bytes)))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(read_error(&path, source)),
        }
    }

    /// The staged upload `id`'s bytes, removed from the stage: an upload is
    /// used once. `None` when there is no such upload (never staged, used,
    /// or expired).
    pub fn take_upload(&self, id: Uuid) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.dir().join(UPLOADS_DIR).join(id.to_string());
        let bytes = match fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path) {
            Ok(mut file) => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).map_err(|source| read_error(&path, source))?;
                bytes
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(read_error(&path, source)),
        };
        fs::remove_file(&path).map_err(|source| write_error(&path, source))?;
        atomic::sync_parent(&path).map_err(|source| write_error(&path, source))?;
        Ok(Some(bytes))
    }

    /// Removes staged uploads older than `age` (never used); returns how many.
    pub fn expire_uploads(&self, age: std::time::Duration) -> Result<usize, StoreError> {
        let folder = self.dir().join(UPLOADS_DIR);
        let entries = match fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(source) => return Err(read_error(&folder, source)),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry.map_err(|source| read_error(&folder, source))?;
            let old = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
            if old.is_some_and(|old| old > age) {
                let path = entry.path();
                fs::remove_file(&path).map_err(|source| write_error(&path, source))?;
                removed += 1;
            }
        }
        if removed > 0 {
            atomic::sync_dir(&folder).map_err(|source| write_error(&folder, source))?;
        }
        Ok(removed)
    }

    /// Removes, from every conversation's folder, the files no transcript
    /// points to (`referenced` holds the `rel_path`s that transcripts name)
    /// and temp files a crash left; then the folders left empty. Returns
    /// the paths removed, relative to the home. Other entries of `media/`
    /// (`uploads/`) are not conversations' and are left alone.
    ///
    /// Only at start, before any file is written: a file being written, or
    /// written and not yet named by its transcript line, looks the same.
    pub fn sweep_orphans(&self, referenced: &HashSet<PathBuf>) -> Result<Vec<PathBuf>, StoreError> {
        let media = self.dir();
        let folders = match fs::read_dir(&media) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(read_error(&media, source)),
        };
        let mut removed = Vec::new();
        for folder in folders {
            let folder = folder.map_err(|source| read_error(&media, source))?;
            let id = folder.file_name();
            let is_dir = folder.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir || id.to_str().and_then(|id| Uuid::parse_str(id).ok()).is_none() {
                continue;
            }
            let dir = folder.path();
            let mut left = 0;
            let mut removed_here = false;
            for entry in fs::read_dir(&dir).map_err(|source| read_error(&dir, source))? {
                let entry = entry.map_err(|source| read_error(&dir, source))?;
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    left += 1;
                    continue;
                }
                let rel_path = Path::new(MEDIA_DIR).join(&id).join(entry.file_name());
                if referenced.contains(&rel_path) {
                    left += 1;
                    continue;
                }
                let path = entry.path();
                fs::remove_file(&path).map_err(|source| write_error(&path, source))?;
                removed_here = true;
                removed.push(rel_path);
            }
            if removed_here {
                atomic::sync_dir(&dir).map_err(|source| write_error(&dir, source))?;
            }
            if left == 0 && fs::remove_dir(&dir).is_ok() {
                atomic::sync_parent(&dir).map_err(|source| write_error(&dir, source))?;
            }
        }
        Ok(removed)
    }
}

/// What is wrong with `name` as the name of a stored file, if anything. It
/// must be one plain name of ASCII letters, digits, `-`, `_` and `.`: no
/// separator, no `..`, not hidden, not a temp file's ([`atomic::TEMP_SUFFIX`],
/// which [`MediaStore::sweep_orphans`] removes), at most [`MAX_NAME_LEN`].
pub fn name_problem(name: &str) -> Option<String> {
    let problem = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_NAME_LEN {
        "is too long"
    } else if name.contains(['/', '\\']) {
        "has a path separator"
    } else if name.contains("..") {
        "has \"..\""
    } else if name.starts_with('.') {
        "starts with \".\""
    } else if name.ends_with(atomic::TEMP_SUFFIX) {
        "ends like a temp file"
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        "has a character other than letters, digits, \"-\", \"_\" and \".\""
    } else {
        return None;
    };
    Some(problem.into())
}

/// The SHA-256 of `bytes` in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates each folder that is missing, owner-only; says whether any was.
fn private_dirs(dirs: &[PathBuf]) -> io::Result<bool> {
    let mut created = false;
    for dir in dirs {
        if dir.is_dir() {
            continue;
        }
        DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        created = true;
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn store() -> (tempfile::TempDir, MediaStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::open(&Home::at(dir.path()));
        (dir, store)
    }

    #[test]
    fn an_upload_is_kept_owner_only_and_used_once() {
        let (dir, store) = store();
        let (id, file) = store.stage_upload(b"invoice bytes").unwrap();
        let path = dir.path().join(&file.rel_path);
        assert_eq!((mode(&path), mode(path.parent().unwrap())), (0o600, 0o700));
        assert_eq!((file.bytes, file.sha256.as_str()), (13, sha256_hex(b"invoice bytes").as_str()));
        assert_eq!(store.take_upload(id).unwrap().as_deref(), Some(&b"invoice bytes"[..]));
        assert_eq!(store.take_upload(id).unwrap(), None, "used once");
        assert_eq!(store.take_upload(Uuid::new_v4()).unwrap(), None);
        let hour = std::time::Duration::from_secs(3600);
        let (_, fresh) = store.stage_upload(b"x").unwrap();
        let (_, stale) = store.stage_upload(b"y").unwrap();
        let two_hours_ago = std::time::SystemTime::now() - 2 * hour;
        fs::File::options()
            .write(true)
            .open(dir.path().join(&stale.rel_path))
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        assert_eq!(store.expire_uploads(hour).unwrap(), 1);
        assert!(dir.path().join(&fresh.rel_path).exists() && !dir.path().join(&stale.rel_path).exists());
        assert!(store.sweep_orphans(&HashSet::new()).unwrap().is_empty(), "uploads are no conversation's");
    }

    #[test]
    fn a_file_is_stored_owner_only_with_its_size_and_sha256() {
        let (home, store) = store();
        let id = Uuid::new_v4();
        let stored = store.write(id, "3f1c.jpg", b"abc").unwrap();
        assert_eq!(stored.rel_path, Path::new("media").join(id.to_string()).join("3f1c.jpg"));
        assert_eq!(stored.bytes, 3);
        // FIPS 180-2's example: SHA-256("abc").
        assert_eq!(stored.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let path = home.path().join(&stored.rel_path);
        assert_eq!(fs::read(&path).unwrap(), b"abc");
        assert_eq!(
            (mode(&path), mode(path.parent().unwrap()), mode(&home.path().join("media"))),
            (0o600, 0o700, 0o700)
        );
        assert_eq!(store.read(&stored.rel_path).unwrap(), b"abc");
        let empty = store.write(id, "empty.bin", b"").unwrap();
        assert_eq!((empty.bytes, empty.sha256.as_str()), (0, sha256_hex(b"").as_str()));
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn a_name_with_a_separator_or_dots_is_refused_and_nothing_is_written() {
        let (home, store) = store();
        let id = Uuid::new_v4();
        for name in ["../config.json", "a/b.jpg", "..", ".", "", "a..b", "x\\y", ".hidden", "f.jpg.tmp", "é.jpg"] {
            let refused = store.write(id, name, b"x").unwrap_err();
            assert!(matches!(refused, StoreError::BadName { .. }), "{name:?}: {refused}");
        }
        assert!(!home.path().join("media").exists());
        assert!(!home.path().join("config.json").exists());
    }

    #[test]
    fn only_paths_relay_stores_at_are_read_or_removed() {
        let (home, store) = store();
        fs::write(home.path().join("config.json"), b"{}").unwrap();
        let id = Uuid::new_v4();
        for wrong in [
            "config.json".to_string(),
            format!("media/{id}/../../config.json"),
            "/etc/passwd".to_string(),
            "media/not-a-uuid/a.jpg".to_string(),
            format!("media/{id}"),
            format!("transcripts/{id}/a.jpg"),
            format!("media/{id}/a.jpg/b"),
        ] {
            assert!(matches!(store.read(Path::new(&wrong)), Err(StoreError::BadName { .. })), "{wrong}");
            assert!(matches!(store.remove(Path::new(&wrong)), Err(StoreError::BadName { .. })), "{wrong}");
        }
        assert!(home.path().join("config.json").exists());
    }

    #[test]
    fn a_symlink_in_a_files_place_is_not_followed() {
        let (home, store) = store();
        let id = Uuid::new_v4();
        let stored = store.write(id, "a.jpg", b"photo").unwrap();
        fs::write(home.path().join("config.json"), b"{\"secret\": 1}").unwrap();
        let path = home.path().join(&stored.rel_path);
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(home.path().join("config.json"), &path).unwrap();
        assert!(matches!(store.read(&stored.rel_path), Err(StoreError::Read { .. })));
    }

    #[test]
    fn a_removed_file_is_gone_and_removing_it_again_is_no_error() {
        let (home, store) = store();
        let stored = store.write(Uuid::new_v4(), "a.ogg", b"voice").unwrap();
        store.remove(&stored.rel_path).unwrap();
        assert!(!home.path().join(&stored.rel_path).exists());
        store.remove(&stored.rel_path).unwrap();
        assert!(matches!(store.read(&stored.rel_path), Err(StoreError::Read { .. })));
    }

    /// After a crash: a temp file left mid-write and a file whose transcript
    /// line never got written are removed; what transcripts name, the
    /// staged uploads and anything not a conversation's folder stay.
    #[test]
    fn the_sweep_removes_orphans_and_temp_files_a_crash_left() {
        let (home, store) = store();
        let (kept, gone) = (Uuid::new_v4(), Uuid::new_v4());
        let named = store.write(kept, "m1.jpg", b"named").unwrap();
        let orphan = store.write(kept, "m2.jpg", b"no line points here").unwrap();
        let alone = store.write(gone, "m3.pdf", b"orphan").unwrap();
        // A crash between the temp file's write and its rename.
        let temp = home.path().join("media").join(kept.to_string()).join("m4.ogg.tmp");
        fs::write(&temp, b"half").unwrap();
        let uploads = home.path().join("media/uploads");
        fs::create_dir_all(&uploads).unwrap();
        fs::write(uploads.join(Uuid::new_v4().to_string()), b"staged").unwrap();

        let referenced = HashSet::from([named.rel_path.clone()]);
        let mut removed = store.sweep_orphans(&referenced).unwrap();
        removed.sort();
        let mut expected =
            vec![orphan.rel_path, alone.rel_path, Path::new("media").join(kept.to_string()).join("m4.ogg.tmp")];
        expected.sort();
        assert_eq!(removed, expected);
        assert_eq!(store.read(&named.rel_path).unwrap(), b"named");
        assert!(!temp.exists());
        assert!(!home.path().join("media").join(gone.to_string()).exists(), "an emptied folder goes too");
        assert_eq!(fs::read_dir(&uploads).unwrap().count(), 1);
        assert_eq!(store.sweep_orphans(&referenced).unwrap(), Vec::<PathBuf>::new());
    }

    #[test]
    fn a_home_without_media_sweeps_nothing() {
        let (_home, store) = store();
        assert!(store.sweep_orphans(&HashSet::new()).unwrap().is_empty());
    }

    proptest::proptest! {
        /// Any name is either refused, writing nothing, or lands directly in
        /// its conversation's folder and reads back; a name with a separator
        /// or ".." is always refused.
        #[test]
        fn a_name_never_leads_out_of_its_folder(
            name in proptest::prop_oneof![
                "[a-zA-Z0-9._-]{1,12}",
                "[a-z.]{0,4}(/|\\.\\.|\\\\)[a-z./]{0,6}",
                proptest::string::string_regex(".{0,8}").unwrap(),
            ]
        ) {
            let (home, store) = store();
            let id = Uuid::new_v4();
            let folder = home.path().join("media").join(id.to_string());
            match store.write(id, &name, b"x") {
                Ok(stored) => {
                    proptest::prop_assert!(name_problem(&name).is_none());
                    proptest::prop_assert!(!name.contains('/') && !name.contains(".."), "{:?}", name);
                    let path = home.path().join(&stored.rel_path);
                    proptest::prop_assert_eq!(path.parent(), Some(folder.as_path()));
                    proptest::prop_assert_eq!(fs::read_dir(&folder).unwrap().count(), 1);
                    proptest::prop_assert_eq!(store.read(&stored.rel_path).unwrap(), b"x".to_vec());
                }
                Err(refused) => {
                    proptest::prop_assert!(matches!(refused, StoreError::BadName { .. }), "{}", refused);
                    proptest::prop_assert!(!home.path().join("media").exists());
                }
            }
            if name.contains('/') || name.contains("..") {
                proptest::prop_assert!(name_problem(&name).is_some());
            }
        }
    }
}
