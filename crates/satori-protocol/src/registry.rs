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

use crate::envelope::{ManageIndexEnvelope, ReadFileAnswer, SearchEnvelope};
use crate::schema::{input_schema, output_schema};
use crate::tools::{list_codebases, manage_index, read_file, search_codebase};
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
        input_schema: input_schema::<T>(),
        output_schema: None,
        read_only,
        idempotent,
    }
}

impl ToolDef {
    /// The same tool answering with `structuredContent` of type `E`.
    fn answers<E: JsonSchema>(self) -> Self {
        Self {
            output_schema: Some(output_schema::<E>()),
            ..self
        }
    }
}

/// All tools of this release, in registry order, built once per process: the schemas are
/// generated from the types at run time, and both advertising the tools and validating every
/// call need them.
pub fn tools() -> &'static [ToolDef] {
    static TOOLS: OnceLock<Vec<ToolDef>> = OnceLock::new();
    TOOLS.get_or_init(build)
}

/// The definitions of [`tools`], generated.
///
/// `manage_index` is neither read-only nor idempotent (create/clear change state; a second
/// create differs from the first). `search_codebase` may run an incremental sync before
/// searching, but that only brings the index in line with the files, so from the caller's
/// point of view it reads.
fn build() -> Vec<ToolDef> {
    vec![
        def::<list_codebases::ListCodebasesParams>(
            list_codebases::NAME,
            list_codebases::TITLE,
            list_codebases::DESCRIPTION,
            true,
            true,
        ),
        def::<manage_index::ManageIndexParams>(
            manage_index::NAME,
            manage_index::TITLE,
            manage_index::DESCRIPTION,
            false,
            false,
        )
        .answers::<ManageIndexEnvelope>(),
        def::<search_codebase::SearchCodebaseParams>(
            search_codebase::NAME,
            search_codebase::TITLE,
            search_codebase::DESCRIPTION,
            true,
            true,
        )
        .answers::<SearchEnvelope>(),
        def::<read_file::ReadFileParams>(
            read_file::NAME,
            read_file::TITLE,
            read_file::DESCRIPTION,
            true,
            true,
        )
        .answers::<ReadFileAnswer>(),
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
