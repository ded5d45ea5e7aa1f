//! Durations as people type them: `90s`, `30m`, `2h`, `1h30m`, or a bare
//! number of seconds.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not a duration: use e.g. 90s, 30m, 2h or 1h30m")]
pub struct DurationError {
    pub input: String,
}

pub fn parse(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    let err = || DurationError { input: input.to_string() };
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(s).map_err(|_| err())
}

/// Renders whole seconds the way `parse` reads them back: `1h30m`, `45s`.
pub fn format(d: Duration) -> String {
    let mut secs = d.as_secs();
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

/// A duration in a config file, written as people type it (`"10m"`):
/// `#[serde(with = "crate::duration::text")]`.
pub mod text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format(*value))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        super::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_forms_the_cli_documents() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse("45"), Ok(Duration::from_secs(45)));
        assert!(parse("soon").is_err());
        assert!(parse("-5s").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for s in ["1s", "90s", "30m", "2h", "1h30m", "1d2h"] {
            let d = parse(s).unwrap();
            assert_eq!(parse(&format(d)), Ok(d));
        }
        assert_eq!(format(Duration::from_secs(5400)), "1h30m");
    }
}
