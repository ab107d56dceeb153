//! Tool arguments as command-line flags derived from the tool's live
//! `inputSchema` (`satori-cli search_codebase --path /repo --query auth`).
//!
//! This module is the schema side only, so every client with a command line
//! (the CLI, later `mcat`) maps flags the same way: which spellings a tool
//! accepts ([`ToolFlags::spellings`]), how the flags given become the
//! arguments object ([`ToolFlags::arguments`]), what an unknown flag should
//! have been ([`ToolFlags::unknown_flag`]), and the JSON description of a
//! tool's flags ([`ToolFlags::describe`]). Splitting the command line into
//! flags and values is the caller's parser's job.
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
//!   objects inside objects, arrays of non-primitives, a name no flag can
//!   spell) makes that property unsupported: using it, or having it
//!   required, is [`ClientError::SchemaUnsupported`] with a pointer to
//!   `--args-json`/`--args-file`.
//!
//! Values are converted to the property's type, nothing more: ranges, lengths
//! and the like are the server's to check, so its error message is the one
//! users see.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value, json};

use crate::ClientError;

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

/// How a flag takes its value on a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// One value: `--name value` or `--name=value`, whatever the value looks
    /// like (a query may well start with `-`). The last occurrence wins.
    Value,
    /// Like [`Takes::Value`], and every occurrence adds an array item.
    Repeated,
    /// A boolean: the bare flag means `true`; `--name=false` or a value
    /// after it sets one.
    OptionalValue,
}

/// One flag name a tool accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spelling {
    /// Without the leading `--`.
    pub name: String,
    pub takes: Takes,
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
    pub fn from_tool(tool: &Value) -> Result<ToolFlags, ClientError> {
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
                    shape: if is_flag_name(key) {
                        shape_of(prop)
                    } else {
                        Shape::Unsupported("has a name no flag can spell".into())
                    },
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

    /// The tool's name, as `tools/list` gave it.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Every flag name (without `--`) a command-line parser must accept for
    /// this tool, with how it takes its value. Spellings are unique; a flag
    /// outside this list is answered by [`ToolFlags::unknown_flag`].
    pub fn spellings(&self) -> Vec<Spelling> {
        let mut out = Vec::new();
        for (alias, &index) in &self.aliases {
            let property = &self.properties[index];
            let mut push = |name: String, takes: Takes| {
                // An exact spelling of another property wins over a `-json` form.
                if name == *alias || !self.aliases.contains_key(&name) {
                    out.push(Spelling { name, takes });
                }
            };
            match &property.shape {
                Shape::Scalar(s) if s.primitive == Some(Primitive::Boolean) => {
                    push(alias.clone(), Takes::OptionalValue);
                }
                Shape::Scalar(_) => push(alias.clone(), Takes::Value),
                Shape::Array(_) => push(alias.clone(), Takes::Repeated),
                Shape::Object => push(format!("{alias}-json"), Takes::Value),
                // Accepted only to be refused with the schema's reason.
                Shape::Unsupported(_) => {
                    push(alias.clone(), Takes::OptionalValue);
                    push(format!("{alias}-json"), Takes::OptionalValue);
                }
            }
        }
        out
    }

    /// Turn the flags given, in command-line order, into the arguments
    /// object: `(spelling, value)` pairs, the spelling without `--` and the
    /// value `None` for a bare flag. The first problem in order is reported;
    /// required properties are checked last.
    pub fn arguments<'a>(
        &self,
        given: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Map<String, Value>, ClientError> {
        let mut args = Map::new();
        for (name, value) in given {
            let (property, json_form) = self.lookup(name)?;
            if let Some(misuse) = self.misuse(property, json_form, name) {
                return Err(misuse);
            }
            let flag = format!("--{name}");
            let text = match (value, &property.shape) {
                (Some(text), _) => text,
                (None, Shape::Scalar(s)) if s.primitive == Some(Primitive::Boolean) => "true",
                (None, _) => return Err(invalid(format!("{flag} needs a value"))),
            };
            match &property.shape {
                Shape::Object => {
                    let value = match serde_json::from_str::<Value>(text) {
                        Ok(v @ Value::Object(_)) => v,
                        Ok(_) => return Err(invalid(format!("{flag} must be a JSON object"))),
                        Err(e) => return Err(invalid(format!("{flag} is not valid JSON: {e}"))),
                    };
                    args.insert(property.name.clone(), value);
                }
                Shape::Scalar(scalar) => {
                    args.insert(property.name.clone(), convert(&flag, scalar, text)?);
                }
                Shape::Array(item) => {
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
                // `misuse` refused it above.
                Shape::Unsupported(why) => return Err(self.unsupported_property(property, why)),
            }
        }
        self.check_required(&args)?;
        Ok(args)
    }

    /// Why a command-line token that is not one of [`ToolFlags::spellings`]
    /// was refused: a positional word, a flag of another form (`--x` for an
    /// object, `--x-json` for a string), an unsupported property, or a flag
    /// the tool does not have. `token` is as typed (`--name`, `--name=value`).
    pub fn unknown_flag(&self, token: &str) -> ClientError {
        let Some(body) = token.strip_prefix("--").filter(|b| !b.is_empty()) else {
            return invalid(format!(
                "unexpected argument '{token}' for tool {}: tool arguments are flags (--name value)",
                self.tool
            ));
        };
        let name = body.split_once('=').map_or(body, |(name, _)| name);
        match self.lookup(name) {
            Err(unknown) => unknown,
            Ok((property, json_form)) => {
                self.misuse(property, json_form, name).unwrap_or_else(|| {
                    invalid(format!("unexpected flag --{name} for tool {}", self.tool))
                })
            }
        }
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

    /// Resolve a flag name to its property; the `-json` suffix is handled here.
    fn lookup(&self, name: &str) -> Result<(&Property, bool), ClientError> {
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
        Err(invalid(format!(
            "unknown flag --{name} for tool {}; {known} (global flags go before the tool name)",
            self.tool
        )))
    }

    /// The error for a flag that names a property in the wrong form, or an
    /// unsupported property; `None` when the flag may be used.
    fn misuse(&self, property: &Property, json_form: bool, name: &str) -> Option<ClientError> {
        match (&property.shape, json_form) {
            (Shape::Unsupported(why), _) => Some(self.unsupported_property(property, why)),
            (Shape::Object, false) => Some(invalid(format!(
                "--{name} is an object: give it as --{name}-json '<json object>'"
            ))),
            (Shape::Object, true) => None,
            (_, true) => Some(invalid(format!(
                "unknown flag --{name} for tool {}: only object properties take a -json flag",
                self.tool
            ))),
            (_, false) => None,
        }
    }

    fn check_required(&self, args: &Map<String, Value>) -> Result<(), ClientError> {
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
        Err(invalid(format!(
            "missing required flag{} for tool {}: {}",
            if names.len() == 1 { "" } else { "s" },
            self.tool,
            names.join(", ")
        )))
    }

    fn unsupported_property(&self, property: &Property, why: &str) -> ClientError {
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
    // A property whose own name no flag can spell gets no other spelling either.
    for (index, p) in properties
        .iter()
        .enumerate()
        .filter(|(_, p)| is_flag_name(&p.name))
    {
        let mut spellings = vec![
            p.name.clone(),
            p.name.replace('_', "-"),
            p.name.replace('-', "_"),
            kebab(&p.name),
        ];
        spellings.retain(|s| is_flag_name(s));
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

/// Whether `--<name>` is a flag every parser reads the same way: not empty,
/// no second leading dash, no `=` (it separates the value), no spaces.
fn is_flag_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.contains('=')
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
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

/// Convert one flag value to JSON by the property's type.
fn convert(flag: &str, scalar: &Scalar, text: &str) -> Result<Value, ClientError> {
    if !scalar.choices.is_empty() {
        return scalar
            .choices
            .iter()
            .find(|choice| choice_text(choice) == text)
            .cloned()
            .ok_or_else(|| {
                let allowed: Vec<String> = scalar.choices.iter().map(choice_text).collect();
                invalid(format!(
                    "{flag} must be one of {}, not '{text}'",
                    allowed.join(", ")
                ))
            });
    }
    let bad = |what: &str| invalid(format!("{flag} expects {what}, got '{text}'"));
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

fn invalid(message: String) -> ClientError {
    ClientError::InvalidFlags(message)
}

fn schema_unsupported(message: &str) -> ClientError {
    ClientError::SchemaUnsupported(message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool exercising every shape of the subset and every unsupported one
    /// (the CLI's command-line tests use the same fixture).
    fn demo() -> ToolFlags {
        let tool: Value = serde_json::from_str(include_str!("../tests/fixtures/demo_tool.json"))
            .expect("fixture is JSON");
        ToolFlags::from_tool(&tool).expect("top level is in the subset")
    }

    /// Flags as a command-line parser hands them over: spelling, value.
    type Given<'a> = &'a [(&'a str, Option<&'a str>)];

    fn args(flags: &ToolFlags, given: Given<'_>) -> Result<Value, String> {
        flags
            .arguments(given.iter().copied())
            .map(Value::Object)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn spellings_cover_every_form_once() {
        let spellings = demo().spellings();
        let takes = |name: &str| {
            let found: Vec<Takes> = spellings
                .iter()
                .filter(|s| s.name == name)
                .map(|s| s.takes)
                .collect();
            match found.as_slice() {
                [] => None,
                [one] => Some(*one),
                more => panic!("{name} spelled {} times", more.len()),
            }
        };
        let cases = [
            ("path", Some(Takes::Value)),
            ("start_line", Some(Takes::Value)),
            ("start-line", Some(Takes::Value)),
            ("result-mode", Some(Takes::Value)),
            ("resultMode", Some(Takes::Value)),
            ("debug", Some(Takes::OptionalValue)),
            ("tags", Some(Takes::Repeated)),
            ("open-symbol-json", Some(Takes::Value)),
            ("open_symbol-json", Some(Takes::Value)),
            // Objects only take the JSON form; other properties never do.
            ("open-symbol", None),
            ("path-json", None),
            // Unsupported properties are spelled, to be refused with their reason.
            ("choice", Some(Takes::OptionalValue)),
            ("deep-json", Some(Takes::OptionalValue)),
        ];
        for (name, want) in cases {
            assert_eq!(takes(name), want, "{name}");
        }
    }

    #[test]
    fn arguments_from_flags_in_order() {
        let flags = demo();
        let cases: [(Given<'_>, Value); 4] = [
            // Spellings name one property; the last occurrence wins, in place.
            (
                &[
                    ("start-line", Some("1")),
                    ("path", Some("/r")),
                    ("start_line", Some("2")),
                ],
                json!({"start_line": 2, "path": "/r"}),
            ),
            // A bare boolean is true; arrays keep the order given.
            (
                &[
                    ("path", Some("/r")),
                    ("debug", None),
                    ("tags", Some("zeta")),
                    ("tags", Some("alpha")),
                ],
                json!({"path": "/r", "debug": true, "tags": ["zeta", "alpha"]}),
            ),
            (
                &[("path", Some("/r")), ("debug", Some("false"))],
                json!({"path": "/r", "debug": false}),
            ),
            (
                &[
                    ("path", Some("/r")),
                    ("open-symbol-json", Some(r#"{"symbolId": "s1"}"#)),
                ],
                json!({"path": "/r", "open_symbol": {"symbolId": "s1"}}),
            ),
        ];
        for (given, want) in cases {
            assert_eq!(args(&flags, given), Ok(want), "{given:?}");
        }
    }

    #[test]
    fn refused_flags_say_why() {
        let flags = demo();
        let cases: [(Given<'_>, &str); 4] = [
            (&[], "missing required flag for tool demo: --path"),
            (&[("path", None)], "--path needs a value"),
            (
                &[("path", Some("/r")), ("sizes", Some("x"))],
                "--sizes expects an integer, got 'x'",
            ),
            (
                &[("path", Some("/r")), ("choice", Some("a"))],
                "demo.choice uses oneOf; use --args-json/--args-file",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(args(&flags, given), Err(want.to_owned()), "{given:?}");
        }
    }

    #[test]
    fn unknown_flags_are_explained() {
        let flags = demo();
        let cases = [
            (
                "/r",
                "unexpected argument '/r' for tool demo: tool arguments are flags (--name value)",
            ),
            (
                "--",
                "unexpected argument '--' for tool demo: tool arguments are flags (--name value)",
            ),
            (
                "--open-symbol=x",
                "--open-symbol is an object: give it as --open-symbol-json '<json object>'",
            ),
            (
                "--path-json",
                "unknown flag --path-json for tool demo: only object properties take a -json flag",
            ),
            (
                "--bogus",
                "unknown flag --bogus for tool demo; its flags are --path, --start_line, --resultMode, \
                 --ratio, --debug, --level, --label, --tags, --sizes, --open_symbol-json, --choice, \
                 --linked, --merged, --labels, --deep, --pairs, --loose (global flags go before the tool name)",
            ),
        ];
        for (token, want) in cases {
            let err = flags.unknown_flag(token);
            assert!(
                matches!(err, ClientError::InvalidFlags(_)),
                "{token}: {err:?}"
            );
            assert_eq!(err.to_string(), want, "{token}");
        }
    }

    #[test]
    fn required_unsupported_property_is_a_schema_error_even_when_unused() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object",
            "properties": {"q": {"anyOf": [{"type": "string"}]}}, "required": ["q"]}});
        let flags = ToolFlags::from_tool(&tool).expect("top level is fine");
        let err = flags.arguments([]).expect_err("cannot be satisfied");
        assert!(
            matches!(&err, ClientError::SchemaUnsupported(m) if m == "t.q uses anyOf; use --args-json/--args-file"),
            "{err:?}"
        );
    }

    #[test]
    fn names_no_flag_can_spell_are_unsupported() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "-x": {"type": "string"}, "a=b": {"type": "string"}, "": {"type": "string"},
            "ok": {"type": "string"}}, "required": ["a=b"]}});
        let flags = ToolFlags::from_tool(&tool).expect("top level is fine");
        let names: Vec<String> = flags.spellings().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["ok"]);
        let err = flags
            .arguments([("ok", Some("1"))])
            .expect_err("a=b is required");
        assert!(
            matches!(&err, ClientError::SchemaUnsupported(m)
                if m == "t.a=b has a name no flag can spell; use --args-json/--args-file"),
            "{err:?}"
        );
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
            match ToolFlags::from_tool(&tool).expect_err("unsupported") {
                ClientError::SchemaUnsupported(message) => {
                    assert!(message.starts_with(want), "{message}");
                    assert!(message.ends_with(FALLBACK), "{message}");
                }
                other => panic!("{want}: {other:?}"),
            }
        }
    }

    #[test]
    fn ambiguous_spellings_belong_to_the_exact_name_only() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "a_b": {"type": "string"}, "a-b": {"type": "integer"}}}});
        let flags = ToolFlags::from_tool(&tool).expect("fine");
        assert_eq!(args(&flags, &[("a_b", Some("x"))]), Ok(json!({"a_b": "x"})));
        assert_eq!(args(&flags, &[("a-b", Some("1"))]), Ok(json!({"a-b": 1})));
    }

    #[test]
    fn describe_lists_every_property_with_its_spellings() {
        let d = demo().describe();
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
