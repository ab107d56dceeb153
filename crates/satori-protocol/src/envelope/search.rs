//! The `search_codebase` envelope and its results.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    CallGraphHint, Compatibility, FreshnessDecision, Hint, NavigationFallback, Span, Status,
};
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

/// Why a result ranks where it does (with `debug: true`). Scores stay `f64`, as the engine
/// computes them, so they print with the engine's precision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoreDebug {
    /// Raw BM25 score of the chunk (0 when only dense retrieval found it).
    pub bm25: f64,
    /// Rank in the BM25 candidate list (0-based; null when not retrieved lexically).
    pub lexical_rank: Option<u64>,
    /// Cosine similarity of chunk and query embeddings (null without vectors).
    pub dense: Option<f64>,
    /// Rank among the dense neighbours (0-based; null when not retrieved densely).
    pub dense_rank: Option<u64>,
    /// The fused retrieval score in [0, 1] that the signals adjust.
    pub fused: f64,
    /// Boost for defining the queried identifier.
    pub definition_boost: f64,
    /// Bonus for file-stem and path matches.
    pub path_boost: f64,
    /// Boost of a file's best chunk for evidence about the file as a whole: its share of the
    /// retrieval score, the question's words in its defined names and opening documentation,
    /// and how many other files call into it or import it.
    pub coherence_boost: f64,
    /// Multiplier for the path category under the scope.
    pub category_multiplier: f64,
    /// Path category, e.g. `runtime`, `tests`, `docs`, `generated`.
    pub category: String,
    /// Multiplier for files changed in the working tree.
    pub changed_multiplier: f64,
    /// The reranker's score of the result, when it reranked it (the final score is then the
    /// rank fusion of the engine's order and the reranker's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_score: Option<f64>,
    /// The rank the reranker gave the result (0-based), when it reranked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_rank: Option<u64>,
    /// The score the result was ranked by.
    pub final_score: f64,
}

/// What the reranking stage did in one search (`hints.debugSearch.rerank`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RerankDebug {
    /// The reranker the server has, as `provider/model` (null when it has none).
    pub reranker: Option<String>,
    /// `useReranker` as the request gave it (null when omitted).
    pub requested: Option<bool>,
    /// Whether the server reranks when a request does not say.
    pub by_default: bool,
    /// `applied`, `failed`, or why it did not run: `disabled`, `unavailable`, `docs_scope`,
    /// `identifier_query`, `no_candidates`.
    pub decision: String,
    /// Candidates handed to the reranker (the best of the engine's order, at most 50).
    pub candidates: u64,
    /// Milliseconds the reranker took.
    pub millis: f64,
    /// Where it failed: `api_call` or `parse_results`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_phase: Option<String>,
    /// The failure, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

string_enum! {
    /// How the query text was read.
    pub enum QueryKind {
        Identifier = "identifier",
        NaturalLanguage = "natural_language",
        Mixed = "mixed",
        Empty = "empty",
    }
}

string_enum! {
    /// Which retrievers ran (`none`: nothing to search for).
    pub enum RetrievalMode {
        Hybrid = "hybrid",
        Lexical = "lexical",
        Dense = "dense",
        None = "none",
    }
}

/// How the lexical and dense rankings were combined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", rename_all = "lowercase", deny_unknown_fields)]
pub enum FusionDebug {
    /// A weighted sum of the normalised scores.
    #[serde(rename_all = "camelCase")]
    Blend {
        /// Weight of the lexical score.
        lexical_weight: f64,
        /// Weight of the dense score.
        dense_weight: f64,
    },
    /// Reciprocal-rank fusion.
    Rrf {
        /// The rank constant.
        k: f64,
    },
}

/// The operator block of the query, as parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorsDebug {
    /// Characters consumed by the operator block.
    pub prefix_block_chars: u64,
    /// `lang:` values.
    pub lang: Vec<String>,
    /// `path:` globs.
    pub path: Vec<String>,
    /// `-path:` globs.
    pub exclude_path: Vec<String>,
    /// `must:` tokens.
    pub must: Vec<String>,
    /// `exclude:` tokens.
    pub exclude: Vec<String>,
}

/// Candidates left after one filter stage: `[stage, count]`.
pub type FilterCount = (String, u64);

/// The query plan and candidate counts of a search (`hints.debugSearch`, with `debug: true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchDebug {
    /// How the query text was read.
    pub query_kind: QueryKind,
    /// The query text after the operator block.
    pub semantic_query: String,
    /// Lexical terms actually searched.
    pub terms: Vec<String>,
    /// Which retrievers ran.
    pub retrieval_mode: RetrievalMode,
    /// How the retrievers were combined (absent when retrieval did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionDebug>,
    /// Candidates before filters.
    pub candidates: u64,
    /// Candidates found by the lexical retriever.
    pub lexical_candidates: u64,
    /// Candidates found by the dense retriever.
    pub dense_candidates: u64,
    /// Candidates left after each filter, in order: scope, lang, path, -path, must, exclude;
    /// each a `[stage, count]` pair.
    pub filter_counts: Vec<FilterCount>,
    /// Candidates left after all filters.
    pub after_filters: u64,
    /// Results dropped by the per-file cap.
    pub skipped_by_file_cap: u64,
    /// Results dropped by the per-symbol cap.
    pub skipped_by_symbol_cap: u64,
    /// Whether the caps were relaxed to fill the page.
    pub used_relaxed_cap: bool,
    /// The parsed operator block.
    pub operators: OperatorsDebug,
    /// What the reranking stage did (absent when the search stopped before ranking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankDebug>,
}

/// One grouped result: a symbol (or file) with the best-matching span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
    pub debug: Option<ScoreDebug>,
}

/// One raw result: a chunk with its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
    pub debug: Option<ScoreDebug>,
}

/// A search result, tagged by `kind`.
// One page holds at most 50 results, all of the same kind, so boxing the larger variant would
// only add an allocation per result without saving memory.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SearchResult {
    /// `kind: "group"` (resultMode grouped).
    Group(GroupResult),
    /// `kind: "chunk"` (resultMode raw).
    Chunk(ChunkResult),
}

/// Share of each path category among the top results (0 to 1, two decimals).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoiseRatios {
    /// Tests.
    pub tests: f64,
    /// Test fixtures.
    pub fixtures: f64,
    /// Documentation.
    pub docs: f64,
    /// Generated files.
    pub generated: f64,
    /// Everything else (source code).
    pub runtime: f64,
}

/// Suggestion to silence noise when tests/docs/generated files dominate the top results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NoiseMitigation {
    /// Shape version (1).
    pub version: u32,
    /// Why the hint fired, e.g. `top_results_noise_dominant`.
    pub reason: String,
    /// How many top results were examined.
    pub top_k: u32,
    /// Share of each category among them.
    pub ratios: NoiseRatios,
    /// Scope to use instead.
    pub recommended_scope: Scope,
    /// Patterns to add to `.satoriignore`.
    pub suggested_ignore_patterns: Vec<String>,
    /// What to do, for the reader.
    pub next_step: String,
    /// The sync that applies an edited `.satoriignore`.
    pub sync: Hint,
}

/// The `hints` of a search: runnable next steps, plus the structured noise and debug blocks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchHints {
    /// Index the path first (`not_indexed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<Hint>,
    /// Poll the running indexing (`not_ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Hint>,
    /// Rebuild the index (`requires_reindex`, a failed search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reindex: Option<Hint>,
    /// `.satoriignore` suggestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_mitigation: Option<NoiseMitigation>,
    /// Query plan and filter counts (with `debug: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_search: Option<SearchDebug>,
}

impl SearchHints {
    /// Whether there is nothing to say.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// The answer of `search_codebase`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchEnvelope {
    /// Outcome.
    pub status: Status,
    /// Path as requested.
    pub path: String,
    /// Absolute root of the codebase `path` lies in: every `file` is relative to it. Absent
    /// when the call stopped before using the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codebase_root: Option<String>,
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
    /// Machine-readable cause of a non-ok status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the freshness check did; absent when no check ran (e.g. untracked path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
