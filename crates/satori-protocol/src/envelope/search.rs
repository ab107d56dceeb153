//! The `search_codebase` envelope and its results.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallGraphHint, Compatibility, Hint, NavigationFallback, Span, Status, SyncStats};
use crate::tools::search_codebase::{GroupBy, ResultMode, Scope};

string_enum! {
    /// How old the indexed copy of a result is.
    pub enum StalenessBucket {
        Fresh = "fresh",
        Aging = "aging",
        Stale = "stale",
        Unknown = "unknown",
    }
}

impl StalenessBucket {
    /// Below this age a result is `fresh` (30 minutes).
    pub const FRESH_BELOW_MS: u64 = 30 * 60 * 1000;
    /// Below this age a result is `aging` (24 hours); older ones are `stale`.
    pub const AGING_BELOW_MS: u64 = 24 * 60 * 60 * 1000;

    /// The bucket for an index age in milliseconds (`None` when the indexing time is unknown).
    pub const fn from_age_ms(age_ms: Option<u64>) -> Self {
        match age_ms {
            None => Self::Unknown,
            Some(age) if age < Self::FRESH_BELOW_MS => Self::Fresh,
            Some(age) if age < Self::AGING_BELOW_MS => Self::Aging,
            Some(_) => Self::Stale,
        }
    }
}

string_enum! {
    /// What the freshness check before a search did.
    pub enum FreshnessMode {
        Synced = "synced",
        SkippedRecent = "skipped_recent",
        Coalesced = "coalesced",
        SkippedIndexing = "skipped_indexing",
        SkippedRequiresReindex = "skipped_requires_reindex",
        SkippedMissingPath = "skipped_missing_path",
        ReconciledIgnoreChange = "reconciled_ignore_change",
        IgnoreReloadFailed = "ignore_reload_failed",
    }
}

/// How the search made sure the index reflects the working tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FreshnessDecision {
    /// What happened.
    pub mode: FreshnessMode,
    /// When the check ran (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// Age above which a sync runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ms: Option<u64>,
    /// When the last sync finished (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_at: Option<String>,
    /// Age of the last sync at check time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_ms: Option<u64>,
    /// Duration of the sync or reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Counts of the sync that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<SyncStats>,
    /// Ignore-rule generation after a reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_rules_version: Option<u64>,
    /// Files dropped from the index because they are now ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newly_ignored_files: Option<u64>,
    /// Files added because they are no longer ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_files: Option<u64>,
    /// Edits folded into an already running sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesced_edits: Option<u64>,
    /// Why a sync or reconciliation failed (the search still ran on the old index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

impl FreshnessDecision {
    /// A decision with only its mode set.
    pub fn new(mode: FreshnessMode) -> Self {
        Self {
            mode,
            checked_at: None,
            threshold_ms: None,
            last_sync_at: None,
            age_ms: None,
            duration_ms: None,
            stats: None,
            ignore_rules_version: None,
            newly_ignored_files: None,
            added_files: None,
            coalesced_edits: None,
            error_message: None,
        }
    }
}

/// One grouped result: a symbol (or file) with the best-matching span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResult {
    /// Stable id of the group (symbol id, or a hash of file and span).
    pub group_id: String,
    /// File relative to the codebase root, `/`-separated.
    pub file: String,
    /// Lines of the group.
    pub span: Span,
    /// Language id, e.g. `rust`.
    pub language: String,
    /// Symbol id, or null when the chunk has no symbol.
    pub symbol_id: Option<String>,
    /// Symbol label, or null.
    pub symbol_label: Option<String>,
    /// Ranking score (diagnostic; the array order is authoritative).
    pub score: f64,
    /// When the file was indexed (RFC 3339), or null.
    pub indexed_at: Option<String>,
    /// Age class of `indexed_at`.
    pub staleness_bucket: StalenessBucket,
    /// Chunks merged into this group.
    pub collapsed_chunk_count: u32,
    /// Navigation handle.
    pub call_graph_hint: CallGraphHint,
    /// Runnable calls when the call graph cannot help.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub navigation_fallback: Option<NavigationFallback>,
    /// A few lines of the best chunk.
    pub preview: String,
    /// Score components (with `debug: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<Value>,
}

/// One raw result: a chunk with its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkResult {
    /// File relative to the codebase root, `/`-separated.
    pub file: String,
    /// Lines of the chunk.
    pub span: Span,
    /// Language id.
    pub language: String,
    /// Chunk text (capped).
    pub content: String,
    /// Ranking score (diagnostic).
    pub score: f64,
    /// Symbol id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_id: Option<String>,
    /// Symbol label, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_label: Option<String>,
    /// When the file was indexed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<String>,
    /// Age class of `indexed_at`.
    pub staleness_bucket: StalenessBucket,
    /// Score components (with `debug: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<Value>,
}

/// A search result, tagged by `kind`.
// One page holds at most 50 results, all of the same kind, so boxing the larger variant would
// only add an allocation per result without saving memory.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SearchResult {
    /// `kind: "group"` (resultMode grouped).
    Group(GroupResult),
    /// `kind: "chunk"` (resultMode raw).
    Chunk(ChunkResult),
}

/// Suggestion to silence noise when tests/docs/generated files dominate the top results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoiseMitigation {
    /// Shape version (1).
    pub version: u32,
    /// Why the hint fired, e.g. `top_results_noise_dominant`.
    pub reason: String,
    /// How many top results were examined.
    pub top_k: u32,
    /// Share of each category among them, by category name.
    pub ratios: BTreeMap<String, f64>,
    /// Scope to use instead.
    pub recommended_scope: Scope,
    /// Patterns to add to `.satoriignore`.
    pub suggested_ignore_patterns: Vec<String>,
    /// How long the watcher waits before applying an ignore edit.
    pub debounce_ms: u64,
    /// What to do, for the reader.
    pub next_step: String,
}

/// The `hints` of a search: runnable next steps by name, plus the structured noise and debug
/// blocks (which are not calls, so they are fields of their own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHints {
    /// `.satoriignore` suggestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_mitigation: Option<NoiseMitigation>,
    /// Query plan and filter counts (with `debug: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_search: Option<Value>,
    /// Runnable next steps (`create`, `status`, `reindex`, ...).
    #[serde(flatten)]
    pub calls: BTreeMap<String, Hint>,
}

impl SearchHints {
    /// Whether there is nothing to say.
    pub fn is_empty(&self) -> bool {
        self.noise_mitigation.is_none() && self.debug_search.is_none() && self.calls.is_empty()
    }
}

/// The answer of `search_codebase`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchEnvelope {
    /// Outcome.
    pub status: Status,
    /// Machine-readable cause of a non-ok status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Path as requested.
    pub path: String,
    /// Query as requested.
    pub query: String,
    /// Effective scope.
    pub scope: Scope,
    /// Effective grouping.
    pub group_by: GroupBy,
    /// Effective result mode.
    pub result_mode: ResultMode,
    /// Effective limit.
    pub limit: u32,
    /// What the freshness check did; null when no check ran (e.g. untracked path).
    pub freshness_decision: Option<FreshnessDecision>,
    /// Results, best first.
    pub results: Vec<SearchResult>,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Explanation of a non-ok status or of an empty result list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Next steps.
    #[serde(default, skip_serializing_if = "SearchHints::is_empty")]
    pub hints: SearchHints,
    /// Fingerprint check (with `requires_reindex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
}
