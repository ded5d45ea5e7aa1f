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
    swap_in(path, contents, true)
}

/// [`replace`] without the fsyncs, for state a power cut may lose (a
/// simulation's): a reader, or a daemon killed at any instant, still sees
/// the old file or the new one; after a power cut it may be the old one, or
/// empty, so its reader must take a damaged file as none.
pub fn replace_unsynced(path: &Path, contents: &[u8]) -> io::Result<()> {
    swap_in(path, contents, false)
}

/// Writes `contents` to a temp file beside `path` and renames it over
/// `path`; with `durable`, the file and then the folder are fsynced.
fn swap_in(path: &Path, contents: &[u8], durable: bool) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("file has no parent folder"))?;
    let name = path.file_name().ok_or_else(|| io::Error::other("path has no file name"))?;
    let temp = dir.join(format!("{}{TEMP_SUFFIX}", name.to_string_lossy()));
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temp)?;
        file.write_all(contents)?;
        if durable {
            file.sync_all()?;
        }
        fs::rename(&temp, path)?;
        if durable { sync_parent(path) } else { Ok(()) }
    })();
    if written.is_err() {
        // A full disk must not leave half a temp file lying around.
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Appends one line with a single write and makes it durable. A last line
/// cut short by a crash is dropped first, so the new line never joins it;
/// a write that fails (a full disk) takes back what part of it got in.
pub fn append_line(path: &Path, line: &[u8]) -> io::Result<()> {
    append_line_sized(path, line).map(drop)
}

/// [`append_line`] without the fsync, for a line a power cut may take
/// back (a simulation's log; a record's version the next synced write
/// covers): its reader must skip a line that does not parse.
pub fn append_line_unsynced(path: &Path, line: &[u8]) -> io::Result<u64> {
    append(path, line, false)
}

/// [`append_line`], returning the file's length after it.
pub fn append_line_sized(path: &Path, line: &[u8]) -> io::Result<u64> {
    append(path, line, true)
}

/// Appends `line` and a newline in one write; with `durable`, fsynced (and
/// the folder too when the file is new).
fn append(path: &Path, line: &[u8], durable: bool) -> io::Result<u64> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line);
    buf.push(b'\n');
    let existed = path.exists();
    let mut file = OpenOptions::new().read(true).append(true).create(true).mode(0o600).open(path)?;
    drop_torn_tail(&file)?;
    let len = file.metadata()?.len();
    let written = file.write_all(&buf).and_then(|()| if durable { file.sync_data() } else { Ok(()) });
    if let Err(error) = written {
        let _ = file.set_len(len);
        return Err(error);
    }
    if durable && !existed {
        sync_parent(path)?;
    }
    Ok(len + buf.len() as u64)
}

/// Makes a file's creation, rename or removal durable.
pub fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => sync_dir(dir),
        None => Ok(()),
    }
}

/// Makes the creations, renames and removals of entries in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// [`drop_torn_tail`] of the file at `path`.
pub fn drop_torn_tail_of(path: &Path) -> io::Result<()> {
    drop_torn_tail(&OpenOptions::new().read(true).write(true).open(path)?)
}

/// Truncates the file after its last newline, if it does not end with one.
fn drop_torn_tail(file: &File) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut last = [0u8; 1];
    if len == 0 || (file.read_exact_at(&mut last, len - 1).is_ok() && last[0] == b'\n') {
        return Ok(());
    }
    // Only after a crash: find the last complete line, reading backwards.
    let mut end = len;
    let mut chunk = vec![0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        file.read_exact_at(part, start)?;
        if let Some(pos) = part.iter().rposition(|b| *b == b'\n') {
            return file.set_len(start + pos as u64 + 1);
        }
        end = start;
    }
    file.set_len(0)
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
    fn an_append_after_a_torn_line_starts_clean() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        append_line(&path, b"{\"a\":1}").unwrap();
        let mut torn = fs::read(&path).unwrap();
        torn.extend_from_slice(b"{\"a\":2, \"cut sh");
        fs::write(&path, torn).unwrap();
        append_line(&path, b"{\"a\":3}").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"a\":3}\n");
        // A file that is one torn line and nothing else.
        fs::write(&path, b"{\"tor").unwrap();
        append_line(&path, b"{\"a\":4}").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":4}\n");
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
