//! Durations as people type them: `90s`, `30m`, `2h`, `1h30m`, or a bare
//! number of seconds.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not a duration: use e.g. 90s, 30m, 2h or 1h30m (units: ms, s, m, h, d, w)")]
pub struct DurationError {
    pub input: String,
}

/// The units [`parse`] reads, by the names it takes, and their length in
/// milliseconds.
const UNITS: [(&[&str], u64); 6] = [
    (&["ms"], 1),
    (&["s", "sec", "secs"], 1_000),
    (&["m", "min", "mins"], 60_000),
    (&["h", "hr", "hrs"], 3_600_000),
    (&["d"], 86_400_000),
    (&["w"], 604_800_000),
];

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
        let number_text = &rest[..number_len];
        let number: f64 = number_text.parse().map_err(|_| err())?;
        rest = rest[number_len..].trim_start();
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let (_, unit_ms) = UNITS.iter().find(|(names, _)| names.contains(&unit)).ok_or_else(err)?;
        // A whole number exactly (15859791053ms is not a nanosecond more);
        // a decimal one as near as a float has it.
        let part = match number_text.parse::<u64>() {
            Ok(whole) => whole.checked_mul(*unit_ms).map(Duration::from_millis),
            Err(_) => Duration::try_from_secs_f64(number * *unit_ms as f64 / 1000.0).ok(),
        };
        let part = part.ok_or_else(err)?;
        rest = rest[unit_len..].trim_start();
        total = total.checked_add(part).ok_or_else(err)?;
    }
    Ok(total)
}

/// The JSON Schema `pattern` of a duration longer than 0 and at most
/// `longest`, in its plainest form: a whole number of one unit (`90s`,
/// `2h`, `1d`; no leading zero), or of seconds alone (`45`). [`parse`]
/// takes more (sums like `1h30m`, decimals, spaces); every string the
/// pattern matches it reads as a duration in that range.
pub fn pattern(longest: Duration) -> String {
    let mut forms: Vec<String> = one_to(longest.as_secs()).into_iter().collect();
    for (names, unit_ms) in UNITS {
        let most = u64::try_from(longest.as_millis() / u128::from(unit_ms)).unwrap_or(u64::MAX);
        if let Some(numbers) = one_to(most) {
            forms.push(format!("{numbers}(?:{})", names.join("|")));
        }
    }
    format!("^(?:{})$", forms.join("|"))
}

/// A regular expression of the whole numbers from 1 to `most`, without
/// leading zeros (none when `most` is 0): those with fewer digits, then
/// those with as many, digit by digit below `most`'s, then `most` itself.
fn one_to(most: u64) -> Option<String> {
    if most == 0 {
        return None;
    }
    let digits: Vec<u8> = most.to_string().bytes().map(|b| b - b'0').collect();
    let any_digits = |n: usize| match n {
        0 => String::new(),
        1 => "[0-9]".to_string(),
        n => format!("[0-9]{{{n}}}"),
    };
    let mut forms = Vec::new();
    match digits.len() {
        1 => {}
        2 => forms.push("[1-9]".to_string()),
        n => forms.push(format!("[1-9][0-9]{{0,{}}}", n - 2)),
    }
    for (at, &digit) in digits.iter().enumerate() {
        let lowest = u8::from(at == 0);
        if digit > lowest {
            let prefix: String = digits[..at].iter().map(u8::to_string).collect();
            let below = if digit - 1 == lowest { lowest.to_string() } else { format!("[{lowest}-{}]", digit - 1) };
            forms.push(format!("{prefix}{below}{}", any_digits(digits.len() - at - 1)));
        }
    }
    forms.push(most.to_string());
    Some(format!("(?:{})", forms.join("|")))
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

    /// `one_to` is exactly the numbers it names, written plainly.
    #[test]
    fn one_to_matches_exactly_one_to_most() {
        for most in (1..=1_200).chain([9_999, 10_000, 31_536_000, 31_536_000_000]) {
            let numbers = regex::Regex::new(&format!("^{}$", one_to(most).unwrap())).unwrap();
            for n in (0..=most.min(1_300)).chain([most.saturating_sub(1), most, most + 1, most * 10]) {
                assert_eq!(numbers.is_match(&n.to_string()), (1..=most).contains(&n), "{n} of 1..={most}");
            }
            assert!(!numbers.is_match(&format!("0{most}")), "a leading zero in 1..={most}");
        }
        assert_eq!(one_to(0), None);
    }

    /// The sandbox lock's bound, and the largest number of each unit it allows.
    #[test]
    fn the_pattern_bounds_each_unit() {
        let year = Duration::from_secs(365 * 86_400);
        let pattern = regex::Regex::new(&pattern(year)).unwrap();
        for within in ["1ms", "31536000000ms", "31536000", "31536000s", "525600m", "8760h", "365d", "52w", "90s"] {
            assert!(pattern.is_match(within), "{within}");
            assert!(parse(within).is_ok_and(|d| !d.is_zero() && d <= year), "{within}");
        }
        for beyond in ["0s", "0", "31536000001ms", "31536001", "525601m", "8761h", "366d", "53w", "1h30m", "1.5s", "1y"]
        {
            assert!(!pattern.is_match(beyond), "{beyond}");
        }
    }

    proptest::proptest! {
        /// A client that writes a duration as the schema's pattern says is
        /// never refused: whatever it matches reads as more than 0 and at
        /// most the bound.
        #[test]
        fn every_string_the_pattern_matches_parses_within_bounds(
            (longest_ms, text) in proptest::strategy::Strategy::prop_flat_map(1u64..40_000_000_000, |ms| {
                let regex = pattern(Duration::from_millis(ms));
                let body = regex.trim_start_matches('^').trim_end_matches('$').to_string();
                (proptest::strategy::Just(ms), proptest::string::string_regex(&body).unwrap())
            }),
        ) {
            let longest = Duration::from_millis(longest_ms);
            proptest::prop_assert!(regex::Regex::new(&pattern(longest)).unwrap().is_match(&text), "{}", text);
            let read = parse(&text);
            proptest::prop_assert!(
                read.as_ref().is_ok_and(|d| !d.is_zero() && *d <= longest),
                "{} read as {:?}, bound {:?}", text, read, longest
            );
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
