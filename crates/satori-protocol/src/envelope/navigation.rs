//! Navigation: the handles results carry (call-graph hints, read-file fallbacks when no
//! symbol is known), file outlines, and the answers of `file_outline` and `call_graph`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Compatibility, FreshnessDecision, Hint, Span, Status, SymbolRef};
use crate::tools::call_graph::Direction;

string_enum! {
    /// Why a result has no call-graph handle: no symbol is known for its lines, or its
    /// language has no call graph.
    pub enum CallGraphUnsupportedReason {
        MissingSymbol = "missing_symbol",
        UnsupportedLanguage = "unsupported_language",
    }
}

/// `{supported: true, symbolRef}` or `{supported: false, reason}`.
///
/// The wire discriminant is a boolean, which serde's tagged enums cannot express, so the enum
/// converts through a flat struct and refuses the inconsistent combinations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "CallGraphHintWire", into = "CallGraphHintWire")]
#[schemars(with = "CallGraphHintWire")]
pub enum CallGraphHint {
    /// The symbol can be navigated; pass `symbol_ref` on.
    Supported {
        /// The handle.
        symbol_ref: SymbolRef,
    },
    /// No navigation for this result.
    Unsupported {
        /// Why not.
        reason: CallGraphUnsupportedReason,
    },
}

impl CallGraphHint {
    /// Whether a handle is present.
    pub fn is_supported(&self) -> bool {
        matches!(self, Self::Supported { .. })
    }

    /// The handle, when present.
    pub fn symbol_ref(&self) -> Option<&SymbolRef> {
        match self {
            Self::Supported { symbol_ref } => Some(symbol_ref),
            Self::Unsupported { .. } => None,
        }
    }
}

/// The flat wire form (and schema) of [`CallGraphHint`].
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "CallGraphHint")]
struct CallGraphHintWire {
    /// Whether `symbolRef` is given.
    supported: bool,
    /// The handle (when supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    symbol_ref: Option<SymbolRef>,
    /// Why not (when unsupported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<CallGraphUnsupportedReason>,
}

impl From<CallGraphHint> for CallGraphHintWire {
    fn from(hint: CallGraphHint) -> Self {
        match hint {
            CallGraphHint::Supported { symbol_ref } => Self {
                supported: true,
                symbol_ref: Some(symbol_ref),
                reason: None,
            },
            CallGraphHint::Unsupported { reason } => Self {
                supported: false,
                symbol_ref: None,
                reason: Some(reason),
            },
        }
    }
}

impl TryFrom<CallGraphHintWire> for CallGraphHint {
    type Error = &'static str;

    fn try_from(wire: CallGraphHintWire) -> Result<Self, Self::Error> {
        match wire {
            CallGraphHintWire {
                supported: true,
                symbol_ref: Some(symbol_ref),
                reason: None,
            } => Ok(Self::Supported { symbol_ref }),
            CallGraphHintWire {
                supported: false,
                symbol_ref: None,
                reason: Some(reason),
            } => Ok(Self::Unsupported { reason }),
            _ => Err(
                "callGraphHint needs either supported=true with symbolRef or supported=false with reason",
            ),
        }
    }
}

/// Where a result lives, for building other calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavigationContext {
    /// Absolute codebase root.
    pub codebase_root: String,
    /// File relative to the root, `/`-separated.
    pub relative_file: String,
    /// Absolute path of the file.
    pub absolute_path: String,
}

/// Runnable calls to look at a result when the call graph cannot help.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavigationFallback {
    /// What to do, for the reader.
    pub message: String,
    /// Where the result lives.
    pub context: NavigationContext,
    /// `read_file` of the result's span.
    pub read_span: Hint,
    /// `file_outline` of the same window, when the language has outlines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_outline_window: Option<Hint>,
}

/// One symbol of a file outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutlineSymbol {
    /// Stable id.
    pub symbol_id: String,
    /// Display label.
    pub symbol_label: String,
    /// Kind, e.g. `function`, `class`, `method`.
    pub kind: String,
    /// Lines of the symbol.
    pub span: Span,
    /// Handle for navigation.
    pub call_graph_hint: CallGraphHint,
}

/// The symbols of a file, sorted by span, then label, then id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Outline {
    /// Symbols in order.
    pub symbols: Vec<OutlineSymbol>,
}

/// The next steps of a navigation answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavHints {
    /// Index the path first (`not_indexed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<Hint>,
    /// Poll the running indexing (`not_ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Hint>,
    /// Rebuild the index (`requires_reindex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reindex: Option<Hint>,
    /// Search again for a fresh handle (`not_found`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Hint>,
    /// Read the file instead (`unsupported`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_file: Option<Hint>,
}

impl NavHints {
    /// Whether there is no next step.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// The answer of `file_outline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileOutlineEnvelope {
    /// Outcome: ok, not_found, ambiguous (exact mode), unsupported, or a gate's status.
    pub status: Status,
    /// Codebase path as requested.
    pub path: String,
    /// Absolute root of the codebase `path` lies in: every `file` is relative to it. Absent
    /// when the call stopped before using the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codebase_root: Option<String>,
    /// The file relative to the codebase root (as requested when it was not found).
    pub file: String,
    /// The symbols (every candidate when ambiguous), or null when there is no outline.
    pub outline: Option<Outline>,
    /// Symbols were left out by limitSymbols.
    pub has_more: bool,
    /// Machine-readable cause of a non-ok status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Explanation of a non-ok status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps.
    #[serde(default, skip_serializing_if = "NavHints::is_empty")]
    pub hints: NavHints,
    /// Fingerprint check (with `requires_reindex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
}

string_enum! {
    /// What an edge stands for: a call resolved to a definition (constructor calls included),
    /// an import, or a dynamic call.
    pub enum EdgeKind {
        Call = "call",
        Import = "import",
        Dynamic = "dynamic",
    }
}

/// One symbol of a call graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GraphNode {
    /// Stable id (the symbolId of its handle).
    pub symbol_id: String,
    /// Display label.
    pub symbol_label: String,
    /// Kind, e.g. `function`, `method`, `class`.
    pub kind: String,
    /// File relative to the codebase root.
    pub file: String,
    /// Language id.
    pub language: String,
    /// Lines of the symbol.
    pub span: Span,
}

/// Where a call is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallSite {
    /// File relative to the codebase root.
    pub file: String,
    /// Line of the call.
    pub start_line: u32,
}

/// One edge: `src` calls `dst`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GraphEdge {
    /// symbolId of the caller.
    pub src: String,
    /// symbolId of the callee.
    pub dst: String,
    /// What the edge stands for.
    pub kind: EdgeKind,
    /// Where the call is written.
    pub site: CallSite,
    /// 0 to 1: how sure the name resolution is (0.95 same type, 0.9 same file, 0.8 imported
    /// file, 0.7 same directory, 0.6 unique in the codebase, 0.5 one of several overloads).
    pub confidence: f64,
}

/// The answer of `call_graph`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallGraphEnvelope {
    /// Outcome: ok, not_found (stale handle), unsupported, or a gate's status.
    pub status: Status,
    /// Codebase path as requested.
    pub path: String,
    /// Absolute root of the codebase `path` lies in: every `file` is relative to it. Absent
    /// when the call stopped before using the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codebase_root: Option<String>,
    /// Whether the symbol's language has a call graph.
    pub supported: bool,
    /// Effective direction (`bidirectional` is echoed as `both`).
    pub direction: Direction,
    /// Effective depth.
    pub depth: u32,
    /// The handle as requested.
    pub symbol_ref: SymbolRef,
    /// The symbol first, then every symbol reached, by file and line.
    pub nodes: Vec<GraphNode>,
    /// Nearest first, then by call site.
    pub edges: Vec<GraphEdge>,
    /// What resolution could not decide (ambiguous calls, library calls, partial graphs).
    pub notes: Vec<String>,
    /// More edges exist than `limit` allowed.
    pub truncated: bool,
    /// How the index was brought up to date with the files before the graph was read, as
    /// `search_codebase` reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freshness_decision: Option<FreshnessDecision>,
    /// Machine-readable cause of a non-ok status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Explanation of a non-ok status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps.
    #[serde(default, skip_serializing_if = "NavHints::is_empty")]
    pub hints: NavHints,
    /// Fingerprint check (with `requires_reindex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
}
