//! The event log's files. `events/` holds the log in segments, each a JSON
//! Lines file named by the sequence number of its first event
//! (`00000000000000000001.jsonl`), so a reader finds the segment any
//! `after` starts in from the names alone, and old events go a whole
//! segment at a time (`events.keep`). A segment holds one UTC day at most,
//! and at most [`MAX_SEGMENT_BYTES`]. Inside one, lines are in sequence
//! order: a binary search over its bytes finds where to start reading, so
//! catching up costs what it returns, not the size of the log.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, FileExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::store::atomic;

/// A segment past this size is closed at its next event.
pub(super) const MAX_SEGMENT_BYTES: u64 = 8 << 20;

/// A binary search stops once what is left is this small, and reads it.
const WINDOW: u64 = 16 << 10;

/// The folder of segments.
pub(super) struct Segments {
    dir: PathBuf,
}

/// An event's number and time, read without the rest of it.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Header {
    pub seq: u64,
    pub at: DateTime<Utc>,
}

impl Segments {
    pub fn new(dir: PathBuf) -> Segments {
        Segments { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the segment whose first event is `first`.
    pub fn path(&self, first: u64) -> PathBuf {
        self.dir.join(format!("{first:020}.jsonl"))
    }

    /// The first sequence number of each segment, oldest first. Anything
    /// else in the folder is not the log's, and is left alone.
    pub fn firsts(&self) -> io::Result<Vec<u64>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut firsts = Vec::new();
        for entry in entries {
            let name = entry?.file_name();
            let first = name.to_str().and_then(|n| n.strip_suffix(".jsonl")).filter(|n| n.len() == 20);
            if let Some(first) = first.and_then(|n| n.parse::<u64>().ok()) {
                firsts.push(first);
            }
        }
        firsts.sort_unstable();
        Ok(firsts)
    }

    /// Makes the folder (owner-only) and moves a log written before there
    /// were segments (`events.jsonl`) in as the first one.
    pub fn adopt(&self, legacy: &Path) -> io::Result<()> {
        if !self.dir.exists() {
            fs::DirBuilder::new().mode(0o700).create(&self.dir)?;
            atomic::sync_parent(&self.dir)?;
        }
        if !legacy.exists() {
            return Ok(());
        }
        atomic::drop_torn_tail_of(legacy)?;
        match first_header(&File::open(legacy)?)? {
            Some(first) => fs::rename(legacy, self.path(first.seq))?,
            None => fs::remove_file(legacy)?,
        }
        atomic::sync_dir(&self.dir)?;
        atomic::sync_parent(legacy)
    }
}

/// The header of the first line of `file`, if it has a complete one.
pub(super) fn first_header(file: &File) -> io::Result<Option<Header>> {
    let (line, complete) = line_at(file, 0)?;
    if !complete {
        return Ok(None);
    }
    parse(&line).map(Some)
}

/// The header of the last complete line of `file`, if any, reading
/// backwards from its end.
pub(super) fn last_header(file: &File) -> io::Result<Option<Header>> {
    let len = file.metadata()?.len();
    let mut end = len;
    // The last complete line ends at the last newline.
    let mut chunk = vec![0u8; 4096];
    let mut line_end = None;
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        file.read_exact_at(part, start)?;
        for (i, byte) in part.iter().enumerate().rev() {
            if *byte != b'\n' {
                continue;
            }
            let at = start + i as u64;
            match line_end {
                None => line_end = Some(at),
                Some(line_end) => {
                    let (line, _) = line_at(file, at + 1)?;
                    debug_assert_eq!(at + 1 + line.len() as u64, line_end);
                    return parse(&line).map(Some);
                }
            }
        }
        end = start;
    }
    match line_end {
        Some(_) => first_header(file),
        None => Ok(None),
    }
}

/// Where to start reading `file` for the events after `after`: the start of
/// a line at or before the first of them, within [`WINDOW`] bytes of it.
pub(super) fn start_after(file: &File, after: u64) -> io::Result<u64> {
    // Every line before `low` is at or before `after`; the first line after
    // `after` starts at `high` or before.
    let (mut low, mut high) = (0, file.metadata()?.len());
    while high - low > WINDOW {
        let middle = low + (high - low) / 2;
        // The first line that starts after `middle`.
        let (partial, complete) = line_at(file, middle)?;
        let next = middle + partial.len() as u64 + 1;
        if !complete || next >= high {
            break;
        }
        let (line, complete) = line_at(file, next)?;
        if !complete {
            break;
        }
        if parse(&line)?.seq <= after {
            low = next;
        } else {
            high = next;
        }
    }
    Ok(low)
}

/// The bytes from `at` to the next newline, and whether there was one.
fn line_at(file: &File, at: u64) -> io::Result<(Vec<u8>, bool)> {
    let mut reader = BufReader::with_capacity(4096, file);
    reader.seek(SeekFrom::Start(at))?;
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    let complete = line.last() == Some(&b'\n');
    if complete {
        line.pop();
    }
    Ok((line, complete))
}

fn parse(line: &[u8]) -> io::Result<Header> {
    serde_json::from_slice(line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The complete lines of `file` from byte `start`, one at a time; a last
/// line without its newline (being written, or cut short) is not one.
pub(super) struct Lines {
    reader: BufReader<File>,
}

impl Lines {
    pub fn from(mut file: File, start: u64) -> io::Result<Lines> {
        file.seek(SeekFrom::Start(start))?;
        Ok(Lines { reader: BufReader::with_capacity(64 << 10, file) })
    }
}

impl Iterator for Lines {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<io::Result<Vec<u8>>> {
        let mut line = Vec::new();
        match self.reader.read_until(b'\n', &mut line) {
            Err(e) => Some(Err(e)),
            Ok(_) if line.last() == Some(&b'\n') => {
                line.pop();
                Some(Ok(line))
            }
            Ok(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file of events numbered `seqs`, each line padded to about `width`.
    fn file_of(seqs: &[u64], width: usize) -> (tempfile::NamedTempFile, Vec<u64>) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let mut starts = Vec::new();
        let mut at = 0;
        for seq in seqs {
            let pad = "x".repeat(width.saturating_sub(60) + (*seq as usize * 7) % 50);
            let line = format!("{{\"seq\":{seq},\"at\":\"2026-11-27T10:00:00Z\",\"pad\":\"{pad}\"}}\n");
            starts.push(at);
            at += line.len() as u64;
            file.write_all(line.as_bytes()).unwrap();
        }
        (file, starts)
    }

    proptest::proptest! {
        /// Wherever `after` falls, the search starts at a line at or before
        /// the first event after it, and never more than a window early.
        #[test]
        fn the_search_starts_at_or_just_before_the_first_event_after(
            count in 0usize..3_000,
            gap in 1u64..4,
            width in 60usize..700,
            after in 0u64..10_000,
        ) {
            let seqs: Vec<u64> = (0..count as u64).map(|n| 1 + n * gap).collect();
            let (file, starts) = file_of(&seqs, width);
            let start = start_after(file.as_file(), after).unwrap();
            let len = file.as_file().metadata().unwrap().len();
            let wanted = seqs.iter().position(|s| *s > after).map_or(len, |i| starts[i]);
            proptest::prop_assert!(start == len && wanted == len || starts.contains(&start));
            proptest::prop_assert!(start <= wanted, "{} > {}", start, wanted);
            proptest::prop_assert!(wanted - start <= WINDOW + 800, "{} bytes early", wanted - start);
        }
    }

    #[test]
    fn the_last_header_is_the_last_complete_line() {
        let (file, _) = file_of(&[1, 2, 3], 5_000);
        assert_eq!(last_header(file.as_file()).unwrap().unwrap().seq, 3);
        let (file, _) = file_of(&[7], 100);
        assert_eq!(last_header(file.as_file()).unwrap().unwrap().seq, 7);
        let empty = tempfile::NamedTempFile::new().unwrap();
        assert!(last_header(empty.as_file()).unwrap().is_none());
        let (mut file, _) = file_of(&[1, 2], 100);
        file.write_all(b"{\"seq\":3,\"at\":\"cut").unwrap();
        assert_eq!(last_header(file.as_file()).unwrap().unwrap().seq, 2);
    }
}
