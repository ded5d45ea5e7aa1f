//! Output: exactly one JSON document on stdout with `--json`, otherwise text
//! for a person. Times are shown in local time with their offset; JSON keeps UTC.
//!
//! Text for a person goes through [`say!`] and [`complain!`], never
//! `println!`: much of what relay shows was written by someone else (the
//! contact's messages above all, but also objectives and todos the Main
//! Agent copied from anywhere), and a terminal obeys the control characters
//! in what it prints. [`visible`] is the one place that decides what may
//! reach a terminal. JSON is exact and goes out as it is.

use std::borrow::Cow;
use std::io::Write;

use serde::Serialize;

/// `value` as the one JSON document on stdout.
pub fn json<T: Serialize>(value: &T) {
    let document = serde_json::to_string_pretty(value).expect("output serialises");
    let mut out = stdout();
    let _ = writeln!(out, "{document}").and_then(|()| out.flush());
}

/// `println!` for a person: the text, made [`visible`], then a newline.
macro_rules! say {
    ($($arg:tt)*) => { $crate::cli::output::human_line(&mut $crate::cli::output::stdout(), &format!($($arg)*)) };
}

/// `eprintln!` for a person, through [`visible`] like [`say!`].
macro_rules! complain {
    ($($arg:tt)*) => { $crate::cli::output::human_line(&mut ::std::io::stderr().lock(), &format!($($arg)*)) };
}

pub(crate) use {complain, say};

pub use crate::clock::{relative, time, zone};
pub use crate::util::count;

/// Refuses `flag` (when `given`) without `--json`, whose output it shapes.
/// (clap's `requires` misses a global `--json` written before the command.)
pub fn json_only(ctx: &super::Context, flag: &str, given: bool) -> Result<(), super::CliError> {
    match given && !ctx.json {
        true => Err(super::CliError::usage(format!("{flag} shapes the JSON output: add --json"))),
        false => Ok(()),
    }
}

/// The CLI's stdout: once its reader has gone (`relay list | head`), the
/// next write ends the process quietly, as SIGPIPE ends any filter. relay
/// leaves SIGPIPE ignored (Rust's default) so that a socket the daemon
/// closes mid-upload is an error to handle, not a death: only stdout keeps
/// a filter's manners. (A trial's output goes through [`show`] instead,
/// which cleans up first.)
pub fn stdout() -> Stdout {
    Stdout(std::io::stdout().lock())
}

pub struct Stdout(std::io::StdoutLock<'static>);

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        quiet_if_reader_gone(self.0.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        quiet_if_reader_gone(self.0.flush())
    }
}

fn quiet_if_reader_gone<T>(written: std::io::Result<T>) -> std::io::Result<T> {
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => crate::sys::die_of(libc::SIGPIPE),
        written => written,
    }
}

/// `text` on stdout exactly as it is (a shell script, a Markdown file for
/// an agent): not a person's view, so nothing is escaped.
pub fn verbatim(text: &str, what: &str) -> Result<(), super::CliError> {
    let mut stdout = stdout();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| super::CliError::failure(format!("cannot print {what}: {e}")))
}

/// Writes `text` made [`visible`] and a newline, and flushes (a reader of
/// `relay events -f | ...` sees each line at once).
pub fn human_line(out: &mut impl Write, text: &str) {
    let _ = writeln!(out, "{}", visible(text)).and_then(|()| out.flush());
}

/// Writes a line for a person, made visible like `say!`'s; unlike `say!`, a
/// closed stdout is an error (`ReaderGone`), which stops a trial run (and
/// its model calls) and cleans up (`crate::trial`).
pub fn show(line: &str) -> Result<(), crate::client::Error> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", visible(line)).and_then(|()| out.flush()).map_err(reader_gone)
}

/// `value` as the one JSON document on stdout; a closed stdout as for [`show`].
pub fn show_json(value: &impl Serialize) -> Result<(), crate::client::Error> {
    let document = serde_json::to_string_pretty(value).expect("output serialises");
    let mut out = std::io::stdout().lock();
    writeln!(out, "{document}").and_then(|()| out.flush()).map_err(reader_gone)
}

fn reader_gone(e: std::io::Error) -> crate::client::Error {
    crate::client::Error::new(crate::api::ErrorCode::ReaderGone, format!("cannot write to stdout: {e}"))
}

/// `text` with every character that a terminal would obey rather than show
/// replaced by a visible escape (`\x1b`, `\u{202e}`): C0 controls but the
/// newline, DEL, C1 controls, and the bidirectional overrides and isolates
/// that make text read in another order than it is stored. Newlines stay
/// newlines, so a message of three lines still shows as three.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            _ if !is_hidden(c) => shown.push(c),
            '\t' => shown.push_str("\\t"),
            '\r' => shown.push_str("\\r"),
            c if (c as u32) < 0x100 => shown.push_str(&format!("\\x{:02x}", c as u32)),
            c => shown.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        }
    }
    Cow::Owned(shown)
}

/// `text` with its lines after the first indented by `indent` spaces, so a
/// newline in someone else's text continues the field it is in and cannot
/// start a line of its own ("needs       nothing, all done" written into
/// an objective must not read as relay's own line).
pub fn hang(text: &str, indent: usize) -> String {
    text.replace('\n', &format!("\n{:indent$}", ""))
}

/// Whether a terminal would act on `c` instead of showing it.
fn is_hidden(c: char) -> bool {
    match c {
        '\n' => false,
        c if c.is_control() => true, // C0, DEL and C1
        // Arabic letter mark, left-to-right/right-to-left marks, embeddings
        // and overrides, isolates.
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        // Characters that show as nothing: zero-width space and non-joiner,
        // word joiner and invisible operators, the byte-order mark, the
        // Mongolian vowel separator, and the tag characters (invisible text
        // a reader cannot see and a model still reads). The zero-width
        // joiner stays: emoji are made with it.
        '\u{200b}' | '\u{200c}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{180e}' => true,
        '\u{e0000}'..='\u{e007f}' => true,
        _ => false,
    }
}

/// Cuts `text` to `max` characters, on one line and [`visible`] (for tables
/// and one-line views, which measure what they will show).
pub fn truncate(text: &str, max: usize) -> String {
    let one_line = visible(text).replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The first 8 characters of an id: enough for `relay get` in practice.
pub fn short_id(id: &uuid::Uuid) -> String {
    id.to_string()[..8].to_string()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn forbidden(c: char) -> bool {
        (c < ' ' && c != '\n') || ('\u{7f}'..='\u{9f}').contains(&c) || is_hidden(c)
    }

    #[test]
    fn escapes_show_what_they_were() {
        assert_eq!(visible("x \u{1b}]0;PWNED\u{7}\u{1b}[2J"), "x \\x1b]0;PWNED\\x07\\x1b[2J");
        assert_eq!(visible("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(visible("one\ntwo\tthree\r"), "one\ntwo\\tthree\\r");
        assert_eq!(visible("\u{9b}31m"), "\\x9b31m");
        assert!(matches!(visible("plain, ñandú 🙂 👨\u{200d}👩\u{200d}👧"), Cow::Borrowed(_)));
        assert_eq!(visible("a\u{200b}b\u{feff}c\u{e0041}"), "a\\u{200b}b\\u{feff}c\\u{e0041}");
    }

    proptest! {
        #[test]
        fn nothing_a_terminal_obeys_survives(text in any::<String>()) {
            let shown = visible(&text);
            prop_assert!(!shown.chars().any(forbidden), "{shown:?}");
            // Lines stay lines.
            prop_assert_eq!(shown.matches('\n').count(), text.matches('\n').count());
        }

        #[test]
        fn text_without_controls_is_untouched(
            text in "[^\\p{Cc}\u{61c}\u{200b}\u{200c}\u{200e}\u{200f}\u{202a}-\u{202e}\u{2060}-\u{2064}\u{2066}-\u{2069}\u{feff}\u{180e}\u{e0000}-\u{e007f}]*"
        ) {
            prop_assert_eq!(visible(&text), text.as_str());
        }
    }
}
