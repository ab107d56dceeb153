//! The tool registry: every tool's definition (name, title, description, schemas, hints) in
//! registry order, and the calls that need a definition by name.
//!
//! It sits above the tool modules and the envelopes and depends on both: a tool module knows
//! its parameters and the rules they follow (`validate`), an envelope knows the parameter
//! enums it echoes, and only this module puts each tool together with the envelope it answers
//! with. Nothing below it reaches back up, so the three stay in one direction.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::envelope::{
    CallGraphEnvelope, FileOutlineEnvelope, ManageIndexEnvelope, ReadFileAnswer, SearchEnvelope,
};
use crate::schema::{input_schema, output_schema};
use crate::tools::{
    call_graph, file_outline, list_codebases, manage_index, read_file, search_codebase,
};
use crate::validate::{InvalidArguments, Problem, ToolParams, describe, parse_args};

/// Everything a server needs to advertise one tool and a client needs to drive it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Wire name, e.g. `search_codebase`.
    pub name: &'static str,
    /// Short human-readable title.
    pub title: &'static str,
    /// Description written for an LLM: when to use the tool, what comes back, the next step.
    pub description: &'static str,
    /// JSON Schema (2020-12 subset, fully inlined) of the arguments object.
    pub input_schema: Value,
    /// JSON Schema of the `structuredContent` of every answer, generated from the envelope
    /// type the server builds (`None`: the tool answers in plain text only).
    pub output_schema: Option<Value>,
    /// The tool does not modify anything (MCP `readOnlyHint`).
    pub read_only: bool,
    /// Repeating the call with the same arguments has no further effect (MCP `idempotentHint`).
    pub idempotent: bool,
}

fn def<T: JsonSchema>(
    schemas: Schemas,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    read_only: bool,
    idempotent: bool,
) -> ToolDef {
    ToolDef {
        name,
        title,
        description,
        input_schema: match schemas {
            Schemas::Generate => input_schema::<T>(),
            Schemas::CheckedIn => Value::Null,
        },
        output_schema: None,
        read_only,
        idempotent,
    }
}

impl ToolDef {
    /// The same tool answering with `structuredContent` of type `E`.
    fn answers<E: JsonSchema>(self, schemas: Schemas) -> Self {
        Self {
            output_schema: Some(match schemas {
                Schemas::Generate => output_schema::<E>(),
                Schemas::CheckedIn => Value::Null,
            }),
            ..self
        }
    }
}

/// The schemas of every tool as [`generated_tools`] makes them, checked in (a test fails
/// when the file and the types drift apart): parsing them costs a process a small part of
/// generating them, and every `satori-cli` call starts a server that advertises them.
pub const SCHEMAS_JSON: &str = include_str!("../schemas/tools.json");

/// All tools of this release, in registry order, built once per process: both advertising
/// the tools and validating every call need them.
pub fn tools() -> &'static [ToolDef] {
    static TOOLS: OnceLock<Vec<ToolDef>> = OnceLock::new();
    TOOLS.get_or_init(|| with_checked_in_schemas().unwrap_or_else(generated_tools))
}

/// The definitions of [`tools`] with their schemas generated from the types (slow: for the
/// drift test and for writing [`SCHEMAS_JSON`]).
pub fn generated_tools() -> Vec<ToolDef> {
    build(Schemas::Generate)
}

/// [`SCHEMAS_JSON`] as written from [`generated_tools`]: one object per tool with its name
/// and schemas, pretty-printed, ending in a newline.
pub fn schemas_json(defs: &[ToolDef]) -> String {
    let list: Vec<Value> = defs
        .iter()
        .map(|d| {
            let mut m = Map::new();
            m.insert("name".into(), Value::from(d.name));
            m.insert("inputSchema".into(), d.input_schema.clone());
            if let Some(out) = &d.output_schema {
                m.insert("outputSchema".into(), out.clone());
            }
            Value::Object(m)
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&list).unwrap_or_default();
    text.push('\n');
    text
}

/// The definitions with the checked-in schemas; `None` if the file does not fit them (never
/// in a tested build: the schemas are then generated instead).
fn with_checked_in_schemas() -> Option<Vec<ToolDef>> {
    let file: Vec<Value> = serde_json::from_str(SCHEMAS_JSON).ok()?;
    let mut defs = build(Schemas::CheckedIn);
    if file.len() != defs.len() {
        return None;
    }
    for (def, entry) in defs.iter_mut().zip(file) {
        let Value::Object(mut entry) = entry else {
            return None;
        };
        if entry.get("name").and_then(Value::as_str) != Some(def.name) {
            return None;
        }
        def.input_schema = entry.remove("inputSchema")?;
        if def.output_schema.is_some() {
            def.output_schema = Some(entry.remove("outputSchema")?);
        }
    }
    Some(defs)
}

/// Where a definition's schemas come from.
#[derive(Clone, Copy)]
enum Schemas {
    /// From the types, through schemars.
    Generate,
    /// Left empty, to be filled from [`SCHEMAS_JSON`].
    CheckedIn,
}

/// The definitions of [`tools`].
///
/// `manage_index` is neither read-only nor idempotent (create/clear change state; a second
/// create differs from the first). `search_codebase` may run an incremental sync before
/// searching, but that only brings the index in line with the files, so from the caller's
/// point of view it reads.
fn build(schemas: Schemas) -> Vec<ToolDef> {
    vec![
        def::<list_codebases::ListCodebasesParams>(
            schemas,
            list_codebases::NAME,
            list_codebases::TITLE,
            list_codebases::DESCRIPTION,
            true,
            true,
        ),
        def::<manage_index::ManageIndexParams>(
            schemas,
            manage_index::NAME,
            manage_index::TITLE,
            manage_index::DESCRIPTION,
            false,
            false,
        )
        .answers::<ManageIndexEnvelope>(schemas),
        def::<search_codebase::SearchCodebaseParams>(
            schemas,
            search_codebase::NAME,
            search_codebase::TITLE,
            search_codebase::DESCRIPTION,
            true,
            true,
        )
        .answers::<SearchEnvelope>(schemas),
        def::<file_outline::FileOutlineParams>(
            schemas,
            file_outline::NAME,
            file_outline::TITLE,
            file_outline::DESCRIPTION,
            true,
            true,
        )
        .answers::<FileOutlineEnvelope>(schemas),
        def::<call_graph::CallGraphParams>(
            schemas,
            call_graph::NAME,
            call_graph::TITLE,
            call_graph::DESCRIPTION,
            true,
            true,
        )
        .answers::<CallGraphEnvelope>(schemas),
        def::<read_file::ReadFileParams>(
            schemas,
            read_file::NAME,
            read_file::TITLE,
            read_file::DESCRIPTION,
            true,
            true,
        )
        .answers::<ReadFileAnswer>(schemas),
    ]
}

/// The definition of the tool called `name`, if it exists.
pub fn tool_def(name: &str) -> Option<&'static ToolDef> {
    tools().iter().find(|t| t.name == name)
}

/// Validates `args` (absent = `{}`) for the tool `tool_name` against its published schema,
/// deserializes them and applies the tool's cross-field rules. This is the one call a server
/// makes per tool invocation.
pub fn parse_tool_args<T: ToolParams>(
    tool_name: &str,
    args: Option<&Map<String, Value>>,
) -> Result<T, InvalidArguments> {
    debug_assert_eq!(
        tool_name,
        T::NAME,
        "params type does not belong to this tool"
    );
    let Some(def) = tool_def(tool_name) else {
        return Err(InvalidArguments::new(
            tool_name,
            vec![Problem::new("tool", "no such tool")],
        ));
    };
    let params: T = parse_args(tool_name, &def.input_schema, args)?;
    params.validate()?;
    Ok(params)
}

/// Like [`parse_tool_args`] for arguments that arrive as any JSON value (a client reading
/// `--args-json`): `null` means no arguments, anything else but an object is an error.
pub fn parse_tool_args_value<T: ToolParams>(
    tool_name: &str,
    args: &Value,
) -> Result<T, InvalidArguments> {
    match args {
        Value::Null => parse_tool_args(tool_name, None),
        Value::Object(map) => parse_tool_args(tool_name, Some(map)),
        other => Err(InvalidArguments::new(
            tool_name,
            vec![Problem::new(
                "arguments",
                format!("expected object, got {}", describe(other)),
            )],
        )),
    }
}
