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
//! at the root, as MCP requires of an `outputSchema`. Every client downloads them with
//! `tools/list`, so they are kept small: a type used in several places is stated once under
//! the schema's own `$defs` (MCP wants each `outputSchema` self-contained, so nothing is
//! shared across tools), a type used once is written in place, and an optional field that is
//! left out when empty does not also admit `null`. Only keywords a draft-07 validator knows
//! are used besides `$defs`: a tuple (`prefixItems`, 2020-12 only, refused by strict
//! validators) is published as an array of a fixed length.

use std::collections::HashMap;

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
        .for_serialize()
        .into_generator();
    let root = generator.into_root_schema_for::<T>().to_value();
    let Value::Object(mut root) = root else {
        return root;
    };
    let defs: Map<String, Value> = match root.shift_remove("$defs") {
        Some(Value::Object(defs)) => defs
            .iter()
            .map(|(name, def)| (name.clone(), normalize_output(def)))
            .collect(),
        _ => Map::new(),
    };
    let Value::Object(mut map) = normalize_output(&Value::Object(root)) else {
        return Value::Null;
    };
    // An envelope that is one of several shapes (`read_file`) has no `type` of its own at the
    // root; every shape is an object, and MCP requires the root to say so.
    if !map.contains_key("type") {
        map.insert("type".to_owned(), Value::from("object"));
    }
    share_definitions(map, &defs)
}

/// Writes each definition used once in place of its `$ref` and keeps the others (used more
/// than once) under `$defs` at the end of `root`; definitions nothing uses are dropped.
fn share_definitions(root: Map<String, Value>, defs: &Map<String, Value>) -> Value {
    let mut uses: HashMap<String, usize> = HashMap::new();
    count_refs(&Value::Object(root.clone()), &mut uses);
    for def in defs.values() {
        count_refs(def, &mut uses);
    }
    let shared = |name: &str| uses.get(name).copied().unwrap_or(0) > 1;
    let mut out = inline_single_uses(&Value::Object(root), defs, &shared);
    let kept: Map<String, Value> = defs
        .iter()
        .filter(|(name, _)| shared(name))
        .map(|(name, def)| (name.clone(), inline_single_uses(def, defs, &shared)))
        .collect();
    if let Value::Object(map) = &mut out
        && !kept.is_empty()
    {
        map.insert("$defs".to_owned(), Value::Object(kept));
    }
    out
}

/// The definition name a `$ref` of ours points at (`#/$defs/<name>`).
fn ref_name(node: &Map<String, Value>) -> Option<&str> {
    node.get("$ref")?.as_str()?.strip_prefix(DEFS_PREFIX)
}

const DEFS_PREFIX: &str = "#/$defs/";

/// Counts, per definition, the `$ref`s below `node`.
fn count_refs(node: &Value, uses: &mut HashMap<String, usize>) {
    match node {
        Value::Object(map) => {
            if let Some(name) = ref_name(map) {
                *uses.entry(name.to_owned()).or_default() += 1;
            }
            map.values().for_each(|v| count_refs(v, uses));
        }
        Value::Array(items) => items.iter().for_each(|v| count_refs(v, uses)),
        _ => {}
    }
}

/// `node` with every `$ref` to a definition that is not `shared` replaced by the definition
/// itself. The keys written next to the `$ref` (the field's own description) win over the
/// definition's, so a description is stated once either way.
fn inline_single_uses(
    node: &Value,
    defs: &Map<String, Value>,
    shared: &dyn Fn(&str) -> bool,
) -> Value {
    match node {
        Value::Object(map) => {
            let target = ref_name(map)
                .filter(|name| !shared(name))
                .and_then(|name| defs.get(name));
            let mut out = match target {
                Some(Value::Object(def)) => {
                    let mut merged = def.clone();
                    for (key, value) in map {
                        if key != "$ref" {
                            merged.insert(key.clone(), value.clone());
                        }
                    }
                    merged
                }
                _ => map.clone(),
            };
            for value in out.values_mut() {
                *value = inline_single_uses(value, defs, shared);
            }
            // Inlining a definition may bring in `$ref`s of its own: resolve those too.
            if target.is_some() {
                return inline_single_uses(&ordered(out), defs, shared);
            }
            ordered(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| inline_single_uses(v, defs, shared))
                .collect(),
        ),
        other => other.clone(),
    }
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
/// descriptions on one line, tuples as fixed-length arrays, no `null` for the optional
/// fields that are left out instead, keys in the fixed order.
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
            tuple_as_array(&mut out);
            if out.get("type").and_then(Value::as_str) == Some("object") {
                out.entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            drop_null_of_optional_properties(&mut out);
            ordered(out)
        }
        other => other.clone(),
    }
}

/// `prefixItems: [A, B]` (schemars' tuple) becomes `items: {anyOf: [A, B]}` with the length
/// fixed by `minItems`/`maxItems`: draft-07 validators know no `prefixItems` (strict ones
/// refuse the schema), and 2020-12 ones refuse the draft-07 array form of `items`.
fn tuple_as_array(map: &mut Map<String, Value>) {
    let Some(Value::Array(slots)) = map.shift_remove("prefixItems") else {
        return;
    };
    let len = slots.len();
    let mut kinds: Vec<Value> = Vec::new();
    for slot in slots {
        if !kinds.contains(&slot) {
            kinds.push(slot);
        }
    }
    let items = match <[Value; 1]>::try_from(kinds) {
        Ok([only]) => only,
        Err(kinds) => {
            let mut any = Map::new();
            any.insert("anyOf".to_owned(), Value::Array(kinds));
            Value::Object(any)
        }
    };
    map.insert("items".to_owned(), items);
    map.insert("minItems".to_owned(), Value::from(len));
    map.insert("maxItems".to_owned(), Value::from(len));
}

/// A property that is not `required` is one the envelope leaves out when it is empty
/// (`skip_serializing_if`; a field that is always written is required): the server never
/// sends it as `null`, so its schema need not admit `null`.
fn drop_null_of_optional_properties(map: &mut Map<String, Value>) {
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(props)) = map.get_mut("properties") else {
        return;
    };
    for (name, schema) in props.iter_mut() {
        if required.contains(name) {
            continue;
        }
        let Value::Object(prop) = schema else {
            continue;
        };
        collapse_nullable_any_of(prop);
        if prop.get("type").is_some_and(Value::is_array) {
            drop_null_type(prop);
        }
        *schema = ordered(std::mem::take(prop));
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
