//! The Markdown tool reference, generated from the live tool definitions so the README cannot
//! drift from what the server advertises.

use std::fmt::Write as _;

use serde_json::Value;

use crate::registry::ToolDef;

/// Opening marker of the generated section in a README.
pub const START_MARKER: &str = "<!-- TOOLS_START -->";
/// Closing marker of the generated section.
pub const END_MARKER: &str = "<!-- TOOLS_END -->";

/// Renders the tool reference, markers included: per tool a heading, its description, what its
/// structured answers hold (tools with an `outputSchema`), and a parameter table (nested object
/// fields get rows of their own as `parent.child`).
pub fn render_tool_reference(tools: &[ToolDef]) -> String {
    let mut out = String::new();
    out.push_str(START_MARKER);
    out.push_str("\n\n## Tool Reference\n");
    for tool in tools {
        // Writing to a String cannot fail.
        let _ = write!(out, "\n### `{}`\n\n{}\n\n", tool.name, tool.description);
        if let Some(schema) = &tool.output_schema {
            let _ = write!(out, "{}\n\n", structured_output(schema));
        }
        let mut rows = Vec::new();
        collect_rows(&tool.input_schema, "", &mut rows);
        if rows.is_empty() {
            out.push_str("No parameters.\n");
            continue;
        }
        out.push_str("| Parameter | Type | Required | Default | Description |\n");
        out.push_str("|---|---|---|---|---|\n");
        for row in rows {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                row.name,
                cell(&row.ty),
                if row.required { "yes" } else { "no" },
                row.default
                    .map(|d| format!("`{}`", cell(&d)))
                    .unwrap_or_default(),
                cell(&row.description),
            );
        }
    }
    out.push('\n');
    out.push_str(END_MARKER);
    out.push('\n');
    out
}

/// One sentence on a tool's structured answers: the top-level fields of its `outputSchema`, or
/// how many shapes it has.
fn structured_output(schema: &Value) -> String {
    let lead = "Structured output: every answer but the one-line `Error: ...` texts carries `structuredContent` valid against the tool's `outputSchema`";
    if let Some(shapes) = schema.get("oneOf").and_then(Value::as_array) {
        return format!("{lead}, one of {} shapes.", shapes.len());
    }
    let fields: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
        .unwrap_or_default();
    format!("{lead}; top-level fields: {}.", fields.join(", "))
}

/// Replaces the marked section of `readme` (markers included) with `rendered`. `None` when the
/// markers are missing or out of order.
pub fn replace_tool_reference(readme: &str, rendered: &str) -> Option<String> {
    let start = readme.find(START_MARKER)?;
    let end_marker = start + readme[start..].find(END_MARKER)?;
    let mut end = end_marker + END_MARKER.len();
    // `rendered` ends with its own newline; swallow the one after the old marker.
    if readme[end..].starts_with('\n') && rendered.ends_with('\n') {
        end += 1;
    }
    Some(format!(
        "{}{}{}",
        &readme[..start],
        rendered,
        &readme[end..]
    ))
}

struct Row {
    name: String,
    ty: String,
    required: bool,
    default: Option<String>,
    description: String,
}

fn collect_rows(schema: &Value, prefix: &str, rows: &mut Vec<Row>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        let full = format!("{prefix}{name}");
        rows.push(Row {
            name: full.clone(),
            ty: type_label(prop),
            required: required.contains(&name.as_str()),
            default: prop.get("default").map(Value::to_string),
            description: prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
        if prop.get("type").and_then(Value::as_str) == Some("object") {
            collect_rows(prop, &format!("{full}."), rows);
        }
    }
}

/// `string`, `integer (1..50)`, `integer (>= 1)`, `enum("a", "b")`, `array<string>`, `object`.
fn type_label(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("enum({})", list.join(", "));
    }
    let ty = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("any")
        .to_owned();
    match ty.as_str() {
        "array" => {
            let item = schema
                .get("items")
                .map_or_else(|| "any".to_owned(), type_label);
            format!("array<{item}>")
        }
        "integer" | "number" => {
            let min = schema.get("minimum");
            let max = schema.get("maximum");
            match (min, max) {
                (Some(min), Some(max)) => format!("{ty} ({min}..{max})"),
                (Some(min), None) => format!("{ty} (>= {min})"),
                (None, Some(max)) => format!("{ty} (<= {max})"),
                (None, None) => ty,
            }
        }
        _ => ty,
    }
}

/// Text safe inside a table cell: one line, no column breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}
