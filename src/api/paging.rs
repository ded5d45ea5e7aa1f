//! Pages of a long list (`GET /instances`, a transcript): how many a page
//! holds, where the next one starts, and how that travels. The body stays the list the
//! seeds define; the next page's address goes in a `Link` header (`rel="next"`,
//! as GitHub's API does it) and how many items are left after this page in
//! `Relay-Remaining`.
//!
//! A cursor is the position of the last item a page held, in the list's own
//! order (newest first: created, then id). Positions do not move when
//! conversations are created meanwhile (new ones come before the first
//! page) or when the daemon restarts (both are on disk), so walking the
//! pages sees each conversation once. A transcript's pages are oldest
//! first, and a cursor is the id of the page's last message: a message
//! keeps its place when it is written again (a receipt), and new ones come
//! after the last page.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use super::{ConversationInstance, TranscriptMessage};

/// A page holds this many items unless the request says otherwise.
pub const DEFAULT_LIMIT: usize = 100;
/// And never more than this.
pub const MAX_LIMIT: usize = 1000;
/// How many items follow the page (matching the same filters).
pub const REMAINING_HEADER: &str = "relay-remaining";

/// Checks a requested page size: 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when none.
pub fn limit(requested: Option<usize>) -> Result<usize, String> {
    match requested {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(n) => Err(format!("limit {n} is out of range: a page holds 1 to {MAX_LIMIT}")),
    }
}

/// The JSON Schema `pattern` of a cursor as relay writes them.
pub const CURSOR_PATTERN: &str = r"^-?[0-9]{1,19}\.[0-9a-f]{32}$";

/// Where a page of conversations ends, newest first: the conversation
/// created at `created_at_us` (microseconds since 1970) with `id`. Opaque
/// to clients: `1795751269938506.750a6e9201f34e1c9d3f3c4e7b0a1d22`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cursor {
    created_at_us: i64,
    id: Uuid,
}

impl Cursor {
    /// The position of `instance` in the list's order.
    pub fn of(instance: &ConversationInstance) -> Cursor {
        Cursor::at(instance.created_at, instance.id)
    }

    /// The position of the conversation `id` created at `created_at`.
    pub fn at(created_at: chrono::DateTime<chrono::Utc>, id: Uuid) -> Cursor {
        Cursor { created_at_us: created_at.timestamp_micros(), id }
    }

    /// The conversation at this position.
    pub fn id(&self) -> Uuid {
        self.id
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.created_at_us, self.id.simple())
    }
}

impl FromStr for Cursor {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad =
            || format!("'{text}' is not a cursor: use the one the last page gave (its Link header, or `--cursor`)");
        let (at, id) = text.trim().split_once('.').ok_or_else(bad)?;
        let created_at_us = at.parse::<i64>().map_err(|_| bad())?;
        let id = Uuid::try_parse(id).map_err(|_| bad())?;
        Ok(Cursor { created_at_us, id })
    }
}

/// One page of a list, and what follows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T, C = Cursor> {
    pub items: Vec<T>,
    /// Where the next page starts; none on the last page.
    pub next: Option<C>,
    /// How many items follow this page.
    pub remaining: usize,
}

impl<T> Page<T> {
    /// The page of `items` after `after`, newest first, at most `limit`:
    /// one pass over the items and a sort of the page, not of them all.
    pub fn of(items: impl IntoIterator<Item = (Cursor, T)>, after: Option<Cursor>, limit: usize) -> Page<T> {
        let mut matching: Vec<(Cursor, T)> =
            items.into_iter().filter(|(at, _)| after.is_none_or(|after| *at < after)).collect();
        let count = matching.len();
        if limit > 0 && limit < count {
            matching.select_nth_unstable_by(limit - 1, |a, b| b.0.cmp(&a.0));
        }
        matching.truncate(limit);
        matching.sort_unstable_by_key(|(at, _)| std::cmp::Reverse(*at));
        let remaining = count - matching.len();
        let next = matching.last().map(|(at, _)| *at).filter(|_| remaining > 0);
        Page { items: matching.into_iter().map(|(_, item)| item).collect(), next, remaining }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page { items: self.items.into_iter().map(f).collect(), next: self.next, remaining: self.remaining }
    }
}

/// The page of a transcript (oldest first) after the message `after`, at
/// most `limit` messages; `Err` when `after` is no message of it.
pub fn transcript_page(
    mut messages: Vec<TranscriptMessage>,
    after: Option<Uuid>,
    limit: usize,
) -> Result<Page<TranscriptMessage, Uuid>, String> {
    let start = match after {
        None => 0,
        Some(after) => messages.iter().position(|m| m.id == after).map(|at| at + 1).ok_or_else(|| {
            format!("'{after}' is not a cursor of this transcript: use the one the last page gave (its Link header, or `--cursor`)")
        })?,
    };
    let mut items = messages.split_off(start.min(messages.len()));
    let remaining = items.len().saturating_sub(limit);
    items.truncate(limit);
    let next = items.last().map(|m| m.id).filter(|_| remaining > 0);
    Ok(Page { items, next, remaining })
}

/// The JSON Schema `pattern` of a transcript's cursor: a message's id,
/// with its four dashes or none (`Uuid::try_parse` takes no other mix).
pub const MESSAGE_CURSOR_PATTERN: &str =
    r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})$";

/// A transcript's cursor as a client gives it: a message's id.
pub fn message_cursor(text: &str) -> Result<Uuid, String> {
    Uuid::try_parse(text.trim()).map_err(|_| {
        format!("'{text}' is not a cursor: use the one the last page gave (its Link header, or `--cursor`)")
    })
}

/// The cursor in a `Link` header's `rel="next"` address, if it has one.
pub fn next_cursor(link: &str) -> Option<String> {
    link.split(',').find(|part| part.split(';').skip(1).any(|p| p.trim() == "rel=\"next\"")).and_then(|part| {
        let address = part.trim().strip_prefix('<')?.split_once('>')?.0;
        let query = address.split_once('?')?.1;
        serde_urlencoded::from_str::<Vec<(String, String)>>(query)
            .ok()?
            .into_iter()
            .find_map(|(key, value)| (key == "cursor").then_some(value))
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// A cursor reads back as itself, and orders as its position does.
        #[test]
        fn cursors_round_trip_and_keep_their_order(a in any::<i64>(), b in any::<i64>(), x in any::<u128>(), y in any::<u128>()) {
            let (first, second) = (Cursor { created_at_us: a, id: Uuid::from_u128(x) }, Cursor { created_at_us: b, id: Uuid::from_u128(y) });
            prop_assert_eq!(first.to_string().parse::<Cursor>(), Ok(first));
            prop_assert!(regex::Regex::new(CURSOR_PATTERN).unwrap().is_match(&first.to_string()), "{}", first);
            prop_assert_eq!(first.cmp(&second), (a, x).cmp(&(b, y)));
        }

        /// A client that writes a transcript's cursor as the schema's
        /// pattern says is not refused for its form (found by fuzz-api: a
        /// cursor with some of its dashes was).
        #[test]
        fn every_message_cursor_the_pattern_matches_parses(
            text in proptest::string::string_regex(MESSAGE_CURSOR_PATTERN.trim_start_matches('^').trim_end_matches('$')).unwrap(),
        ) {
            prop_assert!(message_cursor(&text).is_ok(), "{}", text);
        }

        /// Walking a transcript a page at a time gives every message once,
        /// in order, whatever the page size; each page says how many follow.
        #[test]
        fn a_transcripts_pages_hold_every_message_once(count in 0usize..40, limit in 1usize..12) {
            let messages: Vec<TranscriptMessage> = (0..count)
                .map(|n| TranscriptMessage::new(Uuid::nil(), crate::api::Role::Contact, format!("m{n}")))
                .collect();
            let (mut seen, mut after) = (Vec::new(), None);
            loop {
                let page = transcript_page(messages.clone(), after, limit).unwrap();
                prop_assert!(page.items.len() <= limit);
                prop_assert_eq!(page.remaining, count - seen.len() - page.items.len());
                seen.extend(page.items.iter().map(|m| m.id));
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            prop_assert_eq!(seen, messages.iter().map(|m| m.id).collect::<Vec<_>>());
        }

        /// Whatever a client sends as a cursor, it gets one back or a clear error.
        #[test]
        fn any_text_is_a_cursor_or_a_clear_error(text in ".{0,80}") {
            if let Err(e) = text.parse::<Cursor>() {
                prop_assert!(e.contains("is not a cursor"), "{}", e);
            }
        }
    }

    proptest! {
        /// Walking the pages from the first, whatever their size, gives
        /// every item once, newest first, positions tied in time included;
        /// each page says truly how many follow.
        #[test]
        fn the_pages_walk_every_item_once_newest_first(
            times in proptest::collection::vec(0i64..20, 0..60),
            limit in 1usize..8,
        ) {
            let items: Vec<Cursor> = times.iter().enumerate()
                .map(|(n, t)| Cursor { created_at_us: *t, id: Uuid::from_u128(n as u128 * 7919 % 61) })
                .collect();
            let mut expected = items.clone();
            expected.sort_by(|a, b| b.cmp(a));
            let (mut walked, mut after) = (Vec::new(), None);
            loop {
                let page = Page::of(items.iter().map(|c| (*c, *c)), after, limit);
                prop_assert!(page.items.len() <= limit);
                walked.extend(page.items.iter().copied());
                prop_assert_eq!(page.remaining, expected.len() - walked.len());
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            prop_assert_eq!(walked, expected);
        }
    }

    #[test]
    fn the_next_cursor_is_read_from_a_link_header() {
        let link = "</instances?state=PAUSED&contact=%2B56912345678&limit=2&cursor=17.abc%2Bd>; rel=\"next\"";
        assert_eq!(next_cursor(link).as_deref(), Some("17.abc+d"));
        assert_eq!(next_cursor("</instances?cursor=1.a>; rel=\"prev\""), None);
        assert_eq!(next_cursor("garbage"), None);
    }

    #[test]
    fn a_limit_is_one_to_a_thousand() {
        assert_eq!(limit(None), Ok(DEFAULT_LIMIT));
        assert_eq!(limit(Some(1000)), Ok(1000));
        assert!(limit(Some(0)).unwrap_err().contains("1 to 1000"));
        assert!(limit(Some(1001)).is_err());
    }
}
