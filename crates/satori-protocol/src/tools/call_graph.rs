//! `call_graph`: the callers and callees of a symbol, from a handle search or outline gave.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::handle::SymbolRef;
use crate::validate::{Problem, ToolParams};

/// Tool name.
pub const NAME: &str = "call_graph";

/// Human-readable title shown by clients.
pub const TITLE: &str = "Callers and callees of a symbol";

/// Default of `depth`.
pub const DEPTH_DEFAULT: u32 = 1;
/// Largest accepted `depth`.
pub const DEPTH_MAX: u32 = 3;
/// Default of `limit` (edges).
pub const LIMIT_DEFAULT: u32 = 20;
/// Most edges one answer carries: a larger `limit` is clamped to it (the original server had
/// no maximum, so refusing would break its callers).
pub const LIMIT_MAX: u32 = 200;

/// Tool description, written for the model that decides when to call it.
pub const DESCRIPTION: &str = concat!(
    "Who calls a symbol and what it calls, without reading files. Pass `symbolRef` exactly as ",
    "a search_codebase result's callGraphHint.symbolRef or a file_outline symbol gives it; ",
    "`path` is the indexed codebase root. direction: callers, callees or both (default; ",
    "\"bidirectional\" means both); depth 1 to 3 steps; limit caps the edges (truncated=true and ",
    "a note when cut).\n\n",
    "Returns `nodes` (the symbol first, then every symbol reached, with file, span and label) ",
    "and `edges` {src, dst, kind, site {file, startLine}, confidence}. The graph comes from ",
    "syntax, not from a compiler: a call is matched to a definition by name, preferring the ",
    "caller's own type and file, then imported files, then its directory, then a unique ",
    "definition anywhere, and `confidence` (0.5 to 0.95) says which; calls that could mean ",
    "several definitions, and library calls, are listed in `notes` instead of drawn. status ",
    "not_found means the handle is stale (the symbol was renamed or its file moved): search ",
    "again for a fresh one. Next step: read_file with open_symbol or a node's span."
);

string_enum! {
    /// Which way to walk from the symbol.
    #[derive(Default)]
    pub enum Direction {
        Callers = "callers",
        Callees = "callees",
        #[default]
        Both = "both",
    }
}

/// `direction` as callers write it: the three directions, and `bidirectional` for `both` (the
/// original server's word). Answers echo the [`Direction`] it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum DirectionArg {
    #[serde(rename = "callers")]
    Callers,
    #[serde(rename = "callees")]
    Callees,
    #[default]
    #[serde(rename = "both")]
    Both,
    #[serde(rename = "bidirectional")]
    Bidirectional,
}

impl DirectionArg {
    /// The direction meant.
    pub fn direction(self) -> Direction {
        match self {
            DirectionArg::Callers => Direction::Callers,
            DirectionArg::Callees => Direction::Callees,
            DirectionArg::Both | DirectionArg::Bidirectional => Direction::Both,
        }
    }
}

fn default_depth() -> u32 {
    DEPTH_DEFAULT
}

fn default_limit() -> u32 {
    LIMIT_DEFAULT
}

/// Arguments of `call_graph`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CallGraphParams {
    /// Absolute path of the indexed codebase root (or of any path inside it).
    #[schemars(length(min = 1))]
    pub path: String,
    /// The symbol: callGraphHint.symbolRef of a search result, or a file_outline symbol's.
    pub symbol_ref: SymbolRef,
    /// callers, callees, or both (bidirectional is accepted for both).
    #[serde(default)]
    pub direction: DirectionArg,
    /// Steps to walk from the symbol, 1 to 3.
    #[serde(default = "default_depth")]
    #[schemars(range(min = 1, max = DEPTH_MAX))]
    pub depth: u32,
    /// Most edges returned (at most 200).
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1))]
    pub limit: u32,
}

impl ToolParams for CallGraphParams {
    const NAME: &'static str = NAME;

    fn check(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.symbol_ref.file.trim().is_empty() {
            problems.push(Problem::new("symbolRef.file", "must not be blank"));
        }
        if self.symbol_ref.symbol_id.trim().is_empty() {
            problems.push(Problem::new("symbolRef.symbolId", "must not be blank"));
        }
        problems
    }
}
