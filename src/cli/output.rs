//! Output: exactly one JSON document on stdout with `--json`, otherwise text
//! for a person. Times are shown in local time; JSON keeps UTC.

use chrono::{DateTime, Local, Utc};
use serde::Serialize;

pub fn json<T: Serialize>(value: &T) {
    println!("{}", serde_json::to_string_pretty(value).expect("output serialises"));
}

pub fn time(at: DateTime<Utc>) -> String {
    at.with_timezone(&Local).format("%Y-%m-%d %H:%M:%S").to_string()
}

/// "in 4m 10s" / "4m 10s ago".
pub fn relative(at: DateTime<Utc>) -> String {
    let delta = at - Utc::now();
    let secs = delta.num_seconds();
    let span = humantime::format_duration(std::time::Duration::from_secs(secs.unsigned_abs())).to_string();
    if secs >= 0 { format!("in {span}") } else { format!("{span} ago") }
}

/// Cuts `text` to `max` characters (for tables).
pub fn truncate(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
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
