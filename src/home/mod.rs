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
        let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf()).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, "cannot find your home directory: set RELAY_HOME")
        })?;
        Ok(Home::at(home.join(".relay-agent")))
    }

    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the home and its folders, owner-only (0700).
    pub fn create(&self) -> io::Result<()> {
        for dir in [self.root.clone(), self.instances_dir(), self.transcripts_dir(), self.templates_dir()] {
            DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
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
    /// Every change as a numbered event (see `engine::events`).
    pub fn events_file(&self) -> PathBuf {
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
        let me = unsafe { libc::geteuid() };
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
    /// reports them without changing anything.
    pub fn loose(&self) -> Vec<(PathBuf, u32)> {
        let auth = self.whatsapp_auth_dir();
        let mut wanted = vec![
            (self.root.clone(), 0o700),
            (self.instances_dir(), 0o700),
            (self.transcripts_dir(), 0o700),
            (auth.clone(), 0o700),
            (self.templates_dir(), 0o700),
            (self.config_file(), 0o600),
            (self.webhooks_file(), 0o600),
        ];
        if let Ok(entries) = fs::read_dir(&auth) {
            wanted.extend(entries.flatten().map(|e| (e.path(), 0o600)));
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
