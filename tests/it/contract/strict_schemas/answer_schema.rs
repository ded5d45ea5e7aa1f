//! A todo's `answer_schema`: the document's `AnswerSchema` admits exactly
//! what `AnswerSchema::check` takes, but for what its description leaves to
//! words (minimum ≤ maximum, minLength ≤ maxLength, enum values that keep
//! the format, pattern and range given), which the generator here keeps to.

use proptest::sample::select;
use relay::api::AnswerSchema;
use serde_json::Map;

use super::*;

/// A keyword left out, null, or one of `values`.
fn keyword(values: Vec<Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![2 => Just(None), 1 => Just(Some(Value::Null)), 3 => select(values).prop_map(Some)]
}

/// Two bounds, the lower first, each maybe left out or null.
fn bounds(values: Vec<Value>) -> impl Strategy<Value = (Option<Value>, Option<Value>)> {
    (keyword(values.clone()), keyword(values)).prop_map(|(low, high)| match (&low, &high) {
        (Some(a), Some(b)) if a.as_f64() > b.as_f64() => (high, low),
        _ => (low, high),
    })
}

/// Candidate answer schemas: every type (and a wrong one), every keyword
/// with values of the right and wrong kinds; `enum` alone, as its values
/// against the other keywords are left to words.
fn candidates() -> impl Strategy<Value = Value> {
    let kind = select(vec![json!("string"), json!("number"), json!("integer"), json!("boolean"), json!("date")]);
    let format =
        keyword(vec![json!("date"), json!("time"), json!("date-time"), json!("email"), json!("bogus"), json!(3)]);
    let pattern = keyword(vec![json!("^a"), json!("[0-9]+"), json!("a{2}"), json!(""), json!("("), json!(1)]);
    let range = bounds(vec![json!(-2), json!(0), json!(1.5), json!(7)]);
    let lengths = bounds(vec![json!(0), json!(1), json!(4), json!(-1)]);
    let value =
        select(vec![json!(1), json!(2), json!(2.5), json!("a"), json!("b"), json!(" "), json!(true), json!(null)]);
    let one_of = prop_oneof![Just(None), proptest::collection::vec(value, 0..4).prop_map(|v| Some(json!(v)))];
    (prop_oneof![9 => kind.prop_map(Some), 1 => Just(None)], format, pattern, range, lengths, one_of).prop_map(
        |(kind, format, pattern, (minimum, maximum), (min_length, max_length), one_of)| {
            let mut schema = Map::new();
            let constraints = [("format", format), ("pattern", pattern), ("minimum", minimum), ("maximum", maximum)];
            let lengths = [("minLength", min_length), ("maxLength", max_length)];
            let keywords: Vec<(&str, Option<Value>)> = match one_of {
                Some(values) => vec![("type", kind), ("enum", Some(values))],
                None => [("type", kind)].into_iter().chain(constraints).chain(lengths).collect(),
            };
            for (name, value) in keywords {
                if let Some(value) = value {
                    schema.insert(name.to_string(), value);
                }
            }
            Value::Object(schema)
        },
    )
}

#[test]
fn an_answer_schema_is_admitted_exactly_when_check_takes_it() {
    let schema = validator(&json!({"$ref": "#/components/schemas/AnswerSchema"}));
    let taken = |candidate: &Value| {
        serde_json::from_value::<AnswerSchema>(candidate.clone()).map_err(|e| e.to_string()).and_then(|s| s.check())
    };
    runner(600)
        .run(&candidates(), |candidate| {
            let verdict = taken(&candidate);
            prop_assert_eq!(schema.is_valid(&candidate), verdict.is_ok(), "{} ({:?})", candidate, verdict);
            Ok(())
        })
        .unwrap();
    // What the generator does not reach: the longest pattern and the most values.
    let longest = "a".repeat(relay::api::MAX_PATTERN_CHARS);
    let most: Vec<usize> = (0..relay::api::MAX_ENUM_VALUES).collect();
    let too_many: Vec<usize> = (0..=relay::api::MAX_ENUM_VALUES).collect();
    for (candidate, admitted) in [
        (json!({"type": "string", "pattern": longest}), true),
        (json!({"type": "string", "pattern": format!("{longest}a")}), false),
        (json!({"type": "integer", "enum": most}), true),
        (json!({"type": "integer", "enum": too_many}), false),
    ] {
        assert_eq!(schema.is_valid(&candidate), admitted, "{candidate}");
        assert_eq!(taken(&candidate).is_ok(), admitted, "{candidate}");
    }
}
