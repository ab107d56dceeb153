//! JSON answers of `read_file` (its plain-mode answer is the file text itself).

use serde::{Deserialize, Serialize};

use super::{Hints, Outline, OutlineSymbol, Status, reasons};
use crate::tools::read_file::ReadMode;

/// Progress of the first indexing of the codebase a file belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexingProgress {
    /// 0 to 100.
    pub progress_pct: f64,
    /// Current phase, when known.
    pub phase: Option<String>,
}

/// `read_file` on a file whose codebase is being indexed for the first time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    pub hints: Hints,
    /// How far it got.
    pub indexing: IndexingProgress,
}

impl ReadFileNotReady {
    /// The not-ready answer; `hints` should hold `status`.
    pub fn new(
        path: impl Into<String>,
        codebase_root: impl Into<String>,
        message: impl Into<String>,
        hints: Hints,
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

/// `read_file` with `mode: "annotated"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnnotatedRead {
    /// File as requested.
    pub path: String,
    /// Always `annotated`.
    pub mode: ReadMode,
    /// The lines read (with the truncation note when cut).
    pub content: String,
    /// Whether the outline could be produced (`ok`, `unsupported`, `requires_reindex`, ...).
    pub outline_status: Status,
    /// Symbols of the file, or null when `outline_status` is not ok.
    pub outline: Option<Outline>,
    /// More symbols exist than were listed.
    pub has_more: bool,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
}

/// `read_file` with `open_symbol` when the symbol cannot be opened (returned with `isError`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenSymbolFailure {
    /// `not_found`, `ambiguous`, `unsupported`, `requires_reindex`, ...
    pub status: Status,
    /// What went wrong and how to proceed.
    pub message: String,
    /// File as requested.
    pub file: String,
    /// Candidates, when the request was ambiguous.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<OutlineSymbol>,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
}
