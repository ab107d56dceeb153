//! Search over one generation, in stages: the query is read (`query`, `vocab`), the filters
//! built (`filter`), candidates retrieved from the generation's read API and filtered
//! (`retrieve`), ranked (`rank`, with name matching in `names` and categories in
//! `category`), and turned into hits (`group`). `pipeline` sequences the stages; `weights`
//! holds every number ranking uses; `index` is a generation opened for search.
//! Deterministic: same generation + same request = same outcome.

pub mod category;
mod filter;
mod group;
mod index;
mod late;
mod names;
mod pipeline;
pub mod query;
mod rank;
pub mod rerank;
mod retrieve;
mod vocab;
mod weights;
mod words;

use crate::lang::Language;
use crate::symbol::Symbol;

use self::category::Category;
use self::query::{ParsedQuery, QueryKind};

pub use self::index::Index;
pub use self::late::LateInteraction;
pub use self::pipeline::search;
pub use self::weights::Weights;

use crate::embed::Embedder;

/// How lexical and dense scores are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fusion {
    /// A weighted sum of the normalised scores, weighted by query kind.
    #[default]
    Blend,
    /// Reciprocal-rank fusion of the two rankings.
    Rrf,
}

/// Switches and weights of the ranking pipeline. The default is what Satori ships; the
/// others exist so that the benchmark can measure each part's contribution
/// (`SATORI_SEARCH_ABLATION`) and try other weights (`SATORI_SEARCH_WEIGHTS`) with the same
/// engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchTuning {
    pub lexical: bool,
    pub dense: bool,
    /// The lexical query also searches what a chunk defines and its file's path (weighted
    /// fields); off, BM25 sees the chunk's text alone.
    pub fields: bool,
    pub definition: bool,
    /// The path signals: a file or folder named for what is asked.
    pub path: bool,
    /// The path field of the lexical query. Off only with `no_path`, which measures all the
    /// evidence a file's path gives (field and signals); `no_signals` keeps it, as a field.
    pub path_field: bool,
    pub category: bool,
    pub saturation: bool,
    pub changed: bool,
    /// Related code words for the words of a question (`put` → `set`, `config` → `cfg`).
    pub expansion: bool,
    /// Defined names whose words the question covers.
    pub names: bool,
    /// The file-coherence boost.
    pub coherence: bool,
    /// The file-vector boost (a file's closeness, as a whole, to the query).
    pub file_vector: bool,
    /// The file-words boosts (a question's words in the names a file defines and in its
    /// opening documentation).
    pub file_words: bool,
    /// The file-centrality boost (how many other files reach a file).
    pub centrality: bool,
    /// The promotion, within its file, of the kind of definition a question names.
    pub kind: bool,
    pub fusion: Fusion,
    /// Every number ranking uses.
    pub weights: Weights,
}

impl Default for SearchTuning {
    fn default() -> Self {
        SearchTuning {
            lexical: true,
            dense: true,
            fields: true,
            definition: true,
            path: true,
            path_field: true,
            category: true,
            saturation: true,
            changed: true,
            expansion: true,
            names: true,
            coherence: true,
            file_vector: true,
            file_words: true,
            centrality: true,
            kind: true,
            fusion: Fusion::Blend,
            weights: Weights::default(),
        }
    }
}

impl SearchTuning {
    /// Names accepted by [`SearchTuning::parse`].
    pub const SWITCHES: [&'static str; 16] = [
        "lexical_only",
        "dense_only",
        "no_fields",
        "no_signals",
        "no_definition",
        "no_path",
        "no_category",
        "no_saturation",
        "no_expansion",
        "no_names",
        "no_coherence",
        "no_file_vector",
        "no_file_words",
        "no_centrality",
        "no_kind",
        "rrf",
    ];

    /// Parses a comma-separated list of ablation switches (empty = the default).
    pub fn parse(spec: &str) -> Result<SearchTuning, String> {
        let mut t = SearchTuning::default();
        for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "lexical_only" => t.dense = false,
                "dense_only" => t.lexical = false,
                "no_fields" => t.fields = false,
                "no_signals" => {
                    t.definition = false;
                    t.path = false;
                    t.category = false;
                    t.saturation = false;
                    t.changed = false;
                    t.expansion = false;
                    t.names = false;
                    t.coherence = false;
                    t.file_vector = false;
                    t.file_words = false;
                    t.centrality = false;
                    t.kind = false;
                }
                "no_definition" => t.definition = false,
                "no_path" => {
                    t.path = false;
                    t.path_field = false;
                }
                "no_category" => t.category = false,
                "no_saturation" => t.saturation = false,
                "no_expansion" => t.expansion = false,
                "no_names" => t.names = false,
                "no_coherence" => t.coherence = false,
                "no_file_vector" => t.file_vector = false,
                "no_file_words" => t.file_words = false,
                "no_centrality" => t.centrality = false,
                "no_kind" => t.kind = false,
                "rrf" => t.fusion = Fusion::Rrf,
                other => {
                    return Err(format!(
                        "unknown switch '{other}' (known: {})",
                        SearchTuning::SWITCHES.join(", ")
                    ));
                }
            }
        }
        if !t.lexical && !t.dense {
            return Err("lexical_only and dense_only exclude each other".into());
        }
        Ok(t)
    }
}

/// What a search needs besides the request: the embedder of the query (absent when dense
/// retrieval is off) and the pipeline switches.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchContext<'a> {
    pub embedder: Option<&'a dyn Embedder>,
    pub tuning: SearchTuning,
    /// The engine's reranker and whether it reranks when a request does not say.
    pub rerank: rerank::RerankSetup<'a>,
}

/// Which part of a codebase a search looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Source code: no docs, no tests, no generated files.
    #[default]
    Runtime,
    /// Everything.
    Mixed,
    /// Documentation and tests only.
    Docs,
}

/// Grouped results (one entry per symbol or file) or raw chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultMode {
    #[default]
    Grouped,
    Raw,
}

/// What grouped results are keyed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupBy {
    #[default]
    Symbol,
    File,
}

/// A search as the engine sees it (already validated by the caller).
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// The raw query, operator prefix block included (`lang:rust path:src/** retry backoff`).
    pub query: String,
    pub scope: Scope,
    pub result_mode: ResultMode,
    pub group_by: GroupBy,
    /// 1..=50.
    pub limit: usize,
    pub debug: bool,
    /// Root-relative paths modified in the working tree, when `auto_changed_first` ranking is
    /// on and the caller could list them; `None` disables the boost.
    pub changed_files: Option<Vec<String>>,
    /// Restrict results to this root-relative directory prefix (the caller searched a
    /// subdirectory of an indexed root). Empty or `None` = the whole codebase.
    pub path_prefix: Option<String>,
    /// `useReranker`: `Some(true)` reranks whatever the default, `Some(false)` never, `None`
    /// leaves it to the engine's default.
    pub use_reranker: Option<bool>,
}

impl SearchRequest {
    /// The number of results asked for, within 1..=50.
    pub(crate) fn page_size(&self) -> usize {
        self.limit.clamp(1, 50)
    }
}

/// Per-result score components, filled when `debug` is on.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreComponents {
    /// Raw BM25 score of the chunk (0 when only dense retrieval found it).
    pub bm25: f32,
    /// Rank of the chunk in the BM25 candidate list (0-based; absent when not retrieved).
    pub lexical_rank: Option<usize>,
    /// Cosine similarity of the chunk and the query embeddings (absent without vectors).
    pub dense: Option<f32>,
    /// Rank of the chunk among the dense neighbours (0-based; absent when not retrieved).
    pub dense_rank: Option<usize>,
    /// The fused retrieval score in [0, 1] that the signals below adjust.
    pub fused: f32,
    /// Multiplier (or additive bonus, see `final_score`) for defining the queried identifier.
    pub definition_boost: f32,
    /// Bonus for file-stem / path matches.
    pub path_boost: f32,
    /// Bonus for the file as a whole (a file's best chunk only): its share of the retrieval
    /// score (coherence), its closeness to the query in the embedding space (file vector),
    /// the question's words in its names and opening documentation (file words), and how
    /// many other files reach it (file centrality).
    pub coherence_boost: f32,
    /// Multiplier for the path category under the scope (tests, docs, generated, ...).
    pub category_multiplier: f32,
    /// The path category (runtime, tests, docs, generated, vendored, examples, ...).
    pub category: Category,
    /// Multiplier for git-changed files under `auto_changed_first`.
    pub changed_multiplier: f32,
    /// The reranker's score and the rank it gave (0-based), when it reranked this result;
    /// `final_score` is then the rank fusion of the engine's and the reranker's orders.
    pub rerank_score: Option<f32>,
    pub rerank_rank: Option<usize>,
    pub final_score: f32,
}

/// One ranked result: a group (grouped mode) or a chunk (raw mode).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Deterministic id: the symbol id in symbol grouping, else `grp_` + hash of file (+ span).
    pub group_id: String,
    /// Root-relative path, `/` separated.
    pub file: String,
    pub language: Language,
    pub start_line: u32,
    pub end_line: u32,
    pub score: f32,
    pub symbol: Option<Symbol>,
    pub breadcrumbs: Vec<String>,
    /// Raw mode: the chunk content capped at 4,000 characters. Grouped mode: a short preview
    /// (at most ~8 lines / 400 characters) of the best chunk, starting at its most relevant line.
    pub text: String,
    /// When the file's chunks were indexed (ms since the Unix epoch).
    pub indexed_at_ms: u64,
    /// Grouped mode: how many matching chunks were folded into this group (>= 1).
    pub collapsed_chunk_count: usize,
    /// True when the file's language has a grammar that gives symbols (call-graph-capable later).
    pub language_has_symbols: bool,
    pub components: Option<ScoreComponents>,
}

/// Which retrievers a search ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetrievalMode {
    /// BM25 and the dense vectors, fused.
    Hybrid,
    /// BM25 only (no usable query vector, or dense retrieval switched off).
    Lexical,
    /// The dense vectors only.
    Dense,
    /// Nothing to retrieve with (no text and no operator that ranks without it).
    #[default]
    Skipped,
}

/// How the lexical and dense scores of a search were combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FusionReport {
    /// A weighted sum of the normalised scores.
    Blend {
        lexical_weight: f32,
        dense_weight: f32,
    },
    /// Reciprocal-rank fusion with rank constant `k`.
    Rrf { k: f32 },
}

/// Counts and details that `debug:true` and telemetry report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchDiagnostics {
    pub query_kind: QueryKind,
    /// The query text after the operator block.
    pub semantic_query: String,
    /// Lexical terms actually searched.
    pub terms: Vec<String>,
    pub retrieval_mode: RetrievalMode,
    /// How the two retrievers were combined and with which weights (`None` when retrieval did
    /// not run).
    pub fusion: Option<FusionReport>,
    pub candidates: usize,
    /// Candidates found by each retriever (before filters).
    pub lexical_candidates: usize,
    pub dense_candidates: usize,
    /// Candidates left after each filter, in order: scope, lang, path, -path, must, exclude.
    pub filter_counts: Vec<(String, usize)>,
    pub after_filters: usize,
    pub skipped_by_file_cap: usize,
    pub skipped_by_symbol_cap: usize,
    pub used_relaxed_cap: bool,
    /// The parsed operator block (lang, path, -path, must, exclude) and the free text.
    pub operators: ParsedQuery,
    /// What the reranking stage did (`None` when the search stopped before ranking).
    pub rerank: Option<rerank::RerankReport>,
}

/// Suggestion when most of the visible top results are tests / fixtures / docs / generated.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseReport {
    pub top_k: usize,
    /// Share of the top results per category (`tests`, `fixtures`, `docs`, `generated`, `runtime`).
    pub ratios: Vec<(String, f32)>,
    /// `.satoriignore` patterns to consider, in a fixed order.
    pub suggested_ignore_patterns: Vec<String>,
}

/// What a search returns.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    pub hits: Vec<Hit>,
    /// Sorted, stable codes (`FILTER_MUST_UNSATISFIED`, `UNKNOWN_LANGUAGE_FILTER:<id>`, ...).
    pub warnings: Vec<String>,
    pub diagnostics: SearchDiagnostics,
    pub noise: Option<NoiseReport>,
}
