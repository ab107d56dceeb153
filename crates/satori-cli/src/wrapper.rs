//! Wrapper mode: tool arguments as flags derived from the tool's live
//! `inputSchema` (`satori-cli search_codebase --path /repo --query auth`).
//!
//! Deliberately a small subset of JSON Schema, so that every accepted command
//! line maps to exactly one arguments object:
//!
//! - `string`, `number`, `integer`, `boolean` properties, and enums of such
//!   values, are one flag each; the last occurrence wins;
//! - arrays of those are a repeated flag, in the order given;
//! - an object is one `--<key>-json '<json object>'` flag;
//! - `start_line`, `start-line` (and `resultMode`, `result-mode`) name the
//!   same property;
//! - anything else (`oneOf`, `anyOf`, `allOf`, `$ref`, `patternProperties`,
//!   objects inside objects, arrays of non-primitives) makes that property
//!   unsupported: using it, or having it required, is `E_SCHEMA_UNSUPPORTED`
//!   with a pointer to `--args-json`/`--args-file`.
//!
//! Values are converted to the property's type, nothing more: ranges, lengths
//! and the like are the server's to check, so its error message is the one
//! users see.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value, json};

use crate::exit::ErrorCode;
use crate::report::Failure;

/// Keywords that put a schema outside the flag subset.
const UNSUPPORTED_KEYWORDS: &[&str] = &[
    "oneOf",
    "anyOf",
    "allOf",
    "$ref",
    "patternProperties",
    "not",
    "if",
];

/// The fallback every schema error points to.
const FALLBACK: &str = "use --args-json/--args-file";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Primitive {
    String,
    Number,
    Integer,
    Boolean,
}

impl Primitive {
    fn parse(name: &str) -> Option<Primitive> {
        match name {
            "string" => Some(Primitive::String),
            "number" => Some(Primitive::Number),
            "integer" => Some(Primitive::Integer),
            "boolean" => Some(Primitive::Boolean),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Primitive::String => "string",
            Primitive::Number => "number",
            Primitive::Integer => "integer",
            Primitive::Boolean => "boolean",
        }
    }
}

/// One value on the command line: a primitive, optionally restricted to choices.
#[derive(Debug, Clone, PartialEq)]
struct Scalar {
    primitive: Option<Primitive>,
    choices: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Scalar(Scalar),
    /// Repeated flag.
    Array(Scalar),
    /// `--<key>-json`.
    Object,
    /// Why wrapper flags cannot express it.
    Unsupported(String),
}

#[derive(Debug, Clone)]
struct Property {
    name: String,
    shape: Shape,
    required: bool,
    description: Option<String>,
    default: Option<Value>,
}

/// The flags of one tool, derived from its `inputSchema`.
#[derive(Debug)]
pub struct ToolFlags {
    tool: String,
    description: Option<String>,
    properties: Vec<Property>,
    /// Flag name (without `--`) → index in `properties`.
    aliases: BTreeMap<String, usize>,
}

impl ToolFlags {
    /// Read a tool entry of `tools/list`. A schema outside the subset at the
    /// top level disables wrapper mode for the tool.
    pub fn from_tool(tool: &Value) -> Result<ToolFlags, Failure> {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let unsupported =
            |why: &str| schema_unsupported(&format!("{name}.inputSchema {why}; {FALLBACK}"));
        let Some(schema) = tool.get("inputSchema").and_then(Value::as_object) else {
            return Err(unsupported("is missing or not an object"));
        };
        if let Some(keyword) = unsupported_keyword(schema) {
            return Err(unsupported(&format!("uses {keyword}")));
        }
        if schema.get("type").is_some_and(|t| t != "object") {
            return Err(unsupported("does not describe an object"));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties: Vec<Property> = match schema.get("properties") {
            None => Vec::new(),
            Some(Value::Object(props)) => props
                .iter()
                .map(|(key, prop)| Property {
                    name: key.clone(),
                    shape: shape_of(prop),
                    required: required.contains(&key.as_str()),
                    description: prop
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    default: prop.get("default").cloned(),
                })
                .collect(),
            Some(_) => return Err(unsupported("has properties that are not an object")),
        };
        let aliases = alias_table(&properties);
        Ok(ToolFlags {
            tool: name,
            description,
            properties,
            aliases,
        })
    }

    /// Turn the flags after the tool name into the arguments object.
    pub fn parse(&self, flags: &[String]) -> Result<Map<String, Value>, Failure> {
        let mut args = Map::new();
        let mut i = 0;
        while i < flags.len() {
            let token = flags[i].as_str();
            i += 1;
            let Some(body) = token.strip_prefix("--").filter(|b| !b.is_empty()) else {
                return Err(usage(format!(
                    "unexpected argument '{token}' for tool {}: tool arguments are flags (--name value)",
                    self.tool
                )));
            };
            let (name, inline) = match body.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (body, None),
            };
            let (property, json_form) = self.lookup(name)?;
            let flag = format!("--{name}");
            match (&property.shape, json_form) {
                (Shape::Unsupported(why), _) => {
                    return Err(self.unsupported_property(property, why));
                }
                (Shape::Object, true) => {
                    let text = self.value(&flag, inline, flags, &mut i)?;
                    let value = match serde_json::from_str::<Value>(text) {
                        Ok(v @ Value::Object(_)) => v,
                        Ok(_) => return Err(usage(format!("{flag} must be a JSON object"))),
                        Err(e) => return Err(usage(format!("{flag} is not valid JSON: {e}"))),
                    };
                    args.insert(property.name.clone(), value);
                }
                (Shape::Object, false) => {
                    return Err(usage(format!(
                        "{flag} is an object: give it as --{name}-json '<json object>'"
                    )));
                }
                (_, true) => {
                    return Err(usage(format!(
                        "unknown flag {flag} for tool {}: only object properties take a -json flag",
                        self.tool
                    )));
                }
                (Shape::Scalar(scalar), false) => {
                    let text = if scalar.primitive == Some(Primitive::Boolean) {
                        boolean_text(inline, flags, &mut i)
                    } else {
                        self.value(&flag, inline, flags, &mut i)?
                    };
                    let value = convert(&flag, scalar, text)?;
                    args.insert(property.name.clone(), value);
                }
                (Shape::Array(item), false) => {
                    let text = self.value(&flag, inline, flags, &mut i)?;
                    let value = convert(&flag, item, text)?;
                    match args
                        .entry(property.name.clone())
                        .or_insert_with(|| Value::Array(Vec::new()))
                    {
                        Value::Array(items) => items.push(value),
                        // Only this arm ever inserts under an array property's name.
                        other => *other = Value::Array(vec![value]),
                    }
                }
            }
        }
        self.check_required(&args)?;
        Ok(args)
    }

    /// `satori-cli <tool> --help`: the flags as JSON.
    pub fn describe(&self) -> Value {
        let flags: Vec<Value> = self
            .properties
            .iter()
            .map(|p| {
                let mut entry = Map::new();
                let names = self.names_of(p);
                entry.insert("property".into(), json!(p.name));
                match &p.shape {
                    Shape::Scalar(s) | Shape::Array(s) => {
                        entry.insert("flags".into(), json!(names));
                        entry.insert(
                            "type".into(),
                            json!(s.primitive.map_or("any", Primitive::name)),
                        );
                        if !s.choices.is_empty() {
                            entry.insert("enum".into(), json!(s.choices));
                        }
                        if matches!(p.shape, Shape::Array(_)) {
                            entry.insert("repeatable".into(), json!(true));
                        }
                    }
                    Shape::Object => {
                        let json_names: Vec<String> =
                            names.iter().map(|n| format!("{n}-json")).collect();
                        entry.insert("flags".into(), json!(json_names));
                        entry.insert("type".into(), json!("object"));
                    }
                    Shape::Unsupported(why) => {
                        entry.insert("unsupported".into(), json!(format!("{why}; {FALLBACK}")));
                    }
                }
                entry.insert("required".into(), json!(p.required));
                if let Some(d) = &p.default {
                    entry.insert("default".into(), d.clone());
                }
                if let Some(d) = &p.description {
                    entry.insert("description".into(), json!(d));
                }
                Value::Object(entry)
            })
            .collect();
        json!({
            "tool": self.tool,
            "description": self.description,
            "usage": format!("satori-cli {} [flags] | satori-cli {} --args-json '<json>'", self.tool, self.tool),
            "flags": flags,
        })
    }

    /// Resolve a flag name to its property; `-json` suffix handled here.
    fn lookup(&self, name: &str) -> Result<(&Property, bool), Failure> {
        if let Some(&index) = self.aliases.get(name) {
            return Ok((&self.properties[index], false));
        }
        if let Some(base) = name.strip_suffix("-json")
            && let Some(&index) = self.aliases.get(base)
        {
            return Ok((&self.properties[index], true));
        }
        let known: Vec<String> = self
            .properties
            .iter()
            .map(|p| match p.shape {
                Shape::Object => format!("--{}-json", p.name),
                _ => format!("--{}", p.name),
            })
            .collect();
        let known = if known.is_empty() {
            "it takes no arguments".to_owned()
        } else {
            format!("its flags are {}", known.join(", "))
        };
        Err(usage(format!(
            "unknown flag --{name} for tool {}; {known} (global flags go before the tool name)",
            self.tool
        )))
    }

    /// The value of a non-boolean flag: inline after `=` or the next token,
    /// whatever it looks like (a query may well start with `-`).
    fn value<'a>(
        &self,
        flag: &str,
        inline: Option<&'a str>,
        flags: &'a [String],
        i: &mut usize,
    ) -> Result<&'a str, Failure> {
        if let Some(v) = inline {
            return Ok(v);
        }
        match flags.get(*i) {
            Some(v) => {
                *i += 1;
                Ok(v)
            }
            None => Err(usage(format!("{flag} needs a value"))),
        }
    }

    fn check_required(&self, args: &Map<String, Value>) -> Result<(), Failure> {
        let missing: Vec<&Property> = self
            .properties
            .iter()
            .filter(|p| p.required && !args.contains_key(&p.name))
            .collect();
        if let Some(p) = missing
            .iter()
            .find(|p| matches!(p.shape, Shape::Unsupported(_)))
            && let Shape::Unsupported(why) = &p.shape
        {
            return Err(self.unsupported_property(p, why));
        }
        if missing.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = missing
            .iter()
            .map(|p| match p.shape {
                Shape::Object => format!("--{}-json", p.name),
                _ => format!("--{}", p.name),
            })
            .collect();
        Err(usage(format!(
            "missing required flag{} for tool {}: {}",
            if names.len() == 1 { "" } else { "s" },
            self.tool,
            names.join(", ")
        )))
    }

    fn unsupported_property(&self, property: &Property, why: &str) -> Failure {
        schema_unsupported(&format!(
            "{}.{} {why}; {FALLBACK}",
            self.tool, property.name
        ))
    }

    fn names_of(&self, property: &Property) -> Vec<String> {
        self.aliases
            .iter()
            .filter(|(_, i)| self.properties[**i].name == property.name)
            .map(|(alias, _)| format!("--{alias}"))
            .collect()
    }
}

/// Every spelling of every property: the name itself, `_` and `-`
/// swapped, and camelCase as kebab-case. A spelling two properties share is
/// kept only for the property whose exact name it is, so no flag is ambiguous.
fn alias_table(properties: &[Property]) -> BTreeMap<String, usize> {
    let mut claims: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, p) in properties.iter().enumerate() {
        let mut spellings = vec![
            p.name.clone(),
            p.name.replace('_', "-"),
            p.name.replace('-', "_"),
            kebab(&p.name),
        ];
        spellings.sort();
        spellings.dedup();
        for s in spellings {
            claims.entry(s).or_default().push(index);
        }
    }
    claims
        .into_iter()
        .filter_map(|(alias, owners)| match owners.as_slice() {
            [only] => Some((alias, *only)),
            _ => owners
                .iter()
                .find(|&&i| properties[i].name == alias)
                .map(|&i| (alias, i)),
        })
        .collect()
}

/// `resultMode` → `result-mode`; `start_line` → `start-line`.
fn kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else if c == '_' {
            out.push('-');
        } else {
            out.push(c);
        }
    }
    out
}

fn unsupported_keyword(schema: &Map<String, Value>) -> Option<&'static str> {
    UNSUPPORTED_KEYWORDS
        .iter()
        .find(|k| schema.contains_key(**k))
        .copied()
}

/// Classify one property schema.
fn shape_of(schema: &Value) -> Shape {
    let Some(schema) = schema.as_object() else {
        return Shape::Unsupported("has a schema that is not an object".into());
    };
    if let Some(keyword) = unsupported_keyword(schema) {
        return Shape::Unsupported(format!("uses {keyword}"));
    }
    match type_name(schema) {
        Err(why) => Shape::Unsupported(why),
        Ok(Some("array")) => match schema.get("items").and_then(Value::as_object) {
            None => Shape::Unsupported("is an array without an item schema".into()),
            Some(items) => match scalar_of(items) {
                Ok(item) => Shape::Array(item),
                Err(why) => Shape::Unsupported(format!("is an array whose item schema {why}")),
            },
        },
        Ok(Some("object")) => match nested_problem(schema) {
            Some(why) => Shape::Unsupported(format!("is an object that {why}")),
            None => Shape::Object,
        },
        Ok(_) => match scalar_of(schema) {
            Ok(scalar) => Shape::Scalar(scalar),
            Err(why) => Shape::Unsupported(why),
        },
    }
}

/// The single JSON type of a schema; `["T", "null"]` counts as `T`.
fn type_name(schema: &Map<String, Value>) -> Result<Option<&str>, String> {
    match schema.get("type") {
        None => Ok(None),
        Some(Value::String(t)) => Ok(Some(t)),
        Some(Value::Array(types)) => {
            let non_null: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match non_null.as_slice() {
                [one] => Ok(Some(one)),
                _ => Err("has several types".into()),
            }
        }
        Some(_) => Err("has a malformed type".into()),
    }
}

/// A primitive (or enum of primitives) schema; the error says why not.
fn scalar_of(schema: &Map<String, Value>) -> Result<Scalar, String> {
    if let Some(keyword) = unsupported_keyword(schema) {
        return Err(format!("uses {keyword}"));
    }
    let primitive = match type_name(schema)? {
        None => None,
        Some(t) => Some(Primitive::parse(t).ok_or_else(|| format!("is of type {t}"))?),
    };
    let choices = match schema.get("enum") {
        None => Vec::new(),
        Some(Value::Array(values)) => {
            if values.iter().any(|v| v.is_object() || v.is_array()) {
                return Err("has an enum of non-primitive values".into());
            }
            values.clone()
        }
        Some(_) => return Err("has a malformed enum".into()),
    };
    if primitive.is_none() && choices.is_empty() {
        return Err("has no type".into());
    }
    Ok(Scalar { primitive, choices })
}

/// Why an object property cannot be passed as plain JSON, if it cannot:
/// an object inside it is "nested object expansion", out of the subset.
fn nested_problem(schema: &Map<String, Value>) -> Option<String> {
    let props = schema.get("properties").and_then(Value::as_object)?;
    props.iter().find_map(|(key, prop)| {
        let prop = prop.as_object()?;
        if let Some(keyword) = unsupported_keyword(prop) {
            return Some(format!("has a property {key} using {keyword}"));
        }
        match type_name(prop) {
            Ok(Some("object")) => Some(format!("has a nested object {key}")),
            Ok(Some("array")) => {
                let items = prop.get("items").and_then(Value::as_object);
                match items.map(scalar_of) {
                    Some(Ok(_)) => None,
                    _ => Some(format!("has a complex array {key}")),
                }
            }
            Err(why) => Some(format!("has a property {key} that {why}")),
            _ => None,
        }
    })
}

/// A boolean flag's text: inline, a following literal `true`/`false`, or
/// "true" for the bare flag.
fn boolean_text<'a>(inline: Option<&'a str>, flags: &'a [String], i: &mut usize) -> &'a str {
    if let Some(v) = inline {
        return v;
    }
    match flags.get(*i).map(String::as_str) {
        Some(v @ ("true" | "false")) => {
            *i += 1;
            v
        }
        _ => "true",
    }
}

/// Convert one flag value to JSON by the property's type.
fn convert(flag: &str, scalar: &Scalar, text: &str) -> Result<Value, Failure> {
    if !scalar.choices.is_empty() {
        return scalar
            .choices
            .iter()
            .find(|choice| choice_text(choice) == text)
            .cloned()
            .ok_or_else(|| {
                let allowed: Vec<String> = scalar.choices.iter().map(choice_text).collect();
                usage(format!(
                    "{flag} must be one of {}, not '{text}'",
                    allowed.join(", ")
                ))
            });
    }
    let bad = |what: &str| usage(format!("{flag} expects {what}, got '{text}'"));
    match scalar.primitive {
        Some(Primitive::String) | None => Ok(Value::String(text.to_owned())),
        Some(Primitive::Boolean) => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(bad("true or false")),
        },
        Some(Primitive::Integer) => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| bad("an integer")),
        Some(Primitive::Number) => {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Value::from(n));
            }
            text.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| bad("a number"))
        }
    }
}

fn choice_text(choice: &Value) -> String {
    match choice {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn usage(message: String) -> Failure {
    Failure::new(ErrorCode::Usage, message)
}

fn schema_unsupported(message: &str) -> Failure {
    Failure::new(ErrorCode::SchemaUnsupported, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool exercising every shape of the subset and every unsupported one.
    fn tool() -> Value {
        json!({
            "name": "demo",
            "description": "A demo tool.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start_line": {"type": "integer"},
                    "resultMode": {"type": "string", "enum": ["grouped", "raw"]},
                    "ratio": {"type": "number"},
                    "debug": {"type": "boolean"},
                    "level": {"enum": [1, 2, 3]},
                    "label": {"type": ["string", "null"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "sizes": {"type": "array", "items": {"type": "integer"}},
                    "open_symbol": {"type": "object", "properties": {"symbolId": {"type": "string"}}},
                    "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                    "linked": {"$ref": "#/defs/x"},
                    "merged": {"allOf": [{"type": "string"}, {"minLength": 1}]},
                    "labels": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}},
                    "deep": {"type": "object", "properties": {"inner": {"type": "object"}}},
                    "pairs": {"type": "array", "items": {"type": "object"}},
                    "loose": {"description": "no type at all"}
                },
                "required": ["path"]
            }
        })
    }

    fn check(line: &str) -> Result<Value, String> {
        let flags = ToolFlags::from_tool(&tool()).map_err(|f| f.message)?;
        let args: Vec<String> = shell_words(line);
        flags
            .parse(&args)
            .map(Value::Object)
            .map_err(|f| format!("{}: {}", f.code.token(), f.message))
    }

    /// Split on spaces, keeping single-quoted parts together (enough for these cases).
    fn shell_words(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut current = String::new();
        let mut quoted = false;
        let mut started = false;
        for c in line.chars() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    started = true;
                }
                ' ' if !quoted => {
                    if started {
                        words.push(std::mem::take(&mut current));
                        started = false;
                    }
                }
                c => {
                    current.push(c);
                    started = true;
                }
            }
        }
        if started {
            words.push(current);
        }
        words
    }

    #[test]
    fn accepted_flag_lines() {
        let cases = [
            ("--path /r", json!({"path": "/r"})),
            ("--path=/r", json!({"path": "/r"})),
            // Aliases name one property; the last occurrence wins, in place.
            (
                "--path /r --start_line 3 --start-line 9",
                json!({"path": "/r", "start_line": 9}),
            ),
            (
                "--start-line=1 --path /r --start_line=2",
                json!({"start_line": 2, "path": "/r"}),
            ),
            (
                "--path /r --result-mode raw --resultMode grouped",
                json!({"path": "/r", "resultMode": "grouped"}),
            ),
            // Arrays keep the order given, never sorted.
            (
                "--path /r --tags zeta --tags alpha --tags zeta",
                json!({"path": "/r", "tags": ["zeta", "alpha", "zeta"]}),
            ),
            (
                "--path /r --sizes 3 --sizes=1",
                json!({"path": "/r", "sizes": [3, 1]}),
            ),
            // Booleans: bare, inline, or a following literal.
            ("--path /r --debug", json!({"path": "/r", "debug": true})),
            (
                "--debug false --path /r",
                json!({"debug": false, "path": "/r"}),
            ),
            (
                "--path /r --debug=false",
                json!({"path": "/r", "debug": false}),
            ),
            // Numbers and typed enums.
            ("--path /r --ratio 0.5", json!({"path": "/r", "ratio": 0.5})),
            ("--path /r --ratio 2", json!({"path": "/r", "ratio": 2})),
            ("--path /r --level 2", json!({"path": "/r", "level": 2})),
            ("--path /r --label x", json!({"path": "/r", "label": "x"})),
            // A value may start with a dash.
            (
                "--path -weird --label --not-a-flag",
                json!({"path": "-weird", "label": "--not-a-flag"}),
            ),
            // Objects only as -json, under either spelling.
            (
                r#"--path /r --open-symbol-json '{"symbolId": "s1"}'"#,
                json!({"path": "/r", "open_symbol": {"symbolId": "s1"}}),
            ),
            (
                r#"--path /r --open_symbol-json={"symbolId":"s2"}"#,
                json!({"path": "/r", "open_symbol": {"symbolId": "s2"}}),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(check(line), Ok(want), "{line}");
        }
    }

    #[test]
    fn rejected_flag_lines() {
        let cases = [
            ("", "E_USAGE: missing required flag for tool demo: --path"),
            (
                "--start-line 1",
                "E_USAGE: missing required flag for tool demo: --path",
            ),
            (
                "--path /r --bogus 1",
                "E_USAGE: unknown flag --bogus for tool demo; its flags are --path",
            ),
            ("--path", "E_USAGE: --path needs a value"),
            ("/r", "E_USAGE: unexpected argument '/r' for tool demo"),
            (
                "--path /r --start-line ten",
                "E_USAGE: --start-line expects an integer, got 'ten'",
            ),
            (
                "--path /r --ratio NaNx",
                "E_USAGE: --ratio expects a number, got 'NaNx'",
            ),
            (
                "--path /r --result-mode fancy",
                "E_USAGE: --result-mode must be one of grouped, raw, not 'fancy'",
            ),
            (
                "--path /r --level 7",
                "E_USAGE: --level must be one of 1, 2, 3, not '7'",
            ),
            (
                "--path /r --debug=maybe",
                "E_USAGE: --debug expects true or false, got 'maybe'",
            ),
            (
                "--path /r --open-symbol x",
                "E_USAGE: --open-symbol is an object: give it as --open-symbol-json '<json object>'",
            ),
            (
                "--path /r --open-symbol-json [1]",
                "E_USAGE: --open-symbol-json must be a JSON object",
            ),
            (
                "--path /r --open-symbol-json {nope",
                "E_USAGE: --open-symbol-json is not valid JSON",
            ),
            (
                "--path-json {}",
                "E_USAGE: unknown flag --path-json for tool demo: only object properties take a -json flag",
            ),
            (
                "--path /r --choice a",
                "E_SCHEMA_UNSUPPORTED: demo.choice uses oneOf; use --args-json/--args-file",
            ),
            (
                "--path /r --linked a",
                "E_SCHEMA_UNSUPPORTED: demo.linked uses $ref; use --args-json/--args-file",
            ),
            (
                "--path /r --merged a",
                "E_SCHEMA_UNSUPPORTED: demo.merged uses allOf; use --args-json/--args-file",
            ),
            (
                r#"--path /r --labels-json {}"#,
                "E_SCHEMA_UNSUPPORTED: demo.labels uses patternProperties; use --args-json/--args-file",
            ),
            (
                r#"--path /r --deep-json {}"#,
                "E_SCHEMA_UNSUPPORTED: demo.deep is an object that has a nested object inner; use --args-json/--args-file",
            ),
            (
                "--path /r --pairs a",
                "E_SCHEMA_UNSUPPORTED: demo.pairs is an array whose item schema is of type object; use --args-json/--args-file",
            ),
            (
                "--path /r --loose a",
                "E_SCHEMA_UNSUPPORTED: demo.loose has no type; use --args-json/--args-file",
            ),
        ];
        for (line, want) in cases {
            let got = check(line).expect_err(line);
            assert!(got.starts_with(want), "{line}:\n got {got}\nwant {want}");
        }
    }

    #[test]
    fn required_unsupported_property_is_a_schema_error_even_when_unused() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object",
            "properties": {"q": {"anyOf": [{"type": "string"}]}}, "required": ["q"]}});
        let flags = ToolFlags::from_tool(&tool).expect("top level is fine");
        let err = flags.parse(&[]).expect_err("cannot be satisfied");
        assert_eq!(err.code, ErrorCode::SchemaUnsupported);
        assert_eq!(err.message, "t.q uses anyOf; use --args-json/--args-file");
    }

    #[test]
    fn unsupported_top_level_schemas() {
        let cases = [
            (
                json!({"name": "t"}),
                "t.inputSchema is missing or not an object",
            ),
            (
                json!({"name": "t", "inputSchema": {"oneOf": []}}),
                "t.inputSchema uses oneOf",
            ),
            (
                json!({"name": "t", "inputSchema": {"type": "array"}}),
                "t.inputSchema does not describe an object",
            ),
        ];
        for (tool, want) in cases {
            let err = ToolFlags::from_tool(&tool).expect_err("unsupported");
            assert_eq!(err.code, ErrorCode::SchemaUnsupported);
            assert!(err.message.starts_with(want), "{}", err.message);
            assert!(err.message.ends_with(FALLBACK), "{}", err.message);
        }
    }

    #[test]
    fn ambiguous_spellings_belong_to_the_exact_name_only() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "a_b": {"type": "string"}, "a-b": {"type": "integer"}}}});
        let flags = ToolFlags::from_tool(&tool).expect("fine");
        let args = |line: &str| {
            flags
                .parse(&line.split(' ').map(str::to_owned).collect::<Vec<_>>())
                .map(Value::Object)
                .map_err(|f| f.message)
        };
        assert_eq!(args("--a_b x"), Ok(json!({"a_b": "x"})));
        assert_eq!(args("--a-b 1"), Ok(json!({"a-b": 1})));
    }

    #[test]
    fn describe_lists_every_property_with_its_spellings() {
        let flags = ToolFlags::from_tool(&tool()).expect("fine");
        let d = flags.describe();
        let entry = |name: &str| {
            d["flags"]
                .as_array()
                .and_then(|a| a.iter().find(|e| e["property"] == name))
                .cloned()
                .unwrap_or_else(|| panic!("{name} described"))
        };
        assert_eq!(
            entry("start_line")["flags"],
            json!(["--start-line", "--start_line"])
        );
        assert_eq!(
            entry("resultMode")["flags"],
            json!(["--result-mode", "--resultMode"])
        );
        assert_eq!(
            entry("open_symbol")["flags"],
            json!(["--open-symbol-json", "--open_symbol-json"])
        );
        assert_eq!(entry("tags")["repeatable"], json!(true));
        assert_eq!(entry("path")["required"], json!(true));
        assert_eq!(
            entry("choice")["unsupported"],
            json!("uses oneOf; use --args-json/--args-file")
        );
    }
}
