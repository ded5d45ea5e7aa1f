//! The check of a call's arguments against its tool's generated schema,
//! in words a model can act on: which argument is wrong, and why. Only the
//! parts of JSON schema the generated schemas use.

use serde_json::Value;

/// Checks `arguments` against a tool's generated schema, and says what is
/// wrong in the model's terms: which argument, and why. Covers what the
/// generated schemas use: an object of properties with `required`, no
/// additional properties, and per property `type`, `enum`, `minLength`,
/// `maxLength` and `minimum`.
pub(super) fn check(schema: &Value, arguments: &Value) -> Result<(), String> {
    let Some(given) = arguments.as_object() else {
        return Err(format!("the arguments must be a JSON object, not {}", kind(arguments)));
    };
    let properties = schema["properties"].as_object().cloned().unwrap_or_default();
    let list = |names: Vec<&String>| {
        if names.is_empty() {
            "it takes none".to_string()
        } else {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("its arguments are {}", names.join(", "))
        }
    };
    for key in given.keys() {
        if !properties.contains_key(key) {
            return Err(format!("`{key}` is not an argument of this tool ({})", list(properties.keys().collect())));
        }
    }
    for required in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if !given.contains_key(required) {
            return Err(format!("missing `{required}`"));
        }
    }
    for (key, value) in given {
        check_value(&properties[key], value).map_err(|why| format!("`{key}` {why}"))?;
    }
    Ok(())
}

fn check_value(schema: &Value, value: &Value) -> Result<(), String> {
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if value.is_null() {
        return if types.contains(&"null") { Ok(()) } else { Err("must not be null".into()) };
    }
    let fits = |t: &&str| match *t {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => false,
    };
    if !types.is_empty() && !types.iter().any(fits) {
        let wanted: Vec<&str> = types.iter().filter(|t| **t != "null").map(|t| article(t)).collect();
        return Err(format!("must be {}, not {}", wanted.join(" or "), kind(value)));
    }
    if let Some(choices) = schema["enum"].as_array()
        && !choices.contains(value)
    {
        let names: Vec<&str> = choices.iter().filter_map(Value::as_str).collect();
        return Err(format!("must be one of {} (not {value})", names.join(", ")));
    }
    if let Some(text) = value.as_str() {
        let chars = text.chars().count();
        if schema["minLength"].as_u64().is_some_and(|min| min > 0) && text.trim().is_empty() {
            return Err("is empty".into());
        }
        if let Some(max) = schema["maxLength"].as_u64().filter(|max| chars as u64 > *max) {
            return Err(format!("is too long ({chars} characters; at most {max})"));
        }
    }
    if let Some(min) = schema["minimum"].as_i64()
        && value.as_i64().is_some_and(|v| v < min)
    {
        return Err(format!("must be at least {min}"));
    }
    Ok(())
}

pub(super) fn article(json_type: &str) -> &'static str {
    match json_type {
        "string" => "a string",
        "integer" => "a whole number",
        "number" => "a number",
        "boolean" => "true or false",
        "object" => "an object",
        "array" => "a list",
        _ => "something else",
    }
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}
