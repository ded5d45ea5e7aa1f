//! Durations as people type them: `90s`, `30m`, `2h`, `1h30m`, or a bare
//! number of seconds.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not a duration: use e.g. 90s, 30m, 2h or 1h30m (units: ms, s, m, h, d, w)")]
pub struct DurationError {
    pub input: String,
}

pub fn parse(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    let err = || DurationError { input: input.to_string() };
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    // Numbers each followed by a unit: "1h30m", "1.5s", "2 h". Only these
    // units: humantime also read "10M" as ten months and "1y" as a year,
    // an easy slip for "10m" that set a timer to next autumn.
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return Err(err());
    }
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().map_err(|_| err())?;
        rest = rest[number_len..].trim_start();
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" | "sec" | "secs" => 1.0,
            "m" | "min" | "mins" => 60.0,
            "h" | "hr" | "hrs" => 3_600.0,
            "d" => 86_400.0,
            "w" => 604_800.0,
            _ => return Err(err()),
        };
        rest = rest[unit_len..].trim_start();
        let part = Duration::try_from_secs_f64(number * seconds).map_err(|_| err())?;
        total = total.checked_add(part).ok_or_else(err)?;
    }
    Ok(total)
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
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("1000ms"), Ok(Duration::from_secs(1)));
        assert_eq!(parse("1w"), Ok(Duration::from_secs(7 * 86_400)));
    }

    proptest::proptest! {
        /// Whatever is written in the units relay documents reads back as the
        /// sum of its parts; months, years and capitals are refused, never
        /// read as something far longer than meant.
        #[test]
        fn durations_read_as_written(
            parts in proptest::collection::vec((0u64..1000, proptest::sample::select(vec!["s", "m", "h", "d", "w"])), 1..4),
            other in "[A-Zy]|mo|month|year|yr",
        ) {
            let text: String = parts.iter().map(|(n, unit)| format!("{n}{unit}")).collect();
            let seconds: u64 = parts
                .iter()
                .map(|(n, unit)| n * match *unit { "s" => 1, "m" => 60, "h" => 3600, "d" => 86_400, _ => 604_800 })
                .sum();
            proptest::prop_assert_eq!(parse(&text), Ok(Duration::from_secs(seconds)));
            proptest::prop_assert!(parse(&format!("10{other}")).is_err(), "10{} accepted", other);
        }
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
