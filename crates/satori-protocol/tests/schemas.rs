//! The published tool list is the contract: snapshot it, check it is the plain schema subset
//! clients rely on, and prove it stays compatible with the input schemas of the original
//! server (fixture copied from its `tools/list`).

use serde_json::{Value, json};

use satori_protocol::read_file::DEFAULT_MAX_LINES;
use satori_protocol::search_codebase::{LIMIT_DEFAULT, LIMIT_MAX};
use satori_protocol::{
    GroupBy, ManageAction, RankingMode, ReadMode, ResultMode, SCHEMAS_JSON, Scope, ToolDef,
    generated_tools, schemas_json, tool_def, tools,
};

fn tool_json(tool: &ToolDef) -> Value {
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "readOnly": tool.read_only,
        "idempotent": tool.idempotent,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
    })
}

fn upstream_schema(name: &str) -> Value {
    let text = include_str!("fixtures/upstream-4.6-input-schemas.json");
    let fixture: Value = serde_json::from_str(text).expect("fixture is JSON");
    fixture["tools"]
        .as_array()
        .expect("fixture lists tools")
        .iter()
        .find(|t| t["name"] == name)
        .map(|t| t["inputSchema"].clone())
        .unwrap_or_else(|| panic!("upstream has no tool {name}"))
}

fn schema_of(name: &str) -> &'static Value {
    &tool_def(name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .input_schema
}

/// The checked-in schemas are what the types generate. On a difference the generated file
/// is written next to it as `tools.json.new`; move it over the old one to accept it.
#[test]
fn checked_in_schemas_match_the_types() {
    let generated = generated_tools();
    let text = schemas_json(&generated);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/tools.json");
    if text != SCHEMAS_JSON {
        let new = path.with_extension("json.new");
        std::fs::write(&new, &text).expect("write the generated schemas");
        panic!(
            "{} is out of date: the generated schemas are in {}; move that file over it",
            path.display(),
            new.display()
        );
    }
    // What the server advertises is the checked-in file, parsed.
    assert_eq!(tools(), generated.as_slice());
}

#[test]
fn tool_list_snapshot() {
    let list: Vec<Value> = tools().iter().map(tool_json).collect();
    insta::assert_json_snapshot!("tools", list);
}

#[test]
fn registry_order() {
    let names: Vec<&str> = tools().iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "list_codebases",
            "manage_index",
            "search_codebase",
            "file_outline",
            "call_graph",
            "read_file"
        ]
    );
}

/// Walks every schema node, calling `visit(path, node)`.
fn walk(node: &Value, path: &str, visit: &mut dyn FnMut(&str, &Value)) {
    visit(path, node);
    if let Some(items) = node.get("items") {
        walk(items, &format!("{path}[]"), visit);
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            walk(child, &format!("{path}.{name}"), visit);
        }
    }
}

#[test]
fn schemas_are_the_plain_subset_clients_expect() {
    const FORBIDDEN: &[&str] = &[
        "$ref", "$defs", "anyOf", "oneOf", "allOf", "$schema", "title", "format", "nullable",
    ];
    for tool in tools() {
        let schema = &tool.input_schema;
        assert_eq!(schema["type"], "object", "{}", tool.name);
        assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
        assert!(schema["properties"].is_object(), "{}", tool.name);
        assert!(schema.get("description").is_none(), "{}", tool.name);
        walk(schema, tool.name, &mut |path, node| {
            for key in FORBIDDEN {
                assert!(node.get(*key).is_none(), "{path} has {key}");
            }
            let ty = &node["type"];
            assert!(ty.is_string(), "{path}: type must be one name, got {ty}");
            assert_ne!(ty, "null", "{path}");
            if ty == "object" {
                assert_eq!(node["additionalProperties"], false, "{path}");
            }
            if path != tool.name && !path.ends_with("[]") {
                let description = node["description"].as_str().unwrap_or_default();
                assert!(!description.is_empty(), "{path} has no description");
                assert!(
                    !description.contains('\n'),
                    "{path}: description spans lines"
                );
            }
        });
        for required in schema["required"].as_array().into_iter().flatten() {
            let name = required.as_str().expect("required names are strings");
            let prop = &schema["properties"][name];
            if prop["type"] == "string" && prop.get("enum").is_none() {
                assert_eq!(prop["minLength"], 1, "{}.{name}", tool.name);
            }
        }
    }
    assert_eq!(
        schema_of("list_codebases"),
        &json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

/// Every schema node below `node` (properties, items, variants, definitions), with its path.
fn walk_all(node: &Value, path: &str, visit: &mut dyn FnMut(&str, &Value)) {
    visit(path, node);
    for key in ["properties", "$defs"] {
        if let Some(children) = node.get(key).and_then(Value::as_object) {
            for (name, child) in children {
                walk_all(child, &format!("{path}.{name}"), visit);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get(key).filter(|c| c.is_object()) {
            walk_all(child, &format!("{path}.<{key}>"), visit);
        }
    }
    for key in ["prefixItems", "anyOf", "oneOf", "allOf"] {
        for (i, child) in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk_all(child, &format!("{path}.<{key}{i}>"), visit);
        }
    }
}

/// Every published schema, input and output, with the tool and which of the two it is.
fn every_schema() -> Vec<(String, &'static Value)> {
    let mut out = Vec::new();
    for tool in tools() {
        out.push((format!("{}.inputSchema", tool.name), &tool.input_schema));
        if let Some(schema) = &tool.output_schema {
            out.push((format!("{}.outputSchema", tool.name), schema));
        }
    }
    out
}

/// MCP requires an `outputSchema` to be an object schema; ours also refuse unknown keys at
/// every level (only a hint's `args`, which are another tool's arguments, stay open), and
/// refer only to definitions of their own (each `outputSchema` stands alone).
#[test]
fn output_schemas_are_closed_object_schemas() {
    let with_output: Vec<&str> = tools()
        .iter()
        .filter(|t| t.output_schema.is_some())
        .map(|t| t.name)
        .collect();
    assert_eq!(
        with_output,
        [
            "manage_index",
            "search_codebase",
            "file_outline",
            "call_graph",
            "read_file"
        ]
    );
    for tool in tools() {
        let Some(schema) = &tool.output_schema else {
            continue;
        };
        assert_eq!(schema["type"], "object", "{}", tool.name);
        let defs = schema.get("$defs").and_then(Value::as_object);
        walk_all(schema, tool.name, &mut |path, node| {
            for key in ["$schema", "title", "format"] {
                assert!(node.get(key).is_none(), "{path} has {key}");
            }
            if path != tool.name {
                assert!(node.get("$defs").is_none(), "{path}: $defs below the root");
            }
            if let Some(target) = node.get("$ref") {
                let name = target.as_str().and_then(|t| t.strip_prefix("#/$defs/"));
                let known = name.is_some_and(|n| defs.is_some_and(|d| d.contains_key(n)));
                assert!(
                    known,
                    "{path}: $ref {target} is not a definition of this schema"
                );
            }
            let is_object = node["type"] == "object"
                || node["type"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("object")));
            if is_object && node.get("properties").is_some() && !path.ends_with(".args") {
                assert_eq!(
                    node["additionalProperties"], false,
                    "{path} accepts unknown keys"
                );
            }
        });
    }
    // read_file answers in one of four shapes, each closed.
    let read = tool_def("read_file").and_then(|t| t.output_schema.as_ref());
    let variants = read.and_then(|s| s["oneOf"].as_array()).map(Vec::len);
    assert_eq!(variants, Some(4));
}

/// Only keywords a draft-07 validator knows (plus `$defs`, which draft-07 validators accept
/// as a place for definitions): `prefixItems` and the other 2020-12 additions make a strict
/// validator refuse the whole schema, and TypeScript clients validate with one.
#[test]
fn schemas_use_draft_07_keywords_only() {
    const KEYWORDS: &[&str] = &[
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
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
    ];
    for (name, schema) in every_schema() {
        walk_all(schema, &name, &mut |path, node| {
            let Some(map) = node.as_object() else {
                return;
            };
            for key in map.keys() {
                assert!(KEYWORDS.contains(&key.as_str()), "{path} uses {key}");
            }
            if let Some(items) = node.get("items") {
                assert!(items.is_object(), "{path}: items must be one schema");
            }
        });
    }
}

/// No schema anywhere names `prefixItems`, whatever node it would sit in.
#[test]
fn no_schema_has_prefix_items() {
    fn keys_named(value: &Value, name: &str) -> usize {
        match value {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| usize::from(k == name) + keys_named(v, name))
                .sum(),
            Value::Array(items) => items.iter().map(|v| keys_named(v, name)).sum(),
            _ => 0,
        }
    }
    for (name, schema) in every_schema() {
        assert_eq!(keys_named(schema, "prefixItems"), 0, "{name}");
    }
    let file: Value = serde_json::from_str(SCHEMAS_JSON).expect("schemas file is JSON");
    assert_eq!(keys_named(&file, "prefixItems"), 0, "schemas/tools.json");
}

/// Properties of the original server we deliberately do not offer.
const DROPPED_UPSTREAM: &[(&str, &str)] = &[
    // Managed-cloud vector store only; arrives with the scale-out work.
    ("manage_index", "zillizDropCollection"),
];

/// Parameters the contract adds to the original's, each optional, so an original caller
/// never sends them.
const ADDED_TO_UPSTREAM: &[(&str, &str)] = &[
    // The seeds' reranker override (4.6 had removed the knob; its successor restored it).
    ("search_codebase", "useReranker"),
];

/// JSON Schema facts that must agree for a caller of the original server to keep working.
fn lowest_integer(node: &Value) -> Option<i64> {
    match (node.get("minimum"), node.get("exclusiveMinimum")) {
        (Some(min), _) => min.as_i64(),
        (None, Some(excl)) => excl.as_i64().map(|x| x + 1),
        (None, None) => None,
    }
}

#[test]
fn compatible_with_the_original_input_schemas() {
    for tool in tools() {
        let ours = &tool.input_schema;
        let theirs = upstream_schema(tool.name);
        assert_eq!(
            ours["required"], theirs["required"],
            "{} required",
            tool.name
        );
        assert_eq!(
            ours["additionalProperties"], theirs["additionalProperties"],
            "{}",
            tool.name
        );
        let our_props = ours["properties"].as_object().expect("properties");
        let their_props = theirs["properties"].as_object().expect("properties");
        for name in our_props.keys() {
            assert!(
                their_props.contains_key(name)
                    || ADDED_TO_UPSTREAM.contains(&(tool.name, name.as_str())),
                "{}.{name} is new; the original had no such parameter",
                tool.name
            );
        }
        for (name, theirs) in their_props {
            let path = format!("{}.{name}", tool.name);
            let Some(ours) = our_props.get(name) else {
                assert!(
                    DROPPED_UPSTREAM.contains(&(tool.name, name.as_str())),
                    "{path} was dropped without saying so"
                );
                continue;
            };
            compare_property(&path, ours, theirs);
        }
    }
}

fn compare_property(path: &str, ours: &Value, theirs: &Value) {
    assert_eq!(ours["type"], theirs["type"], "{path} type");
    if path == "call_graph.direction" {
        // Documented addition: `bidirectional` is accepted as `both`.
        let mut theirs_plus = theirs["enum"].as_array().expect("enum").clone();
        theirs_plus.push(json!("bidirectional"));
        assert_eq!(ours["enum"], Value::Array(theirs_plus), "{path} enum");
    } else {
        assert_eq!(ours.get("enum"), theirs.get("enum"), "{path} enum");
    }
    assert_eq!(
        ours.get("minLength"),
        theirs.get("minLength"),
        "{path} minLength"
    );
    assert_eq!(ours.get("items"), theirs.get("items"), "{path} items");
    if path == "search_codebase.limit" {
        // The one documented difference: default 10 and max 50 whatever the provider.
        assert_eq!(ours["default"], LIMIT_DEFAULT, "{path}");
        assert_eq!(ours["maximum"], LIMIT_MAX, "{path}");
    } else {
        assert_eq!(ours.get("default"), theirs.get("default"), "{path} default");
        assert_eq!(ours.get("maximum"), theirs.get("maximum"), "{path} maximum");
    }
    assert_eq!(
        lowest_integer(ours),
        lowest_integer(theirs),
        "{path} lower bound"
    );
    if ours["type"] == "object" {
        assert_eq!(ours["required"], theirs["required"], "{path} required");
        let our_props = ours["properties"].as_object().expect("nested properties");
        let their_props = theirs["properties"].as_object().expect("nested properties");
        assert_eq!(
            our_props.keys().collect::<Vec<_>>(),
            their_props.keys().collect::<Vec<_>>(),
            "{path} properties"
        );
        for (name, theirs) in their_props {
            compare_property(&format!("{path}.{name}"), &our_props[name], theirs);
        }
    }
}

/// Enum values in the schema are the Rust enums' values, in the same order.
#[test]
fn enum_types_match_their_schemas() {
    fn values<T: Copy>(all: &[T], as_str: fn(T) -> &'static str) -> Value {
        Value::from(all.iter().map(|v| as_str(*v)).collect::<Vec<_>>())
    }
    let cases = [
        (
            "manage_index",
            "action",
            values(ManageAction::ALL, ManageAction::as_str),
        ),
        (
            "search_codebase",
            "scope",
            values(Scope::ALL, Scope::as_str),
        ),
        (
            "search_codebase",
            "resultMode",
            values(ResultMode::ALL, ResultMode::as_str),
        ),
        (
            "search_codebase",
            "groupBy",
            values(GroupBy::ALL, GroupBy::as_str),
        ),
        (
            "search_codebase",
            "rankingMode",
            values(RankingMode::ALL, RankingMode::as_str),
        ),
        ("read_file", "mode", values(ReadMode::ALL, ReadMode::as_str)),
    ];
    for (tool, field, expected) in cases {
        assert_eq!(
            schema_of(tool)["properties"][field]["enum"],
            expected,
            "{tool}.{field}"
        );
    }
    assert_eq!(ManageAction::from_wire("sync"), Some(ManageAction::Sync));
    assert_eq!(ManageAction::from_wire("Sync"), None);
}

#[test]
fn descriptions_state_the_real_limits() {
    let read = tool_def("read_file").expect("read_file");
    assert!(
        read.description
            .contains(&format!("first {DEFAULT_MAX_LINES} lines"))
    );
    let search = tool_def("search_codebase").expect("search_codebase");
    for operator in ["lang:", "path:", "-path:", "must:", "exclude:", "\\lang:x"] {
        assert!(search.description.contains(operator), "{operator}");
    }
    for field in ["callGraphHint", "navigationFallback", "read_file", "span"] {
        assert!(search.description.contains(field), "{field}");
    }
}
