//! The handles both sides of the contract use: a line span, and a symbol reference that
//! search results hand out and `call_graph` takes back. Parameters and envelopes both need
//! them, so they sit below both.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A line span, 1-based and inclusive.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Span {
    /// First line.
    #[schemars(range(min = 1))]
    pub start_line: u32,
    /// Last line.
    #[schemars(range(min = 1))]
    pub end_line: u32,
}

impl Span {
    /// `start_line..=end_line`.
    pub const fn new(start_line: u32, end_line: u32) -> Self {
        Self {
            start_line,
            end_line,
        }
    }
}

/// A handle on one symbol, as `call_graph` and `read_file.open_symbol` take it. The id
/// survives edits that move the symbol; a renamed symbol or file needs a fresh handle from
/// search_codebase or file_outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SymbolRef {
    /// File relative to the codebase root, `/`-separated.
    #[schemars(length(min = 1))]
    pub file: String,
    /// Stable id of the symbol.
    #[schemars(length(min = 1))]
    pub symbol_id: String,
    /// Display label, e.g. `fn parse_query`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_label: Option<String>,
    /// Lines of the symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
}
