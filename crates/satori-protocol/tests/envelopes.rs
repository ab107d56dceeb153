//! Envelope serialisation: each shape is snapshotted (optional fields must disappear when
//! unset) and read back, since clients deserialize what the server writes.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use satori_protocol::envelope::{
    AnnotatedRead, CallGraphHint, CallGraphUnsupportedReason, ChunkResult, Compatibility,
    Fingerprint, FreshnessDecision, FreshnessMode, FusionDebug, GroupResult, Hint, IndexState,
    IndexStats, IndexStatus, IndexingProgress, ManageIndexEnvelope, ManageStats, NavigationContext,
    NavigationFallback, NoiseMitigation, NoiseRatios, OpenSymbolFailure, OperatorsDebug, Outline,
    OutlineSymbol, PlainRead, Preflight, PreflightConfidence, PreflightOutcome, Progress,
    QueryKind, ReadFileAnswer, ReadFileNotReady, ReadHints, ReadWindow, ReindexReason, RerankDebug,
    RetrievalMode, ScoreDebug, SearchDebug, SearchEnvelope, SearchHints, SearchResult,
    SkippedFiles, Span, StalenessBucket, Status, SymbolRef, SyncRunStats, SyncStats,
    normalize_warnings, reasons, sorted_warnings, warnings,
};
use satori_protocol::{GroupBy, ManageAction, ReadMode, ResultMode, Scope};

/// Snapshots `value` as JSON under `name` and checks it deserializes back to itself.
fn check<T: Serialize + DeserializeOwned + PartialEq + Debug>(name: &str, value: &T) {
    let json = serde_json::to_value(value).expect("envelope serializes");
    let back: T = serde_json::from_value(json.clone()).expect("envelope deserializes");
    assert_eq!(&back, value, "{name} does not round-trip");
    insta::assert_json_snapshot!(name, json);
}

fn fingerprint(model: &str) -> Fingerprint {
    Fingerprint {
        embedding_provider: "static".to_owned(),
        embedding_model: model.to_owned(),
        embedding_dimension: 256,
        vector_backend: "flat".to_owned(),
        schema_version: "lexical_v1".into(),
    }
}

/// The check of an index built with `indexed_model` against the running model.
fn compatibility(
    indexed_model: &str,
    reindex_reason: Option<ReindexReason>,
    status_at_check: IndexState,
) -> Compatibility {
    Compatibility {
        runtime_fingerprint: fingerprint("potion-code-256@1a2b"),
        indexed_fingerprint: Some(fingerprint(indexed_model)),
        reindex_reason,
        status_at_check: Some(status_at_check),
    }
}

const ROOT: &str = "/home/dev/repo";

/// A `manage_index` envelope for `ROOT` that reports `state`.
fn manage(
    action: ManageAction,
    status: Status,
    state: IndexState,
    message: &str,
) -> ManageIndexEnvelope {
    let mut envelope = ManageIndexEnvelope::new(action, ROOT, status, message);
    envelope.state = Some(state);
    envelope
}

#[test]
fn manage_index_envelopes() {
    let minimal = ManageIndexEnvelope::new(
        ManageAction::Clear,
        ROOT,
        Status::Ok,
        "The index of /home/dev/repo was removed.",
    );
    check("manage_minimal", &minimal);

    let mut kickoff = manage(
        ManageAction::Create,
        Status::Ok,
        IndexState::Indexing,
        "Indexing of /home/dev/repo started in the background.",
    );
    kickoff.hints.status = Some(Hint::manage_index(ManageAction::Status, ROOT));
    kickoff.progress = Some(Progress {
        percentage: 0.0,
        phase: "scanning".to_owned(),
        files_done: 0,
        files_total: 0,
        chunks: 0,
    });
    check("manage_create_kickoff", &kickoff);

    let mut blocked = manage(
        ManageAction::Reindex,
        Status::Blocked,
        IndexState::Indexed,
        "Only ignore rules changed; run sync instead.",
    );
    blocked.reason = Some(reasons::UNNECESSARY_REINDEX_IGNORE_ONLY.to_owned());
    blocked.warnings = vec![warnings::REINDEX_UNNECESSARY_IGNORE_ONLY.to_owned()];
    blocked.hints.sync = Some(Hint::manage_index(ManageAction::Sync, ROOT));
    blocked.hints.reindex = Some(Hint::new(
        "manage_index",
        json!({"action": "reindex", "path": ROOT, "allowUnnecessaryReindex": true}),
    ));
    blocked.preflight = Some(Preflight {
        outcome: PreflightOutcome::ReindexUnnecessaryIgnoreOnly,
        confidence: PreflightConfidence::High,
        probe_failed: None,
    });
    check("manage_reindex_blocked", &blocked);

    let mut status = manage(
        ManageAction::Status,
        Status::Ok,
        IndexState::Indexed,
        "Indexed: 412 files, 3051 chunks.",
    );
    status.stats = Some(ManageStats::Index(IndexStats {
        files: 412,
        chunks: 3051,
        index_status: IndexStatus::Completed,
        indexed_at: Some("2026-01-02T03:04:05Z".to_owned()),
        duration_ms: Some(8123),
        last_sync_at: Some("2026-01-02T03:04:05Z".to_owned()),
        added: None,
        removed: None,
        modified: None,
        skipped: Some(SkippedFiles {
            binary: 3,
            minified: 1,
            secrets: 2,
            oversized: 0,
        }),
        too_deep_files: Some(1),
    }));
    status.compatibility = Some(compatibility(
        "potion-code-256@1a2b",
        None,
        IndexState::Indexed,
    ));
    check("manage_status_indexed", &status);

    let mut sync = manage(
        ManageAction::Sync,
        Status::Ok,
        IndexState::SyncCompleted,
        "Synced: 2 added, 1 removed, 3 modified.",
    );
    sync.stats = Some(ManageStats::Sync(SyncRunStats {
        added: 2,
        removed: 1,
        modified: 3,
        rebuilt: true,
        duration_ms: 420,
    }));
    check("manage_sync", &sync);

    let mut incompatible = manage(
        ManageAction::Status,
        Status::RequiresReindex,
        IndexState::RequiresReindex,
        "The index was built with another embedding model; reindex.",
    );
    incompatible.reason = Some(reasons::REQUIRES_REINDEX.to_owned());
    incompatible.hints.reindex = Some(Hint::manage_index(ManageAction::Reindex, ROOT));
    incompatible.compatibility = Some(compatibility(
        "minilm-l6@9f00",
        Some(ReindexReason::FingerprintMismatch),
        IndexState::RequiresReindex,
    ));
    check("manage_requires_reindex", &incompatible);

    // The two shapes of `stats` are told apart by their keys, and neither takes the other's.
    let index_stats: ManageStats = serde_json::from_value(json!({
        "files": 1, "chunks": 2, "indexStatus": "completed"
    }))
    .expect("index stats");
    assert!(matches!(index_stats, ManageStats::Index(_)));
    let sync_stats: ManageStats = serde_json::from_value(json!({
        "added": 1, "removed": 0, "modified": 0, "rebuilt": true, "durationMs": 5
    }))
    .expect("sync stats");
    assert!(matches!(sync_stats, ManageStats::Sync(_)));
    assert!(
        serde_json::from_value::<ManageStats>(json!({
            "files": 1, "chunks": 2, "indexStatus": "completed", "rebuilt": true
        }))
        .is_err()
    );
}

fn search(status: Status, results: Vec<SearchResult>) -> SearchEnvelope {
    SearchEnvelope {
        status,
        path: ROOT.to_owned(),
        // An answer that stopped at the index gate names no root.
        codebase_root: (status == Status::Ok).then(|| ROOT.to_owned()),
        query: "lang:rust retry policy".to_owned(),
        scope: Scope::Runtime,
        group_by: GroupBy::Symbol,
        result_mode: ResultMode::Grouped,
        limit: 10,
        reason: None,
        freshness_decision: None,
        results,
        warnings: Vec::new(),
        message: None,
        hints: SearchHints::default(),
        compatibility: None,
    }
}

/// The call-graph hint of the one symbol the search and read fixtures share.
fn retry_hint() -> CallGraphHint {
    CallGraphHint::Supported {
        symbol_ref: SymbolRef {
            file: "src/net/retry.rs".to_owned(),
            symbol_id: "sym_7f3a".to_owned(),
            symbol_label: Some("fn retry_with_backoff".to_owned()),
            span: Some(Span::new(12, 48)),
        },
    }
}

fn supported_group() -> SearchResult {
    SearchResult::Group(GroupResult {
        group_id: "sym_7f3a".to_owned(),
        file: "src/net/retry.rs".to_owned(),
        span: Span::new(12, 48),
        language: "rust".to_owned(),
        symbol_id: Some("sym_7f3a".to_owned()),
        symbol_label: Some("fn retry_with_backoff".to_owned()),
        score: 0.8125,
        indexed_at: Some("2026-01-02T03:04:05Z".to_owned()),
        staleness_bucket: StalenessBucket::Fresh,
        collapsed_chunk_count: 2,
        call_graph_hint: retry_hint(),
        navigation_fallback: None,
        preview: "pub fn retry_with_backoff<F>(op: F, policy: &Policy)".to_owned(),
        debug: None,
    })
}

fn unsupported_group() -> SearchResult {
    let abs = format!("{ROOT}/config/retry.toml");
    SearchResult::Group(GroupResult {
        group_id: "grp_0c11".to_owned(),
        file: "config/retry.toml".to_owned(),
        span: Span::new(1, 9),
        language: "toml".to_owned(),
        symbol_id: None,
        symbol_label: None,
        score: 0.5,
        indexed_at: None,
        staleness_bucket: StalenessBucket::Unknown,
        collapsed_chunk_count: 1,
        call_graph_hint: CallGraphHint::Unsupported {
            reason: CallGraphUnsupportedReason::UnsupportedLanguage,
        },
        navigation_fallback: Some(NavigationFallback {
            message: "No call graph for toml; read the span instead.".to_owned(),
            context: NavigationContext {
                codebase_root: ROOT.to_owned(),
                relative_file: "config/retry.toml".to_owned(),
                absolute_path: abs.clone(),
            },
            read_span: Hint::read_file(&abs, 1, 9),
            file_outline_window: Some(Hint::file_outline(ROOT, "config/retry.toml", 1, 9)),
        }),
        preview: "[retry]\nmax_attempts = 5".to_owned(),
        debug: None,
    })
}

#[test]
fn search_envelopes() {
    let mut ok = search(Status::Ok, vec![supported_group(), unsupported_group()]);
    let mut fresh = FreshnessDecision::new(FreshnessMode::Synced);
    fresh.checked_at = Some("2026-01-02T03:05:00Z".to_owned());
    fresh.threshold_ms = Some(180_000);
    fresh.age_ms = Some(240_000);
    fresh.stats = Some(SyncStats {
        added: 0,
        removed: 0,
        modified: 1,
    });
    ok.freshness_decision = Some(fresh);
    check("search_grouped_ok", &ok);

    let mut raw = search(
        Status::Ok,
        vec![SearchResult::Chunk(ChunkResult {
            file: "src/net/retry.rs".to_owned(),
            span: Span::new(12, 20),
            language: "rust".to_owned(),
            content: "pub fn retry_with_backoff() {}".to_owned(),
            score: 0.75,
            symbol_id: None,
            symbol_label: None,
            indexed_at: None,
            staleness_bucket: StalenessBucket::Unknown,
            debug: Some(ScoreDebug {
                bm25: 7.5,
                lexical_rank: Some(0),
                dense: None,
                dense_rank: None,
                fused: 1.0,
                definition_boost: 2.0,
                path_boost: 0.0,
                coherence_boost: 0.0,
                category_multiplier: 1.0,
                category: "runtime".to_owned(),
                changed_multiplier: 1.0,
                rerank_score: None,
                rerank_rank: None,
                final_score: 2.0,
            }),
        })],
    );
    raw.result_mode = ResultMode::Raw;
    raw.freshness_decision = Some(FreshnessDecision::new(FreshnessMode::SkippedRecent));
    raw.warnings = sorted_warnings([warnings::RERANKER_FAILED, warnings::FILTER_MUST_UNSATISFIED]);
    raw.hints.debug_search = Some(SearchDebug {
        query_kind: QueryKind::Mixed,
        semantic_query: "retry policy".to_owned(),
        terms: vec!["retry".to_owned(), "policy".to_owned()],
        retrieval_mode: RetrievalMode::Lexical,
        fusion: Some(FusionDebug::Blend {
            lexical_weight: 0.5,
            dense_weight: 0.5,
        }),
        candidates: 12,
        lexical_candidates: 12,
        dense_candidates: 0,
        filter_counts: vec![("scope".to_owned(), 12), ("lang".to_owned(), 3)],
        after_filters: 3,
        skipped_by_file_cap: 0,
        skipped_by_symbol_cap: 0,
        used_relaxed_cap: false,
        operators: OperatorsDebug {
            prefix_block_chars: 10,
            lang: vec!["rust".to_owned()],
            ..OperatorsDebug::default()
        },
        rerank: Some(RerankDebug {
            reranker: Some("voyageai/rerank-2.5".to_owned()),
            requested: None,
            by_default: true,
            decision: "failed".to_owned(),
            candidates: 3,
            millis: 12.5,
            failure_phase: Some("api_call".to_owned()),
            error: Some("VoyageAI answered HTTP 500 (internal)".to_owned()),
        }),
    });
    check("search_raw", &raw);

    let mut not_indexed = search(Status::NotIndexed, Vec::new());
    not_indexed.reason = Some(reasons::NOT_INDEXED.to_owned());
    not_indexed.message = Some("/home/dev/repo is not indexed.".to_owned());
    not_indexed.hints.create = Some(Hint::manage_index(ManageAction::Create, ROOT));
    check("search_not_indexed", &not_indexed);

    let mut not_ready = search(Status::NotReady, Vec::new());
    not_ready.reason = Some(reasons::INDEXING.to_owned());
    not_ready.freshness_decision = Some(FreshnessDecision::new(FreshnessMode::SkippedIndexing));
    not_ready.message = Some("/home/dev/repo is being indexed (12%).".to_owned());
    not_ready.hints.status = Some(Hint::manage_index(ManageAction::Status, ROOT));
    check("search_not_ready", &not_ready);

    let mut noisy = search(Status::Ok, vec![supported_group()]);
    noisy.scope = Scope::Mixed;
    noisy.freshness_decision = Some(FreshnessDecision::new(FreshnessMode::Coalesced));
    noisy.hints.noise_mitigation = Some(NoiseMitigation {
        version: 1,
        reason: "top_results_noise_dominant".to_owned(),
        top_k: 5,
        ratios: NoiseRatios {
            tests: 0.6,
            runtime: 0.4,
            ..NoiseRatios::default()
        },
        recommended_scope: Scope::Runtime,
        suggested_ignore_patterns: vec!["**/*.test.*".to_owned()],
        next_step: "Add the patterns to .satoriignore, then run manage_index sync.".to_owned(),
        sync: Hint::manage_index(ManageAction::Sync, ROOT),
    });
    check("search_noise_hint", &noisy);
}

#[test]
fn search_hints_are_named_fields() {
    let mut hints = SearchHints::default();
    assert!(hints.is_empty());
    hints.reindex = Some(Hint::manage_index(ManageAction::Reindex, ROOT));
    let json = serde_json::to_value(&hints).expect("serializes");
    assert_eq!(
        json,
        json!({
            "reindex": {"tool": "manage_index", "args": {"action": "reindex", "path": ROOT}},
        })
    );
    let back: SearchHints = serde_json::from_value(json).expect("deserializes");
    assert_eq!(back, hints);
    // A hint the contract does not name is refused, not carried along.
    assert!(
        serde_json::from_value::<SearchHints>(json!({
            "rebuild": {"tool": "manage_index", "args": {}},
        }))
        .is_err()
    );
}

#[test]
fn read_file_envelopes() {
    check(
        "read_not_ready",
        &ReadFileNotReady::new(
            format!("{ROOT}/src/lib.rs"),
            ROOT,
            "The codebase is being indexed; try again when status says indexed.",
            ReadHints {
                status: Some(Hint::manage_index(ManageAction::Status, ROOT)),
                next: None,
            },
            IndexingProgress {
                progress_pct: 42.5,
                phase: None,
            },
        ),
    );

    let symbol = OutlineSymbol {
        symbol_id: "sym_7f3a".to_owned(),
        symbol_label: "fn retry_with_backoff".to_owned(),
        kind: "function".to_owned(),
        span: Span::new(12, 48),
        call_graph_hint: retry_hint(),
    };
    check(
        "read_annotated",
        &AnnotatedRead {
            path: format!("{ROOT}/src/net/retry.rs"),
            codebase_root: Some(ROOT.to_owned()),
            mode: ReadMode::Annotated,
            content: "pub fn retry_with_backoff() {}".to_owned(),
            outline_status: Status::Ok,
            outline: Some(Outline {
                symbols: vec![symbol.clone()],
            }),
            has_more: true,
            span: ReadWindow {
                start_line: 12,
                end_line: 12,
                total_lines: 80,
            },
            warnings: Vec::new(),
            hints: ReadHints {
                status: None,
                next: Some(Hint::read_file(&format!("{ROOT}/src/net/retry.rs"), 13, 80)),
            },
        },
    );
    check(
        "read_plain",
        &PlainRead {
            path: format!("{ROOT}/src/net/retry.rs"),
            mode: ReadMode::Plain,
            content: "pub fn retry_with_backoff() {}".to_owned(),
            has_more: false,
            span: ReadWindow {
                start_line: 12,
                end_line: 12,
                total_lines: 12,
            },
        },
    );
    check(
        "read_open_symbol_ambiguous",
        &OpenSymbolFailure {
            status: Status::Ambiguous,
            path: format!("{ROOT}/src/net/retry.rs"),
            codebase_root: Some(ROOT.to_owned()),
            file: "src/net/retry.rs".to_owned(),
            message: "2 symbols are labelled fn retry_with_backoff; pass symbolId.".to_owned(),
            matches: vec![symbol.clone(), symbol],
            warnings: Vec::new(),
            hints: ReadHints::default(),
        },
    );
    // The answer type of the tool tells the shapes apart by their keys alone.
    let plain = json!({"path": "/r/a.rs", "mode": "plain", "content": "x", "hasMore": false,
        "span": {"startLine": 1, "endLine": 1, "totalLines": 1}});
    assert!(matches!(
        serde_json::from_value::<ReadFileAnswer>(plain).expect("plain read"),
        ReadFileAnswer::Plain(_)
    ));
}

#[test]
fn call_graph_hint_rejects_inconsistent_shapes() {
    let bad = [
        json!({"supported": true}),
        json!({"supported": false}),
        json!({"supported": true, "reason": "missing_symbol"}),
        json!({"supported": false, "reason": "missing_symbol", "symbolRef": {"file": "a", "symbolId": "b"}}),
        json!({"supported": false, "reason": "no_idea"}),
        json!({"supported": "yes", "reason": "missing_symbol"}),
    ];
    for value in bad {
        assert!(
            serde_json::from_value::<CallGraphHint>(value.clone()).is_err(),
            "{value}"
        );
    }
    let good: CallGraphHint =
        serde_json::from_value(json!({"supported": false, "reason": "missing_symbol"}))
            .expect("valid unsupported hint");
    assert!(!good.is_supported());
    assert_eq!(good.symbol_ref(), None);
}

#[test]
fn warnings_are_sorted_and_unique() {
    let cases: [(&[&str], &[&str]); 3] = [
        (&[], &[]),
        (
            &[
                "SEARCH_PASS_FAILED:primary",
                "FILTER_MUST_UNSATISFIED",
                "SEARCH_PASS_FAILED:primary",
            ],
            &["FILTER_MUST_UNSATISFIED", "SEARCH_PASS_FAILED:primary"],
        ),
        (&["B", "A", "B", "A"], &["A", "B"]),
    ];
    for (input, expected) in cases {
        assert_eq!(sorted_warnings(input.iter().copied()), expected);
        let mut owned: Vec<String> = input.iter().map(|s| (*s).to_owned()).collect();
        normalize_warnings(&mut owned);
        assert_eq!(owned, expected);
    }
    assert_eq!(
        warnings::with_detail(warnings::SEARCH_PASS_FAILED, "expanded"),
        "SEARCH_PASS_FAILED:expanded"
    );
}

#[test]
fn staleness_buckets_follow_the_age_thresholds() {
    const MIN: u64 = 60 * 1000;
    let cases = [
        (None, StalenessBucket::Unknown),
        (Some(0), StalenessBucket::Fresh),
        (Some(30 * MIN - 1), StalenessBucket::Fresh),
        (Some(30 * MIN), StalenessBucket::Aging),
        (Some(24 * 60 * MIN - 1), StalenessBucket::Aging),
        (Some(24 * 60 * MIN), StalenessBucket::Stale),
    ];
    for (age, expected) in cases {
        assert_eq!(StalenessBucket::from_age_ms(age), expected, "{age:?}");
    }
}

#[test]
fn index_state_classes() {
    let searchable: Vec<IndexState> = IndexState::ALL
        .iter()
        .copied()
        .filter(|s| s.is_searchable())
        .collect();
    assert_eq!(searchable, [IndexState::Indexed, IndexState::SyncCompleted]);
    let running: Vec<IndexState> = IndexState::ALL
        .iter()
        .copied()
        .filter(|s| !s.is_terminal())
        .collect();
    assert_eq!(running, [IndexState::Indexing]);
    assert_eq!(
        serde_json::to_value(IndexState::IndexFailed).expect("serializes"),
        Value::from("indexfailed")
    );
}
