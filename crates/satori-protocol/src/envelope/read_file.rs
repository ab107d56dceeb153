//! JSON answers of `read_file`: the read itself (plain or annotated), and the two answers that
//! replace it (the codebase is still being indexed; `open_symbol` found no single symbol).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Hint, Outline, OutlineSymbol, Status, reasons};
use crate::tools::read_file::ReadMode;

/// The next steps of a `read_file` answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadHints {
    /// Poll the indexing of the file's codebase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Hint>,
    /// Read the lines after this window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Hint>,
}

impl ReadHints {
    /// Whether there is no next step.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// Progress of the first indexing of the codebase a file belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IndexingProgress {
    /// 0 to 100.
    pub progress_pct: f64,
    /// Current phase, or null when not known yet.
    pub phase: Option<String>,
}

/// `read_file` on a file whose codebase is being indexed for the first time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadFileNotReady {
    /// Always `not_ready`.
    pub status: Status,
    /// Always `indexing`.
    pub reason: String,
    /// File as requested.
    pub path: String,
    /// Root of the codebase being indexed.
    pub codebase_root: String,
    /// What to do.
    pub message: String,
    /// `status`: poll the indexing.
    pub hints: ReadHints,
    /// How far it got.
    pub indexing: IndexingProgress,
}

impl ReadFileNotReady {
    /// The not-ready answer; `hints` should hold `status`.
    pub fn new(
        path: impl Into<String>,
        codebase_root: impl Into<String>,
        message: impl Into<String>,
        hints: ReadHints,
        indexing: IndexingProgress,
    ) -> Self {
        Self {
            status: Status::NotReady,
            reason: reasons::INDEXING.to_owned(),
            path: path.into(),
            codebase_root: codebase_root.into(),
            message: message.into(),
            hints,
            indexing,
        }
    }
}

/// The lines a read returned, 1-based and inclusive, and the length of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadWindow {
    /// First line returned.
    pub start_line: u32,
    /// Last line returned (`start_line - 1` for an empty file).
    pub end_line: u32,
    /// Lines in the file.
    pub total_lines: u32,
}

/// `read_file` with `mode: "plain"`. The text block of the answer is the file text itself,
/// not this JSON: agents read the lines directly, and clients that read structured output
/// (which MCP requires once a tool declares an `outputSchema`) get the same lines here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlainRead {
    /// File as requested.
    pub path: String,
    /// Always `plain`.
    pub mode: ReadMode,
    /// The lines read (with the truncation note when cut), exactly the text block.
    pub content: String,
    /// Lines exist after `span.endLine`.
    pub has_more: bool,
    /// The lines returned.
    pub span: ReadWindow,
}

/// `read_file` with `mode: "annotated"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnnotatedRead {
    /// File as requested.
    pub path: String,
    /// Absolute root of the file's codebase: every `file` is relative to it. Absent outside
    /// every codebase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codebase_root: Option<String>,
    /// Always `annotated`.
    pub mode: ReadMode,
    /// The lines read (with the truncation note when cut).
    pub content: String,
    /// Whether the outline could be produced (`ok`, `unsupported`, ...).
    pub outline_status: Status,
    /// Symbols of the window, or null when `outline_status` is not ok.
    pub outline: Option<Outline>,
    /// Lines exist after `span.endLine`.
    pub has_more: bool,
    /// The lines returned.
    pub span: ReadWindow,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps (`next`: the following window).
    #[serde(default, skip_serializing_if = "ReadHints::is_empty")]
    pub hints: ReadHints,
}

/// `read_file` with `open_symbol` when the symbol cannot be opened (returned with `isError`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenSymbolFailure {
    /// `not_found` or `ambiguous`.
    pub status: Status,
    /// File as requested (absolute).
    pub path: String,
    /// Absolute root of the file's codebase: every `file` is relative to it. Absent outside
    /// every codebase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codebase_root: Option<String>,
    /// The file relative to `codebaseRoot` (the path as requested outside every codebase).
    pub file: String,
    /// What went wrong and how to proceed.
    pub message: String,
    /// Candidates, when the request was ambiguous.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<OutlineSymbol>,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps.
    #[serde(default, skip_serializing_if = "ReadHints::is_empty")]
    pub hints: ReadHints,
}

/// Every `structuredContent` of `read_file`; the shapes are told apart by their keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(transform = crate::schema::exclusive_variants)]
pub enum ReadFileAnswer {
    /// `mode: "plain"`.
    Plain(PlainRead),
    /// `mode: "annotated"`.
    Annotated(AnnotatedRead),
    /// The codebase is being indexed for the first time.
    NotReady(ReadFileNotReady),
    /// `open_symbol` matched no symbol, or several.
    OpenSymbolFailure(OpenSymbolFailure),
}
