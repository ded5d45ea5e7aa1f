//! The process-level calls relay makes to the operating system, in one
//! place: signals sent and their dispositions, the effective user, free
//! disk space, whether stdout's reader is gone, a child detached or tied to
//! its parent, and glibc's heap. Through rustix where it has a safe call;
//! the crate denies `unsafe` everywhere else.
//!
//! What is left `unsafe` here, and why: a signal's disposition is process
//! wide (rustix offers no safe way to set it), `pre_exec` runs between fork
//! and exec, and glibc's `mallopt`/`malloc_trim` have no safe binding. Each
//! says why it is sound where it is.
#![allow(unsafe_code)]

use std::io;
use std::path::Path;
use std::process::Command;

use rustix::process::{Pid, Signal};

/// The effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether process `pid` exists (signal 0 sends nothing).
pub fn process_exists(pid: u32) -> bool {
    to_pid(pid).is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
}

/// Asks process `pid` to stop (SIGTERM).
pub fn terminate(pid: u32) -> io::Result<()> {
    let pid = to_pid(pid).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a process id"))?;
    rustix::process::kill_process(pid, Signal::TERM).map_err(io::Error::from)
}

fn to_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// The bytes free to an unprivileged user on the file system of `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let stats = rustix::fs::statvfs(path)?;
    Ok(stats.f_bavail.saturating_mul(stats.f_frsize))
}

/// Whether whoever read stdout has gone (a closed pipe), found without
/// writing to it.
pub fn stdout_reader_gone() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    matches!(rustix::event::poll(&mut fds, Some(&now)), Ok(n) if n > 0)
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// Which way a signal is taken.
#[derive(Debug, Clone, Copy)]
pub enum Disposition {
    /// The signal's default action (SIGPIPE: end the process quietly).
    Default,
    /// Ignored: the call that would have raised it fails instead.
    Ignore,
}

/// Sets how `signal` is taken, for the whole process. Call it before other
/// threads start, as every caller here does (a disposition is process-wide,
/// and the one it replaces is not read back).
pub fn set_disposition(signal: libc::c_int, disposition: Disposition) {
    let action = match disposition {
        Disposition::Default => libc::SIG_DFL,
        Disposition::Ignore => libc::SIG_IGN,
    };
    // SAFETY: SIG_DFL and SIG_IGN install no handler code, so nothing can
    // run in signal context; the previous disposition is dropped.
    unsafe { libc::signal(signal, action) };
}

/// Ends the process as `signal` would have (a shell and a pipeline see what
/// they expect: quiet for a closed pipe, "interrupted" for Ctrl-C).
pub fn die_of(signal: libc::c_int) -> ! {
    set_disposition(signal, Disposition::Default);
    if let Some(signal) = Signal::from_named_raw(signal) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), signal);
    }
    // A signal that does not end the process (or none): still end it.
    std::process::exit(128 + signal)
}

/// The child `command` starts leaves this process's session: closing the
/// terminal (or Ctrl-C in it) does not stop it. For `relay start`.
pub fn detach(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec, and only
    // calls setsid, which is async-signal-safe and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            let _ = rustix::process::setsid();
            Ok(())
        });
    }
}

/// The child `command` starts gets SIGTERM if this process dies without
/// stopping it (SIGKILL included): a trial's daemon is never left running
/// on its own. Linux only; elsewhere nothing.
pub fn stop_with_parent(command: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs in the child between fork and exec, and only
    // calls prctl, which is async-signal-safe and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
            Ok(())
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// Two malloc arenas instead of one per thread: see `daemon::memory`.
/// Call before any thread starts.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: a plain setting of glibc's malloc, made before threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Hands the heap's free pages back to the kernel (glibc only).
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calls_answer_for_this_process() {
        assert!(process_exists(std::process::id()));
        assert!(!process_exists(u32::MAX), "not a pid at all");
        assert!(terminate(u32::MAX).is_err());
        let file = std::env::temp_dir();
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(&file).unwrap().uid();
        // The temp folder is this user's, or root's (sticky /tmp).
        assert!(owner == effective_uid() || owner == 0);
        assert!(free_bytes(&file).unwrap() > 0);
        assert!(free_bytes(Path::new("/no/such/place")).is_err());
    }
}
