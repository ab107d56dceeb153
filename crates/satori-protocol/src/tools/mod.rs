//! The tool registry: one module per tool (name, title, description, params) and `tools()`.

pub mod list_codebases;
pub mod manage_index;
pub mod read_file;
pub mod search_codebase;

use schemars::JsonSchema;
use serde_json::Value;

use crate::envelope::{ManageIndexEnvelope, ReadFileAnswer, SearchEnvelope};
use crate::schema::{input_schema, output_schema};

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

/// All tools of this release, in registry order.
///
/// `manage_index` is neither read-only nor idempotent (create/clear change state; a second
/// create differs from the first). `search_codebase` may run an incremental sync before
/// searching, but that only brings the index in line with the files, so from the caller's
/// point of view it reads.
pub fn tools() -> Vec<ToolDef> {
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
