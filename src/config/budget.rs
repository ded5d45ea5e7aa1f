//! The `budget` section: the limits a conversation gets when its create
//! request sets none (`relay create --max-turns`, `--max-tokens`,
//! `--expires-in` win over these). Each is off (null) unless set: relay
//! has always let a conversation run until it ends, and a limit chosen for
//! the operator would cut some short that they meant to go on.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The longest `expires_in`, here and in a create request: a year is
/// already longer than any conversation relay should hold (and keeps the
/// deadline's arithmetic far from overflowing).
pub const MAX_EXPIRES_IN: Duration = Duration::from_secs(365 * 86_400);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetSettings {
    /// Agent turns per conversation at most; null: no limit.
    pub max_turns: Option<u32>,
    /// Model tokens (input + output) per conversation at most; null: no limit.
    pub max_tokens: Option<u64>,
    /// Each conversation ends this long after it is created ("7d");
    /// null: no deadline.
    #[serde(with = "optional_duration")]
    pub expires_in: Option<Duration>,
}

impl BudgetSettings {
    pub fn check(&self) -> Result<(), String> {
        if self.max_turns == Some(0) {
            return Err("budget.max_turns is 0: give at least 1, or null for no limit".into());
        }
        if self.max_tokens == Some(0) {
            return Err("budget.max_tokens is 0: give at least 1, or null for no limit".into());
        }
        if let Some(expires_in) = self.expires_in
            && (expires_in.is_zero() || expires_in > MAX_EXPIRES_IN)
        {
            return Err(format!(
                "budget.expires_in must be longer than 0s and at most 365d (it is {}; a duration such as \"7d\"), \
                 or null for no deadline",
                crate::duration::format(expires_in)
            ));
        }
        Ok(())
    }
}

/// An optional duration written as people type it ("7d"), or null.
mod optional_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_str(&crate::duration::format(*d)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| crate::duration::parse(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_reads_back_what_it_writes_and_refuses_zeroes() {
        let set = BudgetSettings {
            max_turns: Some(10),
            max_tokens: Some(50_000),
            expires_in: Some(Duration::from_secs(3 * 86_400)),
        };
        let json = serde_json::to_value(&set).unwrap();
        assert_eq!(json, serde_json::json!({"max_turns": 10, "max_tokens": 50_000, "expires_in": "3d"}));
        assert_eq!(serde_json::from_value::<BudgetSettings>(json).unwrap(), set);
        let off = serde_json::to_value(BudgetSettings::default()).unwrap();
        assert_eq!(off, serde_json::json!({"max_turns": null, "max_tokens": null, "expires_in": null}));
        assert!(set.check().is_ok() && BudgetSettings::default().check().is_ok());
        for wrong in [
            BudgetSettings { max_turns: Some(0), ..Default::default() },
            BudgetSettings { max_tokens: Some(0), ..Default::default() },
            BudgetSettings { expires_in: Some(Duration::ZERO), ..Default::default() },
            BudgetSettings { expires_in: Some(MAX_EXPIRES_IN + Duration::from_secs(1)), ..Default::default() },
        ] {
            assert!(wrong.check().unwrap_err().starts_with("budget."), "{wrong:?}");
        }
    }
}
