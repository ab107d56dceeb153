//! Turns schemars output into the schemas Satori publishes.
//!
//! Input schemas: clients generate command-line flags from them and our own validator checks
//! arguments against them, so they must be plain: everything inlined (no `$ref`), optional
//! fields typed without `null` (absent, not null, means "not given"), no Rust-specific `format`s,
//! single-line descriptions, and keys in one fixed order so snapshots and docs read well.
//!
//! Output schemas describe what the server sends, so they keep every `null` the envelopes
//! carry and every variant (`anyOf`/`oneOf`), refuse unknown keys (`additionalProperties:
//! false`, from `deny_unknown_fields` on the envelope types), and always have `type: object`
//! at the root, as MCP requires of an `outputSchema`.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Keys dropped from every schema node: titles and `$schema` add nothing for a reader of the
/// tool list, and `format: uint32` is a Rust detail no client understands.
const DROPPED: &[&str] = &["$schema", "title", "format", "$defs", "definitions"];

/// Output order of the keys we know; anything else follows in its original order.
const KEY_ORDER: &[&str] = &[
    "type",
    "description",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "default",
    "items",
    "properties",
    "required",
    "additionalProperties",
];

/// The published input schema of a params type.
pub(crate) fn input_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .for_deserialize()
        .into_generator();
    let mut root = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut root {
        // The tool description lives in the tool definition, not in the schema.
        map.shift_remove("description");
    }
    normalize(&root)
}

/// The published output schema of an envelope type.
pub(crate) fn output_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .for_serialize()
        .into_generator();
    let root = generator.into_root_schema_for::<T>().to_value();
    let Value::Object(mut map) = normalize_output(&root) else {
        return root;
    };
    // An envelope that is one of several shapes (`read_file`) has no `type` of its own at the
    // root; every shape is an object, and MCP requires the root to say so.
    if !map.contains_key("type") {
        map.insert("type".to_owned(), Value::from("object"));
    }
    ordered(map)
}

/// For an untagged enum whose shapes exclude each other (each refuses the others' keys):
/// schemars says `anyOf`, the truth is `oneOf`, which tells a reader that exactly one shape
/// applies. Used as `#[schemars(transform = exclusive_variants)]`.
pub(crate) fn exclusive_variants(schema: &mut schemars::Schema) {
    if let Some(variants) = schema.remove("anyOf") {
        schema.insert("oneOf".to_owned(), variants);
    }
}

/// Rewrites one output schema node (and every schema below it): Rust details dropped,
/// descriptions on one line, keys in the fixed order.
fn normalize_output(node: &Value) -> Value {
    match node {
        Value::Array(items) => Value::Array(items.iter().map(normalize_output).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                if DROPPED.contains(&key.as_str()) {
                    continue;
                }
                let value = match (key.as_str(), value) {
                    ("description", Value::String(text)) => Value::String(reflow(text)),
                    // Property names are data, not schema keywords: only their values recurse.
                    ("properties", Value::Object(props)) => Value::Object(
                        props
                            .iter()
                            .map(|(name, schema)| (name.clone(), normalize_output(schema)))
                            .collect(),
                    ),
                    (_, Value::Object(_) | Value::Array(_)) => normalize_output(value),
                    _ => value.clone(),
                };
                out.insert(key.clone(), value);
            }
            if out.get("type").and_then(Value::as_str) == Some("object") {
                out.entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            ordered(out)
        }
        other => other.clone(),
    }
}

/// Rewrites one schema node (and its children) into the published form.
fn normalize(node: &Value) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    let mut map = map.clone();
    collapse_nullable_any_of(&mut map);
    drop_null_type(&mut map);
    for key in DROPPED {
        map.shift_remove(*key);
    }
    if let Some(Value::String(text)) = map.get_mut("description") {
        *text = reflow(text);
    }
    if let Some(items) = map.get_mut("items") {
        *items = normalize(items);
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for value in props.values_mut() {
            *value = normalize(value);
        }
    }
    if map.get("type").and_then(Value::as_str) == Some("object") {
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if map
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        map.shift_remove("required");
    }
    ordered(map)
}

/// `anyOf: [X, {type: null}]` (schemars' shape for `Option<struct or enum>`) becomes X, keeping
/// the metadata (description, default) that was attached to the outer node.
fn collapse_nullable_any_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = map.get("anyOf") else {
        return;
    };
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    let non_null: Vec<&Value> = variants.iter().filter(|v| !is_null(v)).collect();
    if variants.len() != 2 || non_null.len() != 1 {
        return;
    }
    let Some(Value::Object(inner)) = non_null.first().map(|v| (*v).clone()) else {
        return;
    };
    map.shift_remove("anyOf");
    for (key, value) in inner {
        // The outer node's own description describes the field; keep it over the type's.
        map.entry(key).or_insert(value);
    }
}

/// `type: ["integer", "null"]` (schemars' shape for `Option<primitive>`) becomes `integer`.
fn drop_null_type(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let rest: Vec<Value> = types
        .iter()
        .filter(|t| t.as_str() != Some("null"))
        .cloned()
        .collect();
    let new_type = match rest.as_slice() {
        [single] => single.clone(),
        _ => Value::Array(rest),
    };
    map.insert("type".to_owned(), new_type);
}

/// Doc comments arrive with one `\n` per source line; a description is one paragraph.
fn reflow(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Rebuilds the map with the known keys first, in `KEY_ORDER`.
fn ordered(mut map: Map<String, Value>) -> Value {
    let mut out = Map::new();
    for key in KEY_ORDER {
        if let Some(value) = map.shift_remove(*key) {
            out.insert((*key).to_owned(), value);
        }
    }
    out.extend(map);
    Value::Object(out)
}
