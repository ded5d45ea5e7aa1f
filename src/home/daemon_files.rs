//! The daemon's footprint in the home: the lock it holds for its whole life
//! (one daemon per home), its pid file, and the API token file.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::OpenOptionsExt;

use crate::home::{self, Home};

/// Held while the daemon runs; the OS releases it when the process dies, so
/// a crash can never leave a home locked.
pub struct DaemonLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another relay daemon is already running on {0}")]
    Held(String),
    #[error("cannot open the daemon lock {path}: {source}")]
    Io { path: String, source: io::Error },
}

pub fn lock(home: &Home) -> Result<DaemonLock, LockError> {
    let path = home.lock_file();
    let io_error = |source| LockError::Io { path: path.display().to_string(), source };
    let file = OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&path).map_err(io_error)?;
    // `is_locked` probes by taking the lock for an instant: retry briefly so
    // a `relay status` at the wrong moment does not stop a daemon starting.
    for _ in 0..20 {
        match file.try_lock() {
            Ok(()) => return Ok(DaemonLock { _file: file }),
            Err(TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(5)),
            Err(TryLockError::Error(e)) => return Err(io_error(e)),
        }
    }
    Err(LockError::Held(home.root().display().to_string()))
}

/// Whether a daemon (or `relay init`, linking) holds this home's lock.
#[derive(Debug)]
pub enum LockState {
    Free,
    Held,
    /// The lock file exists but cannot be opened: nobody can tell.
    Unknown(io::Error),
}

/// Probes the lock by taking it for an instant. The file is opened
/// read-only: flock needs no write access, so a home this user cannot write
/// (read-only files or mount) still answers truly.
pub fn lock_state(home: &Home) -> LockState {
    let file = match File::open(home.lock_file()) {
        Ok(file) => file,
        // No lock file: no daemon has ever run here.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return LockState::Free,
        Err(e) => return LockState::Unknown(e),
    };
    match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            LockState::Free
        }
        Err(TryLockError::WouldBlock) => LockState::Held,
        Err(TryLockError::Error(e)) => LockState::Unknown(e),
    }
}

/// Whether a daemon holds this home's lock right now (unknown counts as no).
pub fn is_locked(home: &Home) -> bool {
    matches!(lock_state(home), LockState::Held)
}

/// The process holding this home's lock, from the kernel's table of locks
/// (`/proc/locks`): its pid and command line. None if it cannot be told.
pub fn lock_holder(home: &Home) -> Option<(u32, String)> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(home.lock_file()).ok()?;
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let locks = fs::read_to_string("/proc/locks").ok()?;
    // "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF": device in hex, inode in decimal.
    let pid = locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (pid, file) = (fields.get(4)?, fields.get(5)?);
        let mut parts = file.split(':');
        let dev_major = u32::from_str_radix(parts.next()?, 16).ok()?;
        let dev_minor = u32::from_str_radix(parts.next()?, 16).ok()?;
        let inode: u64 = parts.next()?.parse().ok()?;
        let same = dev_major == major && dev_minor == minor && inode == meta.ino();
        same.then(|| pid.parse::<u32>().ok()).flatten()
    })?;
    let command = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            let words: Vec<String> = raw
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words.join(" ")
        })
        .unwrap_or_default();
    Some((pid, command))
}

pub fn write_pid(home: &Home) -> io::Result<()> {
    home::write_private(&home.pid_file(), format!("{}\n", std::process::id()).as_bytes())
}

/// Whether process `pid` still runs (a zombie nobody reaped counts as gone).
pub fn process_running(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        // No /proc: ask the kernel (signal 0 sends nothing).
        Err(_) => crate::sys::process_exists(pid),
    }
}

pub fn read_pid(home: &Home) -> Option<u32> {
    fs::read_to_string(home.pid_file()).ok()?.trim().parse().ok()
}

/// The port the running daemon listens on, for clients started without --port.
pub fn write_port(home: &Home, port: u16) -> io::Result<()> {
    home::write_private(&home.port_file(), format!("{port}\n").as_bytes())
}

pub fn read_port(home: &Home) -> Option<u16> {
    fs::read_to_string(home.port_file()).ok()?.trim().parse().ok()
}

/// A fresh random bearer token, written owner-only.
pub fn write_token(home: &Home) -> io::Result<String> {
    let token = format!("relay_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    home::write_private(&home.token_file(), token.as_bytes())?;
    Ok(token)
}

pub fn read_token(home: &Home) -> Option<String> {
    fs::read_to_string(home.token_file()).ok().map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

/// Removes what only a running daemon should leave behind.
pub fn clean_up(home: &Home) {
    let _ = fs::remove_file(home.pid_file());
    let _ = fs::remove_file(home.port_file());
    let _ = fs::remove_file(home.token_file());
}
