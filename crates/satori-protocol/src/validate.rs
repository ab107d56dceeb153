//! Argument validation: check a call against the published schema, then deserialize.
//!
//! Serde alone would stop at the first problem and word it in Rust terms ("expected u32").
//! An agent fixing its call wants every problem at once, named by the field it sent, so the
//! arguments are first checked against the same schema subset we publish (the one clients
//! see), all problems collected in schema order, and only then deserialized. Rules a schema
//! cannot express live in [`ToolParams::check`].

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// One thing wrong with the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted path of the field (`open_symbol.start_line`, `customExtensions[2]`), or
    /// `arguments` for the arguments as a whole.
    pub field: String,
    /// What is wrong, e.g. `must be <= 50, got 51`.
    pub message: String,
}

impl Problem {
    /// A problem with `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The arguments of a call are invalid. Displays as the one-line message the contract fixes:
/// `Error: Invalid arguments for '<tool>'. <field>: <problem>; <field>: <problem>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArguments {
    /// Tool that was called.
    pub tool: String,
    /// Every problem found, in schema property order (never empty).
    pub problems: Vec<Problem>,
}

impl InvalidArguments {
    /// An error for `tool` listing `problems`.
    pub fn new(tool: impl Into<String>, problems: Vec<Problem>) -> Self {
        Self {
            tool: tool.into(),
            problems,
        }
    }
}

impl fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error: Invalid arguments for '{}'.", self.tool)?;
        for (i, problem) in self.problems.iter().enumerate() {
            let sep = if i == 0 { " " } else { "; " };
            // The message is one line by contract, whatever a value or serde put into it.
            let text = problem.to_string().replace(['\r', '\n'], " ");
            write!(f, "{sep}{text}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidArguments {}

/// A params type of one tool: its name and the rules its schema cannot express.
pub trait ToolParams: DeserializeOwned {
    /// Wire name of the tool these are the arguments of.
    const NAME: &'static str;

    /// Cross-field problems of already well-typed arguments (empty when fine).
    fn check(&self) -> Vec<Problem> {
        Vec::new()
    }

    /// [`check`](Self::check) as a `Result`.
    fn validate(&self) -> Result<(), InvalidArguments> {
        let problems = self.check();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidArguments::new(Self::NAME, problems))
        }
    }
}

/// Validates `args` (absent = `{}`) against `schema`, collecting every problem, then
/// deserializes them into `T`. Cross-field rules are not applied (the registry's `parse_tool_args` applies them).
pub fn parse_args<T: DeserializeOwned>(
    tool: &str,
    schema: &Value,
    args: Option<&Map<String, Value>>,
) -> Result<T, InvalidArguments> {
    let value = Value::Object(args.cloned().unwrap_or_default());
    let mut problems = Vec::new();
    check_value(schema, &value, "", &mut problems);
    if !problems.is_empty() {
        return Err(InvalidArguments::new(tool, problems));
    }
    // The schema is generated from `T`, so this only fails where the schema is looser than the
    // type (e.g. a line number beyond u32); report it, named by the field, rather than panic.
    serde_path_to_error::deserialize(value).map_err(|err| {
        let field = err.path().to_string();
        let field = if field == "." { "arguments" } else { &field };
        let message = serde_problem(&err.into_inner().to_string());
        InvalidArguments::new(tool, vec![Problem::new(field, message)])
    })
}

/// Serde's words for a problem, in the validator's where they differ: every integer of the
/// contract is a `u32`, so an integer serde refuses is one beyond its range.
fn serde_problem(text: &str) -> String {
    let too_large = text
        .strip_prefix("invalid value: integer `")
        .and_then(|rest| rest.strip_suffix("`, expected u32"));
    match too_large {
        Some(n) => format!("must be <= {}, got {n}", u32::MAX),
        None => text.to_owned(),
    }
}

/// `parent.child`, or `child` at the top level.
fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_owned()
    } else {
        format!("{parent}.{child}")
    }
}

/// The field name used in messages: the path, or `arguments` for the whole object.
fn field_name(path: &str) -> &str {
    if path.is_empty() { "arguments" } else { path }
}

/// A short rendering of a received value for "got ..." messages: scalars verbatim (strings
/// quoted and shortened), containers by kind.
pub(crate) fn describe(value: &Value) -> String {
    const MAX_CHARS: usize = 40;
    match value {
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::String(s) if s.chars().count() > MAX_CHARS => {
            let head: String = s.chars().take(MAX_CHARS).collect();
            format!("{}...", Value::String(head))
        }
        scalar => scalar.to_string(),
    }
}

/// Whether `value` has the JSON Schema `type` named `ty`. Integers are what serde can read
/// into an integer field: `1.0` is not one.
fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => true,
    }
}

fn type_problem(schema: &Value, value: &Value) -> Option<String> {
    let expected: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if expected.iter().any(|t| has_type(value, t)) {
        return None;
    }
    let hint = if value.is_null() {
        " (omit the property instead)"
    } else {
        ""
    };
    Some(format!(
        "expected {}, got {}{hint}",
        expected.join(" or "),
        describe(value)
    ))
}

/// Checks `value` against `schema` (our subset), appending problems under `path`.
fn check_value(schema: &Value, value: &Value, path: &str, out: &mut Vec<Problem>) {
    let field = field_name(path);
    if let Some(problem) = type_problem(schema, value) {
        // Further checks would only repeat the same mistake in other words.
        out.push(Problem::new(field, problem));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        out.push(Problem::new(
            field,
            format!(
                "expected one of {}, got {}",
                list.join(", "),
                describe(value)
            ),
        ));
        return;
    }
    match value {
        Value::String(s) => check_string(schema, s, field, out),
        Value::Number(n) => check_number(schema, n, field, out),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check_value(item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        Value::Object(map) => check_object(schema, map, path, out),
        Value::Bool(_) | Value::Null => {}
    }
}

fn check_string(schema: &Value, s: &str, field: &str, out: &mut Vec<Problem>) {
    let len = s.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        let message = if min == 1 {
            "must not be empty".to_owned()
        } else {
            format!("must be at least {min} characters long, got {len}")
        };
        out.push(Problem::new(field, message));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        out.push(Problem::new(
            field,
            format!("must be at most {max} characters long, got {len}"),
        ));
    }
}

/// A numeric bound keyword, its operator as shown in messages, and the test it makes.
type BoundCheck = (&'static str, &'static str, fn(f64, f64) -> bool);

fn check_number(schema: &Value, n: &serde_json::Number, field: &str, out: &mut Vec<Problem>) {
    let Some(x) = n.as_f64() else {
        return;
    };
    let bound = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_f64)
            .map(|b| (b, &schema[key]))
    };
    let checks: [BoundCheck; 4] = [
        ("minimum", ">=", |x, b| x >= b),
        ("exclusiveMinimum", ">", |x, b| x > b),
        ("maximum", "<=", |x, b| x <= b),
        ("exclusiveMaximum", "<", |x, b| x < b),
    ];
    for (key, op, ok) in checks {
        if let Some((b, shown)) = bound(key)
            && !ok(x, b)
        {
            out.push(Problem::new(
                field,
                format!("must be {op} {shown}, got {n}"),
            ));
        }
    }
}

fn check_object(schema: &Value, map: &Map<String, Value>, path: &str, out: &mut Vec<Problem>) {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Schema order, so the same mistakes always read the same way.
    for (name, prop_schema) in props {
        let child = join(path, name);
        match map.get(name) {
            Some(value) => check_value(prop_schema, value, &child, out),
            None if required.contains(&name.as_str()) => {
                out.push(Problem::new(child, "required property is missing"));
            }
            None => {}
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let mut unknown: Vec<&String> = map.keys().filter(|k| !props.contains_key(*k)).collect();
        unknown.sort();
        let allowed: Vec<&str> = props.keys().map(String::as_str).collect();
        let message = if allowed.is_empty() {
            "unknown property (this takes no arguments)".to_owned()
        } else {
            format!("unknown property (allowed: {})", allowed.join(", "))
        };
        for key in unknown {
            out.push(Problem::new(join(path, key), message.clone()));
        }
    }
}
