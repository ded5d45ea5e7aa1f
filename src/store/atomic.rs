//! Crash-safe file replacement: write a temp file beside the target, fsync
//! it, rename it over the target, fsync the folder. A reader (or a daemon
//! killed at any instant) sees the old file or the new one, never a mix.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Temp files end with this; a crash can leave one behind, and loading
/// ignores (and removes) them.
pub const TEMP_SUFFIX: &str = ".tmp";

pub fn replace(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("file has no parent folder"))?;
    let name = path.file_name().ok_or_else(|| io::Error::other("path has no file name"))?;
    let temp = dir.join(format!("{}{TEMP_SUFFIX}", name.to_string_lossy()));
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&temp, path)?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        // A full disk must not leave half a temp file lying around.
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Appends one line with a single write and makes it durable.
pub fn append_line(path: &Path, line: &[u8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line);
    buf.push(b'\n');
    let existed = path.exists();
    let mut file = OpenOptions::new().append(true).create(true).mode(0o600).open(path)?;
    file.write_all(&buf)?;
    file.sync_data()?;
    if !existed && let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_swaps_contents_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        replace(&path, b"one").unwrap();
        replace(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_replace_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        replace(&path, b"old").unwrap();
        // A directory where the temp file should go makes the write fail.
        fs::create_dir(dir.path().join("a.json.tmp")).unwrap();
        assert!(replace(&path, b"new").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"old");
    }

    #[test]
    fn append_line_adds_one_line_per_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        append_line(&path, b"{\"a\":1}").unwrap();
        append_line(&path, b"{\"a\":2}").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
    }
}
