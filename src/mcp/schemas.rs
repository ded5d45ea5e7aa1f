//! The tools' schemas as strict clients take them: output schemas from
//! the API's types, input schemas plain (one type, standard formats).

use super::*;

/// The formats JSON Schema 2020-12 defines; others (schemars' `uint32`,
/// utoipa's `int64`) are refused by strict clients.
pub(super) const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// A tool's outputSchema from the type's OpenAPI schema (utoipa's, the one
/// `/openapi.json` publishes), as one self-contained JSON Schema: the types
/// it refers to under `$defs`.
pub(super) fn output_schema<T: utoipa::ToSchema>() -> Arc<JsonObject> {
    let mut referred = Vec::new();
    T::schemas(&mut referred);
    let mut schema = serde_json::to_value(T::schema()).expect("schemas serialise");
    let defs: JsonObject = referred
        .into_iter()
        .map(|(name, schema)| (name, serde_json::to_value(schema).expect("schemas serialise")))
        .collect();
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    rewrite(&mut schema, &mut |node| {
        if let Some(Value::String(target)) = node.get_mut("$ref")
            && let Some(name) = target.strip_prefix("#/components/schemas/")
        {
            *target = format!("#/$defs/{name}");
        }
        drop_nonstandard_format(node);
    });
    let Value::Object(mut schema) = schema else { panic!("{} has no object schema", T::name()) };
    // A struct with a flattened part is an `allOf` of objects, without a
    // root type; rmcp lists an outputSchema only when its root says object.
    schema.entry("type").or_insert_with(|| "object".into());
    Arc::new(schema)
}

/// An inputSchema without what strict clients refuse: an optional
/// property is of its type, not of `[type, "null"]` with a null default
/// (schemars' way with `Option`), and formats are JSON Schema's own.
pub(super) fn plain_input(schema: &JsonObject) -> JsonObject {
    let mut schema = Value::Object(schema.clone());
    rewrite(&mut schema, &mut |node| {
        if let Some(Value::Array(types)) = node.get("type") {
            let types: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
            let plain = match <[Value; 1]>::try_from(types) {
                Ok([one]) => one,
                Err(types) => Value::Array(types),
            };
            node.insert("type".into(), plain);
            if node.get("default") == Some(&Value::Null) {
                node.remove("default");
            }
        }
        drop_nonstandard_format(node);
    });
    let Value::Object(schema) = schema else { unreachable!("an object stays an object") };
    schema
}

pub(super) fn drop_nonstandard_format(node: &mut JsonObject) {
    if node.get("format").and_then(Value::as_str).is_some_and(|f| !STANDARD_FORMATS.contains(&f)) {
        node.remove("format");
    }
}

/// Calls `each` on every object in `value`, depth first.
pub(super) fn rewrite(value: &mut Value, each: &mut impl FnMut(&mut JsonObject)) {
    match value {
        Value::Object(object) => {
            each(object);
            for child in object.values_mut() {
                rewrite(child, each);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite(item, each)),
        _ => {}
    }
}
