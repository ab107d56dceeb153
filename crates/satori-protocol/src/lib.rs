//! Satori's MCP tool contract, shared by the server and every client.
//!
//! - [`tools()`]: the tool registry (names, titles, LLM-facing descriptions, input schemas, and
//!   the output schemas of the tools that answer with `structuredContent`).
//! - Params types (`ManageIndexParams`, `SearchCodebaseParams`, ...) and [`parse_tool_args`],
//!   which validates a call against the published schema and reports every problem in one line.
//! - Envelope types ([`envelope`]): the JSON the tools answer with, as the server builds it;
//!   the output schemas are generated from them.
//! - [`docs`]: the Markdown tool reference generated from the live schemas.
//!
//! This crate depends on nothing of ours and on no MCP SDK, so clients and the server agree on
//! the contract without pulling each other in.

#[macro_use]
mod macros;

pub mod daemon;
pub mod docs;
pub mod env;
pub mod envelope;
mod handle;
pub mod registry;
mod schema;
pub mod tools;
pub mod validate;

/// MCP protocol revision the server and clients speak.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

pub use registry::{
    SCHEMAS_JSON, ToolDef, generated_tools, parse_tool_args, parse_tool_args_value, schemas_json,
    tool_def, tools,
};
pub use tools::call_graph::{self, CallGraphParams, Direction, DirectionArg};
pub use tools::file_outline::{self, FileOutlineParams, ResolveMode};
pub use tools::list_codebases::{self, ListCodebasesParams};
pub use tools::manage_index::{self, ManageAction, ManageIndexParams};
pub use tools::read_file::{self, OpenSymbol, ReadFileParams, ReadMode};
pub use tools::search_codebase::{
    self, GroupBy, RankingMode, ResultMode, Scope, SearchCodebaseParams,
};
pub use validate::{InvalidArguments, Problem, ToolParams, parse_args};

/// Tool names, in registry order.
pub const LIST_CODEBASES: &str = list_codebases::NAME;
/// See [`LIST_CODEBASES`].
pub const MANAGE_INDEX: &str = manage_index::NAME;
/// See [`LIST_CODEBASES`].
pub const SEARCH_CODEBASE: &str = search_codebase::NAME;
/// See [`LIST_CODEBASES`].
pub const READ_FILE: &str = read_file::NAME;
/// Name of the outline tool (arrives in a later release; hints may already point at it).
pub const FILE_OUTLINE: &str = "file_outline";
/// Name of the call-graph tool (arrives in a later release).
pub const CALL_GRAPH: &str = "call_graph";
