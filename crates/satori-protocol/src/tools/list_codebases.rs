//! `list_codebases`: which codebases are tracked and in what state (plain-text answer).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::ToolParams;

/// Tool name.
pub const NAME: &str = "list_codebases";

/// Human-readable title shown by clients.
pub const TITLE: &str = "List indexed codebases";

/// Tool description, written for the model that decides when to call it.
pub const DESCRIPTION: &str = concat!(
    "List every codebase Satori tracks and its index state (when the client declares roots, only those inside them). ",
    "Use it to find the absolute root to pass as `path` to search_codebase, ",
    "or to see whether indexing has finished. ",
    "Returns plain text with fixed sections in this order: Ready, Indexing (with percentage), ",
    "Requires Reindex, Failed; paths are sorted within each section. Takes no arguments. ",
    "Next step: search_codebase on a Ready path; manage_index with action=\"create\" for a ",
    "repository that is not listed; manage_index with action=\"reindex\" for one that requires it."
);

/// `list_codebases` takes no arguments; any key is rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListCodebasesParams {}

impl ToolParams for ListCodebasesParams {
    const NAME: &'static str = NAME;
}
