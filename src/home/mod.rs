//! The relay home (`RELAY_HOME`, default `~/.relay-agent`): where every file
//! relay keeps lives. `.relay-agent.example/` in the repository shows each one.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub mod daemon_files;

#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// `RELAY_HOME` if set, else `~/.relay-agent`.
    pub fn from_env() -> io::Result<Home> {
        if let Some(dir) = std::env::var_os("RELAY_HOME").filter(|v| !v.is_empty()) {
            return Ok(Home::at(PathBuf::from(dir)));
        }
        Ok(Home::at(Home::default_root()?))
    }

    /// `~/.relay-agent`: the home when `RELAY_HOME` is not set.
    pub fn default_root() -> io::Result<PathBuf> {
        let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf()).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, "cannot find your home directory: set RELAY_HOME")
        })?;
        Ok(home.join(".relay-agent"))
    }

    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the home and its folders, owner-only (0700).
    pub fn create(&self) -> io::Result<()> {
        for dir in std::iter::once(self.root.clone()).chain(self.folders()) {
            DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }

    /// The folders [`Home::create`] makes in the home.
    pub fn folders(&self) -> [PathBuf; 4] {
        [self.instances_dir(), self.transcripts_dir(), self.templates_dir(), self.media_dir()]
    }

    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.json")
    }
    pub fn instances_dir(&self) -> PathBuf {
        self.root.join("instances")
    }
    pub fn transcripts_dir(&self) -> PathBuf {
        self.root.join("transcripts")
    }
    /// Photos, voice notes and files: `media/<instance-id>/<name>` (see
    /// `store::MediaStore`).
    pub fn media_dir(&self) -> PathBuf {
        self.root.join("media")
    }
    /// A line for each ended conversation, so they need not all be read
    /// at start nor kept in memory (see `store::ended`).
    pub fn ended_file(&self) -> PathBuf {
        self.root.join("ended.jsonl")
    }
    pub fn unrouted_file(&self) -> PathBuf {
        self.root.join("unrouted.jsonl")
    }
    /// The idempotency keys of recent creates and sends.
    pub fn idempotency_file(&self) -> PathBuf {
        self.root.join("idempotency.jsonl")
    }
    /// The channel's ids of recently sent messages, so receipts find them
    /// (see `engine::delivery`).
    pub fn sent_ids_file(&self) -> PathBuf {
        self.root.join("sent-ids.jsonl")
    }
    /// The numbers relay does not write to (see `courtesy`).
    pub fn do_not_contact_file(&self) -> PathBuf {
        self.root.join("do-not-contact.json")
    }
    /// Numbers relay has exchanged messages with, WhatsApp's reach-out lock
    /// and the day's first contacts (see `courtesy::first_contact`).
    pub fn first_contact_file(&self) -> PathBuf {
        self.root.join("first-contact.json")
    }
    /// Every change as a numbered event, in a file a day (see `engine::events`).
    pub fn events_dir(&self) -> PathBuf {
        self.root.join("events")
    }
    /// The event log of versions before `events/`, moved there at start.
    pub fn legacy_events_file(&self) -> PathBuf {
        self.root.join("events.jsonl")
    }
    /// Registered webhooks and how far each has got.
    pub fn webhooks_file(&self) -> PathBuf {
        self.root.join("webhooks.json")
    }
    /// `relay template add`: one readable JSON file per template.
    pub fn templates_dir(&self) -> PathBuf {
        self.root.join("templates")
    }
    /// Present only while no daemon runs, after one stopped with every send
    /// settled (see `Store::settle_interrupted_sends`).
    pub fn clean_shutdown_file(&self) -> PathBuf {
        self.root.join("clean-shutdown")
    }

    /// The WhatsApp session (identity keys): owner-only.
    pub fn whatsapp_auth_dir(&self) -> PathBuf {
        self.root.join("whatsapp-auth")
    }

    /// The ids of the last WhatsApp messages taken from contacts, so one
    /// delivered again is taken once (see `channel::whatsapp::seen`).
    pub fn whatsapp_inbound_ids_file(&self) -> PathBuf {
        self.root.join("whatsapp-inbound-ids.jsonl")
    }

    /// The WhatsApp messages kept for the engine before WhatsApp forgets
    /// them (see `channel::whatsapp::inbox`).
    pub fn whatsapp_inbox_file(&self) -> PathBuf {
        self.root.join("whatsapp-inbox.jsonl")
    }

    pub fn sandbox_outbox_file(&self) -> PathBuf {
        self.root.join("sandbox-outbox.jsonl")
    }
    /// The sandbox's simulated phones: which are offline, what they hold.
    pub fn sandbox_phones_file(&self) -> PathBuf {
        self.root.join("sandbox-phones.json")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.root.join("daemon.pid")
    }
    /// The port of the running daemon.
    pub fn port_file(&self) -> PathBuf {
        self.root.join("daemon.port")
    }
    /// Held (flock) by the running daemon for its whole life.
    pub fn lock_file(&self) -> PathBuf {
        self.root.join("daemon.lock")
    }
    /// The bearer token of the local API, rewritten at every daemon start.
    pub fn token_file(&self) -> PathBuf {
        self.root.join("api-token")
    }
    pub fn log_file(&self) -> PathBuf {
        self.root.join("relay.log")
    }
    /// What the daemon printed before its log was open (start-up errors).
    pub fn daemon_stderr_file(&self) -> PathBuf {
        self.root.join("daemon.stderr")
    }
}

impl Home {
    /// Checked at every daemon start: the home must belong to the user
    /// running relay (else it is refused: someone else could plant a config
    /// pointing the agent anywhere). Its folders must be owner-only (0700),
    /// which protects every file in them, and the files holding secrets
    /// (config.json with model keys, the WhatsApp keys) 0600. Anything looser
    /// is tightened; the paths tightened are returned, to be logged.
    pub fn secure(&self) -> io::Result<Vec<PathBuf>> {
        use std::os::unix::fs::MetadataExt;
        let me = crate::sys::effective_uid();
        let owner = fs::metadata(&self.root)?.uid();
        if owner != me {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} belongs to another user (uid {owner}, you are {me}): relay only runs on a home of its own user",
                    self.root.display()
                ),
            ));
        }
        let mut tightened = Vec::new();
        for (path, mode) in self.loose() {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode))?;
            tightened.push(path);
        }
        Ok(tightened)
    }

    /// The paths [`Home::secure`] tightens, each with the mode it wants:
    /// those that exist, are not symlinks, and let others in. `relay doctor`
    /// reports them without changing anything. The contacts' media is
    /// covered file by file, like the WhatsApp keys: a photo of a meter or
    /// an invoice is the contact's, whatever the folder around it says.
    pub fn loose(&self) -> Vec<(PathBuf, u32)> {
        let auth = self.whatsapp_auth_dir();
        let media = self.media_dir();
        let mut wanted = vec![
            (self.root.clone(), 0o700),
            (self.instances_dir(), 0o700),
            (self.transcripts_dir(), 0o700),
            (auth.clone(), 0o700),
            (self.templates_dir(), 0o700),
            (media.clone(), 0o700),
            (self.config_file(), 0o600),
            (self.webhooks_file(), 0o600),
        ];
        if let Ok(entries) = fs::read_dir(&auth) {
            wanted.extend(entries.flatten().map(|e| (e.path(), 0o600)));
        }
        // media/<id>/<file> (and media/uploads/<file>): real folders only,
        // never through a link.
        let real = fs::symlink_metadata(&media).is_ok_and(|meta| meta.is_dir());
        let folders = fs::read_dir(&media).into_iter().flatten().flatten().filter(|_| real);
        for folder in folders.filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            let files = fs::read_dir(folder.path()).into_iter().flatten().flatten();
            wanted.extend(files.filter(|e| e.file_type().is_ok_and(|t| t.is_file())).map(|e| (e.path(), 0o600)));
            wanted.push((folder.path(), 0o700));
        }
        wanted.retain(|(path, _)| {
            fs::symlink_metadata(path)
                .is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0 && !meta.file_type().is_symlink())
        });
        wanted
    }
}

/// Writes a file only its owner can read (config with keys, the API token).
pub fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// `create` makes `media/` owner-only; a media folder or file others
    /// can read is what `relay doctor` names and `secure` tightens, the
    /// staged uploads too, and a link is never followed.
    #[test]
    fn media_folders_and_files_are_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        home.create().unwrap();
        assert_eq!(mode(&home.media_dir()), 0o700);
        assert!(home.loose().is_empty());

        let folder = home.media_dir().join(uuid::Uuid::new_v4().to_string());
        let uploads = home.media_dir().join("uploads");
        for dir in [&folder, &uploads] {
            fs::create_dir(dir).unwrap();
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let (photo, staged) = (folder.join("m1.jpg"), uploads.join("u1"));
        for file in [&photo, &staged] {
            fs::write(file, b"x").unwrap();
            fs::set_permissions(file, fs::Permissions::from_mode(0o644)).unwrap();
        }
        fs::set_permissions(home.media_dir(), fs::Permissions::from_mode(0o755)).unwrap();
        // Someone else's folder, linked in: not relay's to change.
        let elsewhere = tempfile::tempdir().unwrap();
        fs::write(elsewhere.path().join("theirs.jpg"), b"x").unwrap();
        fs::set_permissions(elsewhere.path().join("theirs.jpg"), fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), home.media_dir().join("linked")).unwrap();

        let mut loose = home.loose();
        loose.sort();
        let mut expected = vec![
            (home.media_dir(), 0o700),
            (folder.clone(), 0o700),
            (photo.clone(), 0o600),
            (uploads.clone(), 0o700),
            (staged.clone(), 0o600),
        ];
        expected.sort();
        assert_eq!(loose, expected);

        home.secure().unwrap();
        assert!(home.loose().is_empty());
        assert_eq!((mode(&folder), mode(&photo), mode(&uploads), mode(&staged)), (0o700, 0o600, 0o700, 0o600));
        assert_eq!(mode(&elsewhere.path().join("theirs.jpg")), 0o644);
    }
}
