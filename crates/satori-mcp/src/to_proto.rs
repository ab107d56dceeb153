//! Where the engine meets the wire: plain functions that take `satori-core` values and return
//! `satori-protocol` values (and turn the contract's enums into engine requests). Handlers
//! decide *what* to answer; how an engine value looks on the wire is decided here, once.

use std::path::Path;

use satori_core::search::query::{ParsedQuery, QueryKind as CoreQueryKind};
use satori_core::search::{
    self as core_search, FusionReport, Hit, NoiseReport, RetrievalMode as CoreRetrievalMode,
    ScoreComponents, SearchDiagnostics, SearchRequest,
};
use satori_core::{
    CodebaseState, Fingerprint as CoreFingerprint, IndexState as CoreIndexState,
    IndexStatus as CoreIndexStatus, Language, Phase, Progress as CoreProgress,
    ReindexReason as CoreReindexReason, Symbol, SyncSummary, iso8601, now_ms,
};
use satori_protocol::envelope::{
    CallGraphHint, CallGraphUnsupportedReason, ChunkResult, Compatibility, Fingerprint,
    FusionDebug, GroupResult, Hint, IndexState, IndexStats, IndexStatus, NavigationContext,
    NavigationFallback, NoiseMitigation, NoiseRatios, OperatorsDebug, OutlineSymbol, Progress,
    QueryKind, ReindexReason, RerankDebug, RetrievalMode, ScoreDebug, SearchDebug, SearchResult,
    SkippedFiles, Span, StalenessBucket, SymbolRef, SyncRunStats, SyncStats,
};
use satori_protocol::{GroupBy, ManageAction, ResultMode, Scope, SearchCodebaseParams};

/// A path as the user sees it in messages and hints.
pub(crate) fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// RFC 3339 form of epoch milliseconds.
pub(crate) fn time(ms: u64) -> String {
    iso8601(ms)
}

/// A result score, rounded to four decimals (more would be noise to the reader).
pub(crate) fn score(x: f32) -> f64 {
    (f64::from(x) * 10_000.0).round() / 10_000.0
}

/// A percentage with one decimal (rounded as the engine's `f32`, then widened exactly).
pub(crate) fn percentage(pct: f32) -> f64 {
    f64::from((pct * 10.0).round() / 10.0)
}

/// Age class of an index time (`0`: unknown).
pub(crate) fn staleness(indexed_at_ms: u64) -> StalenessBucket {
    StalenessBucket::from_age_ms(
        (indexed_at_ms > 0).then(|| now_ms().saturating_sub(indexed_at_ms)),
    )
}

/// The wire form of a fingerprint.
pub(crate) fn fingerprint(fp: &CoreFingerprint) -> Fingerprint {
    Fingerprint {
        embedding_provider: fp.embedding_provider.clone(),
        embedding_model: fp.embedding_model.clone(),
        embedding_dimension: fp.embedding_dimension,
        vector_backend: fp.vector_backend.to_string(),
        schema_version: fp.schema_version.clone(),
    }
}

/// The wire form of a tracked codebase's state.
pub(crate) fn index_state(state: CoreIndexState) -> IndexState {
    match state {
        CoreIndexState::Indexing => IndexState::Indexing,
        CoreIndexState::Indexed => IndexState::Indexed,
        CoreIndexState::IndexFailed => IndexState::IndexFailed,
        CoreIndexState::SyncCompleted => IndexState::SyncCompleted,
        CoreIndexState::RequiresReindex => IndexState::RequiresReindex,
    }
}

/// The wire form of why an index needs rebuilding.
pub(crate) fn reindex_reason(reason: CoreReindexReason) -> ReindexReason {
    match reason {
        CoreReindexReason::FingerprintMismatch => ReindexReason::FingerprintMismatch,
        CoreReindexReason::MissingFingerprint => ReindexReason::MissingFingerprint,
        CoreReindexReason::LegacyUnverifiedFingerprint => {
            ReindexReason::LegacyUnverifiedFingerprint
        }
        CoreReindexReason::IndexDamaged => ReindexReason::IndexDamaged,
    }
}

/// The protocol's form of how a build ended.
pub(crate) fn index_status(status: CoreIndexStatus) -> IndexStatus {
    match status {
        CoreIndexStatus::Completed => IndexStatus::Completed,
        CoreIndexStatus::LimitReached => IndexStatus::LimitReached,
    }
}

/// The reason recorded in a `requires_reindex` state (an older state file may hold none, and
/// a mismatch is what moved it there).
pub(crate) fn recorded_reindex_reason(st: &CodebaseState) -> ReindexReason {
    st.reason
        .map_or(ReindexReason::FingerprintMismatch, reindex_reason)
}

/// The fingerprint check of a codebase that must be rebuilt.
pub(crate) fn incompatible(
    runtime: &CoreFingerprint,
    indexed: Option<&CoreFingerprint>,
    reason: ReindexReason,
) -> Compatibility {
    Compatibility {
        runtime_fingerprint: fingerprint(runtime),
        indexed_fingerprint: indexed.map(fingerprint),
        reindex_reason: Some(reason),
        status_at_check: Some(IndexState::RequiresReindex),
    }
}

/// The fingerprint check of a searchable codebase.
pub(crate) fn compatible(runtime: &CoreFingerprint, st: &CodebaseState) -> Compatibility {
    Compatibility {
        runtime_fingerprint: fingerprint(runtime),
        indexed_fingerprint: st.fingerprint.as_ref().map(fingerprint),
        reindex_reason: None,
        status_at_check: Some(index_state(st.state)),
    }
}

/// The counts of a tracked index (the last sync's counts only after a sync).
pub(crate) fn index_stats(st: &CodebaseState) -> IndexStats {
    let synced = st.state == CoreIndexState::SyncCompleted;
    IndexStats {
        files: st.files,
        chunks: st.chunks,
        index_status: st.index_status.map_or(IndexStatus::Completed, index_status),
        indexed_at: st.indexed_at_ms.map(time),
        duration_ms: st.duration_ms,
        last_sync_at: st.last_sync_ms.map(time),
        added: synced.then_some(st.added),
        removed: synced.then_some(st.removed),
        modified: synced.then_some(st.modified),
        skipped: (!st.skipped.is_empty()).then_some(SkippedFiles {
            binary: st.skipped.binary,
            minified: st.skipped.minified,
            secrets: st.skipped.secrets,
            oversized: st.skipped.oversized,
        }),
        too_deep_files: (st.too_deep_files > 0).then_some(st.too_deep_files),
    }
}

/// The counts of a sync that just ran.
pub(crate) fn sync_run_stats(s: &SyncSummary) -> SyncRunStats {
    SyncRunStats {
        added: s.added,
        removed: s.removed,
        modified: s.modified,
        // On the wire `rebuilt` says a new generation was written, derived or built whole.
        rebuilt: s.rebuilt || s.derived,
        duration_ms: s.duration_ms,
    }
}

/// The counts of a sync run before a search.
pub(crate) fn sync_stats(s: &SyncSummary) -> SyncStats {
    SyncStats {
        added: s.added,
        removed: s.removed,
        modified: s.modified,
    }
}

/// Progress of a build: live from this process's job when there is one, else as recorded in
/// the state file by whichever process runs it.
pub(crate) fn progress(live: Option<&CoreProgress>, st: &CodebaseState) -> Progress {
    match live {
        Some(p) => Progress {
            percentage: percentage(p.percentage),
            phase: p.phase.id().to_owned(),
            files_done: p.files_done,
            files_total: p.files_total,
            chunks: p.chunks,
        },
        None => Progress {
            percentage: percentage(st.percentage),
            phase: st.phase.unwrap_or(Phase::Scanning).id().to_owned(),
            files_done: st.files_done,
            files_total: st.files_total,
            chunks: 0,
        },
    }
}

/// How far a failed build got, as recorded.
pub(crate) fn failed_progress(st: &CodebaseState) -> Progress {
    Progress {
        percentage: f64::from(st.percentage),
        phase: st.phase.map_or("failed", Phase::id).to_owned(),
        files_done: st.files_done,
        files_total: st.files_total,
        chunks: 0,
    }
}

/// A named `manage_index` call on `path`.
pub(crate) fn manage_hint(action: ManageAction, path: &str) -> Hint {
    Hint::manage_index(action, path)
}

/// The engine's form of a search request.
pub(crate) fn search_request(
    p: &SearchCodebaseParams,
    changed_files: Option<Vec<String>>,
    path_prefix: Option<String>,
) -> SearchRequest {
    SearchRequest {
        query: p.query.clone(),
        scope: match p.scope {
            Scope::Runtime => core_search::Scope::Runtime,
            Scope::Mixed => core_search::Scope::Mixed,
            Scope::Docs => core_search::Scope::Docs,
        },
        result_mode: match p.result_mode {
            ResultMode::Grouped => core_search::ResultMode::Grouped,
            ResultMode::Raw => core_search::ResultMode::Raw,
        },
        group_by: match p.group_by {
            GroupBy::Symbol => core_search::GroupBy::Symbol,
            GroupBy::File => core_search::GroupBy::File,
        },
        limit: p.limit as usize,
        debug: p.debug,
        changed_files,
        path_prefix,
        use_reranker: p.use_reranker,
    }
}

fn span(h: &Hit) -> Span {
    Span::new(h.start_line, h.end_line)
}

/// A grouped result. A result with a known symbol in a language the call graph covers
/// carries a handle for `call_graph`, `file_outline` and `read_file` `open_symbol`; any other
/// says why it has none and points at runnable reads of its span instead.
pub(crate) fn group_result(root: &Path, h: &Hit) -> SearchResult {
    let abs_shown = display(&root.join(&h.file));
    let supported = satori_core::graph::supports(h.language);
    let (call_graph_hint, navigation_fallback) = match &h.symbol {
        Some(s) if supported && h.language_has_symbols => (
            CallGraphHint::Supported {
                symbol_ref: SymbolRef {
                    file: h.file.clone(),
                    symbol_id: s.id.clone(),
                    symbol_label: Some(s.label.clone()),
                    span: Some(Span::new(s.start_line, s.end_line)),
                },
            },
            None,
        ),
        _ => {
            let reason = if !h.language_has_symbols || !supported {
                CallGraphUnsupportedReason::UnsupportedLanguage
            } else {
                CallGraphUnsupportedReason::MissingSymbol
            };
            let outline = h
                .language_has_symbols
                .then(|| Hint::file_outline(&display(root), &h.file, h.start_line, h.end_line));
            (
                CallGraphHint::Unsupported { reason },
                Some(NavigationFallback {
                    message: "No symbol handle for this result; read the span directly.".to_owned(),
                    context: NavigationContext {
                        codebase_root: display(root),
                        relative_file: h.file.clone(),
                        absolute_path: abs_shown.clone(),
                    },
                    read_span: Hint::read_file(&abs_shown, h.start_line, h.end_line),
                    file_outline_window: outline,
                }),
            )
        }
    };
    SearchResult::Group(GroupResult {
        group_id: h.group_id.clone(),
        file: h.file.clone(),
        span: span(h),
        language: h.language.id().to_owned(),
        symbol_id: h.symbol.as_ref().map(|s| s.id.clone()),
        symbol_label: h.symbol.as_ref().map(|s| s.label.clone()),
        score: score(h.score),
        indexed_at: (h.indexed_at_ms > 0).then(|| time(h.indexed_at_ms)),
        staleness_bucket: staleness(h.indexed_at_ms),
        collapsed_chunk_count: u32::try_from(h.collapsed_chunk_count).unwrap_or(u32::MAX),
        call_graph_hint,
        navigation_fallback,
        preview: h.text.clone(),
        debug: h.components.as_ref().map(score_debug),
    })
}

/// A raw (chunk) result.
pub(crate) fn chunk_result(h: &Hit) -> SearchResult {
    SearchResult::Chunk(ChunkResult {
        file: h.file.clone(),
        span: span(h),
        language: h.language.id().to_owned(),
        content: h.text.clone(),
        score: score(h.score),
        symbol_id: h.symbol.as_ref().map(|s| s.id.clone()),
        symbol_label: h.symbol.as_ref().map(|s| s.label.clone()),
        indexed_at: (h.indexed_at_ms > 0).then(|| time(h.indexed_at_ms)),
        staleness_bucket: staleness(h.indexed_at_ms),
        debug: h.components.as_ref().map(score_debug),
    })
}

/// Score components of one result.
pub(crate) fn score_debug(c: &ScoreComponents) -> ScoreDebug {
    ScoreDebug {
        bm25: f64::from(c.bm25),
        lexical_rank: c.lexical_rank.map(|r| r as u64),
        dense: c.dense.map(f64::from),
        dense_rank: c.dense_rank.map(|r| r as u64),
        fused: f64::from(c.fused),
        definition_boost: f64::from(c.definition_boost),
        path_boost: f64::from(c.path_boost),
        coherence_boost: f64::from(c.coherence_boost),
        category_multiplier: f64::from(c.category_multiplier),
        category: c.category.id().to_owned(),
        changed_multiplier: f64::from(c.changed_multiplier),
        rerank_score: c.rerank_score.map(f64::from),
        rerank_rank: c.rerank_rank.map(|r| r as u64),
        final_score: f64::from(c.final_score),
    }
}

/// How the query text was read.
pub(crate) fn query_kind(kind: CoreQueryKind) -> QueryKind {
    match kind {
        CoreQueryKind::Identifier => QueryKind::Identifier,
        CoreQueryKind::NaturalLanguage => QueryKind::NaturalLanguage,
        CoreQueryKind::Mixed => QueryKind::Mixed,
        CoreQueryKind::Empty => QueryKind::Empty,
    }
}

/// Which retrievers ran.
pub(crate) fn retrieval_mode(mode: CoreRetrievalMode) -> RetrievalMode {
    match mode {
        CoreRetrievalMode::Hybrid => RetrievalMode::Hybrid,
        CoreRetrievalMode::Lexical => RetrievalMode::Lexical,
        CoreRetrievalMode::Dense => RetrievalMode::Dense,
        CoreRetrievalMode::Skipped => RetrievalMode::None,
    }
}

fn operators(q: &ParsedQuery) -> OperatorsDebug {
    OperatorsDebug {
        prefix_block_chars: q.prefix_block_chars as u64,
        lang: q.lang.clone(),
        path: q.path.clone(),
        exclude_path: q.exclude_path.clone(),
        must: q.must.clone(),
        exclude: q.exclude.clone(),
    }
}

/// The query plan and counts of a search (`hints.debugSearch`).
pub(crate) fn search_debug(d: &SearchDiagnostics) -> SearchDebug {
    SearchDebug {
        query_kind: query_kind(d.query_kind),
        semantic_query: d.semantic_query.clone(),
        terms: d.terms.clone(),
        retrieval_mode: retrieval_mode(d.retrieval_mode),
        fusion: d.fusion.map(|f| match f {
            FusionReport::Blend {
                lexical_weight,
                dense_weight,
            } => FusionDebug::Blend {
                lexical_weight: f64::from(lexical_weight),
                dense_weight: f64::from(dense_weight),
            },
            FusionReport::Rrf { k } => FusionDebug::Rrf { k: f64::from(k) },
        }),
        candidates: d.candidates as u64,
        lexical_candidates: d.lexical_candidates as u64,
        dense_candidates: d.dense_candidates as u64,
        filter_counts: d
            .filter_counts
            .iter()
            .map(|(stage, n)| (stage.clone(), *n as u64))
            .collect(),
        after_filters: d.after_filters as u64,
        skipped_by_file_cap: d.skipped_by_file_cap as u64,
        skipped_by_symbol_cap: d.skipped_by_symbol_cap as u64,
        used_relaxed_cap: d.used_relaxed_cap,
        operators: operators(&d.operators),
        rerank: d.rerank.as_ref().map(|r| RerankDebug {
            reranker: r.reranker.clone(),
            requested: r.requested,
            by_default: r.by_default,
            decision: r.decision.to_owned(),
            candidates: r.candidates as u64,
            millis: (r.millis * 100.0).round() / 100.0,
            failure_phase: r.failure_phase.map(str::to_owned),
            error: r.error.clone(),
        }),
    }
}

/// The `.satoriignore` suggestion of a noisy result page.
pub(crate) fn noise_mitigation(noise: &NoiseReport, root_shown: &str) -> NoiseMitigation {
    let mut ratios = NoiseRatios::default();
    for (category, share) in &noise.ratios {
        let share = f64::from((share * 100.0).round() / 100.0);
        // The engine reports exactly these five categories, the fields of the contract's
        // ratios; a category without a field has no place on the wire.
        match category.as_str() {
            "tests" => ratios.tests = share,
            "fixtures" => ratios.fixtures = share,
            "docs" => ratios.docs = share,
            "generated" => ratios.generated = share,
            "runtime" => ratios.runtime = share,
            _ => {}
        }
    }
    NoiseMitigation {
        version: 1,
        reason: "top_results_noise_dominant".to_owned(),
        top_k: u32::try_from(noise.top_k).unwrap_or(u32::MAX),
        ratios,
        recommended_scope: Scope::Runtime,
        suggested_ignore_patterns: noise.suggested_ignore_patterns.clone(),
        next_step: format!(
            "Add the patterns that fit to {root_shown}/.satoriignore, then run manage_index sync."
        ),
        sync: manage_hint(ManageAction::Sync, root_shown),
    }
}

/// One symbol of a file outline, with a call-graph handle when the file's language has one.
pub(crate) fn outline_symbol(file: &str, language: Language, s: &Symbol) -> OutlineSymbol {
    OutlineSymbol {
        symbol_id: s.id.clone(),
        symbol_label: s.label.clone(),
        kind: s.kind.id().to_owned(),
        span: Span::new(s.start_line, s.end_line),
        call_graph_hint: symbol_hint(file, language, s),
    }
}

/// The call-graph handle of a symbol of `file`.
pub(crate) fn symbol_hint(file: &str, language: Language, s: &Symbol) -> CallGraphHint {
    if satori_core::graph::supports(language) {
        CallGraphHint::Supported {
            symbol_ref: SymbolRef {
                file: file.to_owned(),
                symbol_id: s.id.clone(),
                symbol_label: Some(s.label.clone()),
                span: Some(Span::new(s.start_line, s.end_line)),
            },
        }
    } else {
        CallGraphHint::Unsupported {
            reason: CallGraphUnsupportedReason::UnsupportedLanguage,
        }
    }
}
