//! `file_outline`: the symbols of one file with their handles, or one symbol resolved exactly.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{Problem, ToolParams};

/// Tool name.
pub const NAME: &str = "file_outline";

/// Human-readable title shown by clients.
pub const TITLE: &str = "Outline a file";

/// Default of `limitSymbols`.
pub const LIMIT_SYMBOLS_DEFAULT: u32 = 500;

/// Most symbols one answer lists: a larger `limitSymbols` is clamped to it (not refused, so
/// callers written for the original server, which had no maximum, keep working).
pub const LIMIT_SYMBOLS_MAX: u32 = 5000;

/// Tool description, written for the model that decides when to call it.
pub const DESCRIPTION: &str = concat!(
    "List the symbols a file defines (functions, methods, classes, types, constants) with their ",
    "line spans and handles, without reading the file. `path` is the indexed codebase root (or any ",
    "path inside it), `file` the file relative to that root, as search_codebase results give it. ",
    "start_line/end_line limit the outline to symbols overlapping that window.\n\n",
    "resolveMode=\"outline\" (default) lists symbols sorted by span; resolveMode=\"exact\" ",
    "resolves one symbol by symbolIdExact and/or symbolLabelExact (a label or a bare name): ",
    "status ok with the one match, ambiguous with every candidate, or not_found (a handle from ",
    "before an edit that renamed the symbol: search again). Each symbol carries a callGraphHint ",
    "whose symbolRef is what call_graph takes. Other statuses: unsupported (no grammar for the ",
    "file's language: hints.readFile reads it instead), not_found (no such file in the ",
    "codebase), not_indexed / not_ready / requires_reindex with the hint that fixes them. ",
    "Next step: read_file with the symbol's span, or call_graph with its symbolRef."
);

string_enum! {
    /// List the outline, or resolve one symbol.
    #[derive(Default)]
    pub enum ResolveMode {
        #[default]
        Outline = "outline",
        Exact = "exact",
    }
}

fn default_limit_symbols() -> u32 {
    LIMIT_SYMBOLS_DEFAULT
}

/// Arguments of `file_outline`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileOutlineParams {
    /// Absolute path of the indexed codebase root (or of any path inside it).
    #[schemars(length(min = 1))]
    pub path: String,
    /// The file, relative to the codebase root, `/`-separated (the `file` of a search result).
    #[schemars(length(min = 1))]
    pub file: String,
    /// Only symbols that overlap lines from here (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub start_line: Option<u32>,
    /// Only symbols that overlap lines up to here (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub end_line: Option<u32>,
    /// Most symbols listed (at most 5000); hasMore tells when some were left out.
    #[serde(rename = "limitSymbols", default = "default_limit_symbols")]
    #[schemars(range(min = 1))]
    pub limit_symbols: u32,
    /// outline = list the symbols; exact = resolve one symbol by symbolIdExact/symbolLabelExact.
    #[serde(rename = "resolveMode", default)]
    pub resolve_mode: ResolveMode,
    /// Exact mode: the symbolId to resolve.
    #[serde(
        rename = "symbolIdExact",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1))]
    pub symbol_id_exact: Option<String>,
    /// Exact mode: the symbolLabel (or bare name) to resolve.
    #[serde(
        rename = "symbolLabelExact",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1))]
    pub symbol_label_exact: Option<String>,
}

impl ToolParams for FileOutlineParams {
    const NAME: &'static str = NAME;

    fn check(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let (Some(start), Some(end)) = (self.start_line, self.end_line)
            && end < start
        {
            problems.push(Problem::new(
                "end_line",
                format!("must be >= start_line ({start}), got {end}"),
            ));
        }
        let asked = self.symbol_id_exact.is_some() || self.symbol_label_exact.is_some();
        match self.resolve_mode {
            ResolveMode::Exact if !asked => problems.push(Problem::new(
                "resolveMode",
                "exact needs symbolIdExact or symbolLabelExact",
            )),
            ResolveMode::Outline if asked => problems.push(Problem::new(
                "resolveMode",
                "symbolIdExact/symbolLabelExact need resolveMode \"exact\"",
            )),
            _ => {}
        }
        problems
    }
}
