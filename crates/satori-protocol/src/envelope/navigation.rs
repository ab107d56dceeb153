//! Navigation handles carried by results: symbol references for the call graph, read-file
//! fallbacks when no symbol is known, and file outlines.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Hint, Span};

/// A handle on one symbol, as `call_graph` and `read_file.open_symbol` take it. Handles go
/// stale when the file changes; search again to refresh them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SymbolRef {
    /// File relative to the codebase root, `/`-separated.
    pub file: String,
    /// Stable id of the symbol.
    pub symbol_id: String,
    /// Display label, e.g. `fn parse_query`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_label: Option<String>,
    /// Lines of the symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
}

string_enum! {
    /// Why a result has no call-graph handle. `call_graph_unavailable`: this server does not
    /// offer the call_graph tool yet, so no handle is given even for a known symbol.
    pub enum CallGraphUnsupportedReason {
        MissingSymbol = "missing_symbol",
        UnsupportedLanguage = "unsupported_language",
        CallGraphUnavailable = "call_graph_unavailable",
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
