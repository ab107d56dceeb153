//! `read_file`: read a file by line range, by symbol, or annotated with its outline.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{Problem, ToolParams};

/// Tool name.
pub const NAME: &str = "read_file";

/// Human-readable title shown by clients.
pub const TITLE: &str = "Read a file";

/// Lines returned when no range is given (the server's `READ_FILE_MAX_LINES` default).
pub const DEFAULT_MAX_LINES: u32 = 1000;

/// Tool description, written for the model that decides when to call it.
pub const DESCRIPTION: &str = concat!(
    "Read a text file (`path` = absolute path) by 1-based inclusive line range. Use it after ",
    "search_codebase to read the code behind a result: pass the result's span as ",
    "start_line/end_line. Without a range the first 1000 lines come back; with only start_line, ",
    "1000 lines from there; with only end_line, lines 1 to end_line; ranges past the end are ",
    "clamped. A truncated answer ends with a note giving the start_line to continue from.\n\n",
    "mode=\"plain\" (default) returns the text itself; mode=\"annotated\" returns JSON ",
    "{path, mode, content, outlineStatus, outline, hasMore} where outline lists the symbols of the ",
    "file. open_symbol opens one symbol by the symbolId/symbolLabel of a search result instead of ",
    "a line range. Only files inside tracked codebases can be read, and never secrets (.env, ",
    "private keys, credential files, files holding tokens), VCS internals or dependency ",
    "directories: those answer with an error naming the rule. Long windows are also cut at a ",
    "byte cap, with the same continuation note. While a codebase is being ",
    "indexed for the first time the answer is JSON with status \"not_ready\" and a hint to poll ",
    "manage_index status."
);

string_enum! {
    /// Plain text or JSON annotated with the file's outline.
    #[derive(Default)]
    pub enum ReadMode {
        #[default]
        Plain = "plain",
        Annotated = "annotated",
    }
}

/// Which symbol (or span) to open; at least one of `symbolId`, `symbolLabel`, `start_line`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenSymbol {
    /// Exact symbol id, from callGraphHint.symbolRef.symbolId of a search result.
    #[serde(rename = "symbolId", default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub symbol_id: Option<String>,
    /// Symbol label as shown in search results (symbolLabel).
    #[serde(
        rename = "symbolLabel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1))]
    pub symbol_label: Option<String>,
    /// First line of the span to open (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub start_line: Option<u32>,
    /// Last line of the span to open (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub end_line: Option<u32>,
}

/// Arguments of `read_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileParams {
    /// Absolute path of the file to read.
    #[schemars(length(min = 1))]
    pub path: String,
    /// First line to return (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub start_line: Option<u32>,
    /// Last line to return (1-based, inclusive); not less than start_line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub end_line: Option<u32>,
    /// plain = the text itself; annotated = JSON with the text and the file's symbol outline.
    #[serde(default)]
    pub mode: ReadMode,
    /// Open one symbol instead of a line range: symbolId and/or symbolLabel from a search result,
    /// or a span as start_line (and optional end_line). Not combinable with the top-level
    /// start_line/end_line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_symbol: Option<OpenSymbol>,
}

/// `end_line` must not come before `start_line`.
fn check_range(prefix: &str, start: Option<u32>, end: Option<u32>, out: &mut Vec<Problem>) {
    if let (Some(start), Some(end)) = (start, end)
        && end < start
    {
        out.push(Problem::new(
            format!("{prefix}end_line"),
            format!("must be >= start_line ({start}), got {end}"),
        ));
    }
}

impl ToolParams for ReadFileParams {
    const NAME: &'static str = NAME;

    fn check(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        check_range("", self.start_line, self.end_line, &mut problems);
        if let Some(open) = &self.open_symbol {
            if self.start_line.is_some() || self.end_line.is_some() {
                // Two ranges would leave it unclear which one wins.
                problems.push(Problem::new(
                    "open_symbol",
                    "cannot be combined with top-level start_line/end_line; put the span inside open_symbol",
                ));
            }
            if open.symbol_id.is_none() && open.symbol_label.is_none() && open.start_line.is_none()
            {
                problems.push(Problem::new(
                    "open_symbol",
                    "needs at least one of symbolId, symbolLabel, start_line",
                ));
            }
            check_range(
                "open_symbol.",
                open.start_line,
                open.end_line,
                &mut problems,
            );
        }
        problems
    }
}
