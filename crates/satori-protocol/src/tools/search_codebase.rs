//! `search_codebase`: semantic + keyword search over an indexed codebase.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{Problem, ToolParams};

/// Tool name.
pub const NAME: &str = "search_codebase";

/// Human-readable title shown by clients.
pub const TITLE: &str = "Search a codebase";

/// Default of `limit`.
pub const LIMIT_DEFAULT: u32 = 10;

/// Largest accepted `limit`. Unlike the original server it does not depend on the embedding
/// provider, so prompts written for one setup keep working on another.
pub const LIMIT_MAX: u32 = 50;

/// Longest accepted `query`, in characters: a pasted function or a whole source file of a few
/// hundred lines fits, and a search's cost (linear in the query's length) stays well under a
/// second.
pub const QUERY_MAX_CHARS: u32 = 32_768;

/// Tool description, written for the model that decides when to call it.
pub const DESCRIPTION: &str = concat!(
    "Search an indexed codebase by meaning and by identifier. Use it first whenever you need to ",
    "find where something is implemented, defined, configured or used. `path` is the indexed root ",
    "or any directory inside it.\n\n",
    "Operators go in a prefix block at the start of `query`, before the search text: ",
    "`lang:rust` (language), `path:src/**` (gitignore-style glob, keep matches), ",
    "`-path:**/tests/**` (drop matches), `must:token` (results must contain it), ",
    "`exclude:token` (results must not contain it). Operators can repeat; quote values that ",
    "contain spaces (`path:\"my dir/**\"`); the first token that is not an operator ends the block; ",
    "a leading backslash keeps a token literal (`\\lang:x` searches for the text \"lang:x\"). ",
    "Example: `lang:python -path:tests/** retry with backoff in the http client`.\n\n",
    "scope: runtime (default: source code, no docs, tests (Rust `mod tests` included) or generated ",
    "files), docs (documentation ",
    "and tests only), mixed (everything). resultMode: grouped (default: one result per symbol or ",
    "file, with its line span and a short preview) or raw (matching chunks with their content).\n\n",
    "Returns a JSON envelope: `status` (ok; not_indexed, not_ready while indexing, requires_reindex, ",
    "each with `hints` holding the call that fixes it) and `results`, best first. A result has ",
    "`file` (relative to the codebase root, which the answer names as `codebaseRoot`), ",
    "`span` {startLine, endLine}, `symbolLabel`, `preview`, ",
    "`stalenessBucket`, and either a `callGraphHint` with a `symbolRef` handle for the symbol or, ",
    "when no symbol is known, a `navigationFallback` with a ready-made read_file call. ",
    "Next step: read_file on the file with start_line/end_line taken from `span`."
);

string_enum! {
    /// Which kinds of files a search considers.
    #[derive(Default)]
    pub enum Scope {
        #[default]
        Runtime = "runtime",
        Mixed = "mixed",
        Docs = "docs",
    }
}

string_enum! {
    /// Grouped results (one per symbol or file) or raw chunks.
    #[derive(Default)]
    pub enum ResultMode {
        #[default]
        Grouped = "grouped",
        Raw = "raw",
    }
}

string_enum! {
    /// What one grouped result stands for.
    #[derive(Default)]
    pub enum GroupBy {
        #[default]
        Symbol = "symbol",
        File = "file",
    }
}

string_enum! {
    /// Whether files changed in the git working tree get a mild boost.
    #[derive(Default)]
    pub enum RankingMode {
        Default = "default",
        #[default]
        AutoChangedFirst = "auto_changed_first",
    }
}

fn default_limit() -> u32 {
    LIMIT_DEFAULT
}

/// Arguments of `search_codebase`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchCodebaseParams {
    /// Absolute path of an indexed codebase root or of any directory inside it (the nearest
    /// indexed root is searched).
    #[schemars(length(min = 1))]
    pub path: String,
    /// What to look for: natural language and/or identifiers, optionally preceded by operators
    /// (lang:, path:, -path:, must:, exclude:). At most 32768 characters.
    #[schemars(length(min = 1, max = QUERY_MAX_CHARS))]
    pub query: String,
    /// Files to search: runtime = source code only; docs = documentation and tests only;
    /// mixed = everything.
    #[serde(default)]
    pub scope: Scope,
    /// grouped = one result per symbol or file with a short preview; raw = individual chunks
    /// with their full content.
    #[serde(default)]
    pub result_mode: ResultMode,
    /// Grouped mode only: symbol = one result per function, class, ...; file = one result per file.
    #[serde(default)]
    pub group_by: GroupBy,
    /// auto_changed_first = mildly boost files modified in the git working tree;
    /// default = relevance only.
    #[serde(default)]
    pub ranking_mode: RankingMode,
    /// Maximum number of results.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = LIMIT_MAX))]
    pub limit: u32,
    /// Add score components to each result and a hints.debugSearch block explaining the query
    /// plan, filters and candidate counts.
    #[serde(default)]
    pub debug: bool,
    /// Rerank the best candidates with the server's reranker: true = always (an error when the
    /// server has none), false = never, omitted = the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_reranker: Option<bool>,
}

impl ToolParams for SearchCodebaseParams {
    const NAME: &'static str = NAME;

    fn check(&self) -> Vec<Problem> {
        // The schema can only say "not empty"; a query of blanks would search for nothing.
        if self.query.trim().is_empty() {
            vec![Problem::new(
                "query",
                "must contain text, not only whitespace",
            )]
        } else {
            Vec::new()
        }
    }
}
