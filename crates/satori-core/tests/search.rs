//! End-to-end tests of a generation: write a small multi-language corpus (hand-chunked, so
//! these tests do not depend on the chunker), open it, and check what searches return.
//!
//! The corpus lives in `tests/fixtures/search/corpus/`; `tests/fixtures/search/chunks.json`
//! gives each file's chunks (line span, symbol, defined names, breadcrumbs).

use std::path::{Path, PathBuf};

use satori_core::search::category::Category;
use satori_core::search::query::QueryKind;
use satori_core::search::{
    self, GroupBy, Index, ResultMode, Scope, SearchContext, SearchOutcome, SearchRequest,
    SearchTuning, Weights,
};
use satori_core::{
    Chunk, ChunkedFile, FileRecord, Generation, GenerationStats, GenerationWriter, Language,
    Symbol, SymbolKind, hash_parts, hash16,
};
use serde::Deserialize;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search")
}

#[derive(Deserialize)]
struct ChunkSpec {
    lines: [u32; 2],
    sym: Option<SymSpec>,
    #[serde(default)]
    defines: Vec<String>,
    #[serde(default)]
    breadcrumbs: Vec<String>,
}

#[derive(Deserialize)]
struct SymSpec {
    kind: SymbolKind,
    name: String,
    label: String,
    span: Option<[u32; 2]>,
    #[serde(default)]
    scope: Vec<String>,
}

/// The corpus as the engine would hand it to the writer, in file-path order.
fn corpus() -> Vec<(FileRecord, ChunkedFile)> {
    let specs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("chunks.json")).unwrap())
            .unwrap();
    let mut out = Vec::new();
    for (path, chunks) in specs {
        let chunks: Vec<ChunkSpec> = serde_json::from_value(chunks).unwrap();
        let text = std::fs::read_to_string(fixtures().join("corpus").join(&path)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let language = Language::from_path(&path).unwrap_or(Language::Text);
        let mut chunked = ChunkedFile::default();
        for spec in chunks {
            let [start, end] = spec.lines;
            let content = lines[start as usize - 1..end as usize].join("\n");
            let symbol = spec.sym.map(|s| {
                let [ss, se] = s.span.unwrap_or(spec.lines);
                Symbol {
                    id: format!("sym_{}", hash_parts(&[&path, &s.name, s.kind.id()], 16)),
                    name: s.name,
                    label: s.label,
                    kind: s.kind,
                    start_line: ss,
                    end_line: se,
                    scope: s.scope,
                }
            });
            if let Some(sym) = &symbol
                && !chunked.symbols.contains(sym)
            {
                chunked.symbols.push(sym.clone());
            }
            chunked.chunks.push(Chunk {
                file: path.clone(),
                language,
                start_line: start,
                end_line: end,
                content_hash: hash16(content.as_bytes()),
                content,
                symbol,
                defines: spec.defines,
                breadcrumbs: spec.breadcrumbs,
            });
        }
        let record = FileRecord {
            path: path.clone(),
            language,
            size: text.len() as u64,
            mtime_ms: 1_700_000_000_000,
            indexed_at_ms: 1_700_000_100_000,
        };
        out.push((record, chunked));
    }
    out.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    out
}

/// Writes the corpus (in the given file order) into a fresh generation directory.
fn build(dir: &Path, files: &[(FileRecord, ChunkedFile)]) -> GenerationStats {
    let mut writer = GenerationWriter::create(dir, None).unwrap();
    for (record, chunked) in files {
        writer.add_file(record, chunked, &[]).unwrap();
    }
    writer.finish().unwrap()
}

struct Fixture {
    _dir: tempfile::TempDir,
    index: Index,
}

/// Searches with the default ranking and no embedding model.
fn run(index: &Index, request: &SearchRequest) -> satori_core::Result<SearchOutcome> {
    search::search(index, request, SearchContext::default())
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let stats = build(dir.path(), &corpus());
    assert_eq!(
        stats,
        GenerationStats {
            files: 17,
            chunks: 29
        }
    );
    let generation = Generation::open(dir.path()).unwrap();
    assert_eq!(generation.stats(), stats);
    assert!(
        !dir.path().join("vectors").exists(),
        "vectors/ is reserved, not created"
    );
    Fixture {
        _dir: dir,
        index: Index::new(generation),
    }
}

fn req(query: &str) -> SearchRequest {
    SearchRequest {
        query: query.to_string(),
        limit: 10,
        ..SearchRequest::default()
    }
}

/// A compact, stable rendering of an outcome: one line per hit.
fn render(outcome: &SearchOutcome) -> String {
    let mut out = String::new();
    for (i, h) in outcome.hits.iter().enumerate() {
        out.push_str(&format!(
            "{:>2}. {}:{}-{} {} x{} {:.3}\n",
            i + 1,
            h.file,
            h.start_line,
            h.end_line,
            h.symbol.as_ref().map_or("-", |s| s.name.as_str()),
            h.collapsed_chunk_count,
            h.score,
        ));
    }
    if !outcome.warnings.is_empty() {
        out.push_str(&format!("warnings: {}\n", outcome.warnings.join(", ")));
    }
    if let Some(noise) = &outcome.noise {
        out.push_str(&format!(
            "noise: top {} {:?} suggest {:?}\n",
            noise.top_k, noise.ratios, noise.suggested_ignore_patterns
        ));
    }
    let d = &outcome.diagnostics;
    out.push_str(&format!(
        "kind={} candidates={} after_filters={} filters={:?}\n",
        d.query_kind.id(),
        d.candidates,
        d.after_filters,
        d.filter_counts
    ));
    out
}

/// Runs `request`, checks that the top hits are `expected_top` (as `file` or
/// `file#symbol`), and snapshots the whole outcome under `name`.
#[track_caller]
fn check(f: &Fixture, name: &str, request: SearchRequest, expected_top: &[&str]) -> SearchOutcome {
    let outcome = run(&f.index, &request).unwrap();
    let got: Vec<String> = outcome
        .hits
        .iter()
        .take(expected_top.len())
        .map(
            |h| match (&h.symbol, expected_top.iter().any(|e| e.contains('#'))) {
                (Some(s), true) => format!("{}#{}", h.file, s.name),
                _ => h.file.clone(),
            },
        )
        .collect();
    assert_eq!(got, expected_top, "{name}:\n{}", render(&outcome));
    insta::assert_snapshot!(name, render(&outcome));
    outcome
}

#[test]
fn ranking() {
    let f = fixture();
    // The definition beats the handlers that call it many times.
    let o = check(
        &f,
        "identifier_definition_first",
        req("getUserById"),
        &[
            "src/users/repository.ts#getUserById",
            "src/api/handlers.ts#handleGetUser",
        ],
    );
    assert_eq!(o.diagnostics.query_kind, QueryKind::Identifier);
    // snake_case and camelCase spellings of one name meet.
    check(
        &f,
        "identifier_snake_variant",
        req("get_user_by_id"),
        &["src/users/repository.ts#getUserById"],
    );
    check(
        &f,
        "identifier_rust",
        req("parse_header"),
        &["crates/parser/src/header.rs#parse_header"],
    );
    check(
        &f,
        "qualified_identifier",
        req("Server::HandleLogin"),
        &["go/server/server.go#HandleLogin"],
    );
    let o = check(
        &f,
        "natural_language",
        req("how are failed requests retried with exponential backoff"),
        &["src/net/retry.py#retry_with_backoff"],
    );
    assert_eq!(o.diagnostics.query_kind, QueryKind::NaturalLanguage);
    check(
        &f,
        "natural_language_session",
        req("extend session expiry"),
        &["src/auth/session.ts#refreshSession"],
    );
    // "locate" relates to `find`, and the question covers every word of the name.
    let o = check(
        &f,
        "natural_language_related_words",
        req("locate the users registered under an email"),
        &["src/users/repository.ts#findUsersByEmail"],
    );
    assert!(o.diagnostics.terms.iter().any(|t| t == "find"));
    // The vendored copy is demoted below the project's own function.
    check(
        &f,
        "vendored_demoted",
        req("debounce"),
        &["src/utils/debounce.ts", "vendor/lodash/debounce.js"],
    );
}

#[test]
fn scopes() {
    let f = fixture();
    let o = check(
        &f,
        "scope_runtime",
        req("retry_with_backoff"),
        &["src/net/retry.py"],
    );
    assert!(
        o.hits
            .iter()
            .all(|h| !h.file.starts_with("tests/") && !h.file.ends_with(".md"))
    );
    let o = check(
        &f,
        "scope_mixed",
        SearchRequest {
            scope: Scope::Mixed,
            ..req("retry_with_backoff")
        },
        &["src/net/retry.py"],
    );
    assert!(o.hits.iter().any(|h| h.file == "tests/test_retry.py"));
    // Rust unit tests inside a source file are tests too: out of runtime, in mixed.
    let o = check(
        &f,
        "scope_runtime_inline_tests",
        req("parse_header splits at the colon"),
        &["crates/parser/src/header.rs#parse_header"],
    );
    assert!(o.hits.iter().all(|h| h.end_line < 19), "{}", render(&o));
    let o = check(
        &f,
        "scope_mixed_inline_tests",
        SearchRequest {
            scope: Scope::Mixed,
            debug: true,
            ..req("parse_header splits at the colon")
        },
        &["crates/parser/src/header.rs#parse_header"],
    );
    let test = o
        .hits
        .iter()
        .take(3)
        .find(|h| h.start_line == 24)
        .unwrap_or_else(|| panic!("the inline test is not in the top 3:\n{}", render(&o)));
    let c = test.components.as_ref().unwrap();
    assert_eq!(c.category, Category::Tests);
    let o = check(
        &f,
        "scope_docs_inline_tests",
        SearchRequest {
            scope: Scope::Docs,
            ..req("parse_header splits at the colon")
        },
        &["crates/parser/src/header.rs#parse_header_splits_at_the_colon"],
    );
    assert!(o.hits.iter().all(|h| h.start_line >= 19), "{}", render(&o));
    let o = check(
        &f,
        "scope_docs",
        SearchRequest {
            scope: Scope::Docs,
            ..req("retry policy backoff")
        },
        &["docs/retries.md"],
    );
    assert!(
        o.hits
            .iter()
            .all(|h| h.file.ends_with(".md") || h.file.starts_with("tests/")),
        "{}",
        render(&o)
    );
}

#[test]
fn operators() {
    let f = fixture();
    check(&f, "op_lang", req("lang:py retry"), &["src/net/retry.py"]);
    let o = run(&f.index, &req("lang:py retry")).unwrap();
    assert!(o.hits.iter().all(|h| h.language == Language::Python));
    let o = check(
        &f,
        "op_path",
        req("path:src/net/** client"),
        &["src/net/http_client.py"],
    );
    assert!(o.hits.iter().all(|h| h.file.starts_with("src/net/")));
    let o = check(
        &f,
        "op_not_path",
        req("-path:src/net/ retry"),
        &["examples/retry_example.py"],
    );
    assert!(o.hits.iter().all(|h| !h.file.starts_with("src/net/")));
    // Only the two chunks that mention `transport` remain.
    let o = check(
        &f,
        "op_must",
        req("must:transport retry"),
        &["src/net/http_client.py", "examples/retry_example.py"],
    );
    assert_eq!(o.hits.len(), 2, "{}", render(&o));
    // The chunk mentioning jitter goes; the other chunk of the same function stays.
    let o = check(
        &f,
        "op_exclude",
        req("exclude:jitter retry backoff"),
        &["src/net/retry.py#retry_with_backoff"],
    );
    assert_eq!(o.hits[0].collapsed_chunk_count, 1);
    let full = run(&f.index, &req("retry backoff")).unwrap();
    assert_eq!(full.hits[0].collapsed_chunk_count, 2);
    check(
        &f,
        "op_must_unsatisfied",
        req("must:nonexistenttoken retry"),
        &[],
    );
    check(
        &f,
        "op_unknown_lang",
        req("lang:klingon lang:ts session"),
        &["src/auth/session.ts"],
    );
    // Operator-only: everything under the path, in path and line order (grouped results
    // have no per-file decay; the file cap keeps the page diverse).
    let o = check(
        &f,
        "op_only_path",
        req("path:crates/"),
        &[
            "crates/parser/src/header.rs",
            "crates/parser/src/header.rs",
            "crates/parser/src/lib.rs",
            "crates/parser/src/lib.rs",
        ],
    );
    assert_eq!(o.diagnostics.query_kind, QueryKind::Empty);
    check(&f, "op_only_exclude", req("exclude:x"), &[]);
}

#[test]
fn grouping_and_raw() {
    let f = fixture();
    // The two chunks of retry_with_backoff fold into one group spanning the symbol.
    let o = check(
        &f,
        "grouped_symbol",
        req("retry_with_backoff attempts delay"),
        &["src/net/retry.py"],
    );
    let top = &o.hits[0];
    assert_eq!(
        (top.start_line, top.end_line, top.collapsed_chunk_count),
        (14, 22, 2)
    );
    assert!(top.group_id.starts_with("sym_"));
    assert!(top.language_has_symbols);
    assert!(top.text.lines().count() <= 8 && top.text.chars().count() <= 400);
    assert!(top.text.contains("retry_with_backoff"), "{}", top.text);
    // Grouping by file: one group per file.
    let o = check(
        &f,
        "grouped_file",
        SearchRequest {
            group_by: GroupBy::File,
            ..req("retry_with_backoff attempts delay")
        },
        &["src/net/retry.py", "src/net/http_client.py"],
    );
    assert_eq!(o.hits[0].collapsed_chunk_count, 3);
    let mut files: Vec<&str> = o.hits.iter().map(|h| h.file.as_str()).collect();
    files.dedup();
    assert_eq!(files.len(), o.hits.len());
    // Raw chunks: content, chunk spans, file saturation (scores of one file decay).
    let o = check(
        &f,
        "raw",
        SearchRequest {
            result_mode: ResultMode::Raw,
            debug: true,
            ..req("retry_with_backoff attempts delay")
        },
        &["src/net/retry.py"],
    );
    assert!(o.hits.iter().all(|h| h.collapsed_chunk_count == 1));
    assert!(
        o.hits[0].text.starts_with("def retry_with_backoff"),
        "{}",
        o.hits[0].text
    );
    let c = o.hits[0].components.as_ref().unwrap();
    assert_eq!(c.category, Category::Runtime);
    // A mixed query: the identifier it names counts, at a reduced weight.
    assert!(
        (c.definition_boost - 0.3).abs() < 1e-6,
        "{}",
        c.definition_boost
    );
    assert!(
        o.hits
            .iter()
            .filter(|h| h.file == "src/net/retry.py")
            .count()
            >= 2
    );
}

#[test]
fn diversity_caps() {
    let f = fixture();
    // src/auth/session.ts has three matching symbols: at most two of them while other
    // files can fill the page.
    let o = check(
        &f,
        "file_cap",
        SearchRequest {
            limit: 3,
            ..req("session")
        },
        &[
            "src/auth/session.ts",
            "src/auth/session.ts",
            "go/server/server.go",
        ],
    );
    assert_eq!(o.diagnostics.skipped_by_file_cap, 1);
    assert!(!o.diagnostics.used_relaxed_cap);
    // A page that only that file can fill relaxes the cap once, to three.
    let o = check(
        &f,
        "relaxed_cap",
        SearchRequest {
            limit: 5,
            ..req("path:src/auth/** session")
        },
        &[
            "src/auth/session.ts",
            "src/auth/session.ts",
            "src/auth/session.ts",
        ],
    );
    assert_eq!(o.hits.len(), 3);
    assert!(o.diagnostics.used_relaxed_cap);
    assert_eq!(o.diagnostics.skipped_by_file_cap, 0);
}

#[test]
fn plain_bm25_ablation() {
    // `no_fields` is the benchmark's plain BM25: the words are scored on the chunk's text
    // alone, so a file whose path is the only place a word appears is not found by it.
    let f = fixture();
    let tuning = SearchTuning::parse("no_fields").unwrap();
    assert!(!tuning.fields && SearchTuning::default().fields);
    let files = |o: &SearchOutcome| o.hits.iter().map(|h| h.file.clone()).collect::<Vec<_>>();
    let with_fields = run(&f.index, &req("repository")).unwrap();
    assert_eq!(files(&with_fields)[0], "src/users/repository.ts");
    let ctx = SearchContext {
        embedder: None,
        tuning,
        rerank: Default::default(),
    };
    let plain = search::search(&f.index, &req("repository"), ctx).unwrap();
    assert_eq!(files(&plain), ["src/api/handlers.ts"]);
}

#[test]
fn path_ablation_drops_all_path_evidence() {
    // `no_path` measures everything a file's path says: the path signals and the path field
    // of the lexical query, so the file named for the word is found only through its text.
    // `no_signals` keeps the field (it is a field, measured by `no_fields`).
    let f = fixture();
    let tuning = SearchTuning::parse("no_path").unwrap();
    assert!(!tuning.path && !tuning.path_field);
    assert!(SearchTuning::parse("no_signals").unwrap().path_field);
    let files = |o: &SearchOutcome| o.hits.iter().map(|h| h.file.clone()).collect::<Vec<_>>();
    let ctx = SearchContext {
        embedder: None,
        tuning,
        rerank: Default::default(),
    };
    let without = search::search(&f.index, &req("repository"), ctx).unwrap();
    assert_eq!(files(&without), ["src/api/handlers.ts"]);
}

#[test]
fn changed_files_and_prefix() {
    let f = fixture();
    let base = run(&f.index, &req("debounce")).unwrap();
    assert_eq!(base.hits[0].file, "src/utils/debounce.ts");
    let o = check(
        &f,
        "path_prefix",
        SearchRequest {
            path_prefix: Some("vendor/".into()),
            ..req("debounce")
        },
        &["vendor/lodash/debounce.js"],
    );
    assert_eq!(o.hits.len(), 1);
    // The changed-files boost is mild: ×1.1 on the changed file only.
    let o = run(
        &f.index,
        &SearchRequest {
            changed_files: Some(vec!["vendor/lodash/debounce.js".into()]),
            debug: true,
            ..req("debounce")
        },
    )
    .unwrap();
    let vendored = o
        .hits
        .iter()
        .find(|h| h.file.starts_with("vendor/"))
        .unwrap();
    assert_eq!(
        vendored.components.as_ref().unwrap().changed_multiplier,
        1.1
    );
    let before = base
        .hits
        .iter()
        .find(|h| h.file.starts_with("vendor/"))
        .unwrap();
    assert!((vendored.score / before.score - 1.1).abs() < 1e-4);
    // Above 50 changed files the boost is off.
    let many: Vec<String> = (0..51)
        .map(|i| format!("f{i}"))
        .chain(["vendor/lodash/debounce.js".into()])
        .collect();
    let o = run(
        &f.index,
        &SearchRequest {
            changed_files: Some(many),
            ..req("debounce")
        },
    )
    .unwrap();
    assert_eq!(o, base);
}

#[test]
fn noise_report() {
    let f = fixture();
    // Only a test and a fixture know these users.
    let o = check(
        &f,
        "noise",
        SearchRequest {
            scope: Scope::Mixed,
            ..req("ada grace")
        },
        &["tests/fixtures/users.json", "src/users/repository.test.ts"],
    );
    let noise = o.noise.expect("tests and fixtures dominate");
    assert_eq!(
        noise.suggested_ignore_patterns,
        ["**/*.test.*", "**/fixtures/**"]
    );
    assert!(run(&f.index, &req("getUserById")).unwrap().noise.is_none());
    // Docs scope asks for tests and docs: never noise there.
    let docs = SearchRequest {
        scope: Scope::Docs,
        ..req("ada grace")
    };
    assert!(run(&f.index, &docs).unwrap().noise.is_none());
}

#[test]
fn deterministic_and_order_independent() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let mut files = corpus();
    files.reverse();
    build(dir.path(), &files);
    let reversed = Index::new(Generation::open(dir.path()).unwrap());
    for q in [
        "getUserById",
        "retry backoff",
        "users email session",
        "path:src/",
        "must:session user",
    ] {
        for mode in [ResultMode::Grouped, ResultMode::Raw] {
            let r = SearchRequest {
                result_mode: mode,
                scope: Scope::Mixed,
                debug: true,
                ..req(q)
            };
            let a = run(&f.index, &r).unwrap();
            let b = run(&f.index, &r).unwrap();
            assert_eq!(a, b, "same query twice: {q}");
            // Another write order changes the index's internal doc order (and the last bits
            // of float sums), not the ranking.
            let c = run(&reversed, &r).unwrap();
            assert_eq!(render(&a), render(&c), "other write order: {q}");
            let texts =
                |o: &SearchOutcome| o.hits.iter().map(|h| h.text.clone()).collect::<Vec<_>>();
            assert_eq!(texts(&a), texts(&c));
        }
    }
}

#[test]
fn open_rejects_a_damaged_generation() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), &corpus());
    let table = dir.path().join("chunks.bin");
    let mut bytes = std::fs::read(&table).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&table, &bytes).unwrap();
    assert!(Generation::open(dir.path()).is_err());
    std::fs::write(&table, b"not a table").unwrap();
    assert!(Generation::open(dir.path()).is_err());
}

/// Hundreds of chunks with the very same text score exactly alike, more than the first
/// candidate pool holds. Which of them make the pool must not depend on the index's internal
/// document order (a rebuild and an in-place update of the same tree order documents
/// differently): written forwards or backwards, the answer is the same.
#[test]
fn equal_scores_are_cut_by_place_not_by_write_order() {
    let files: Vec<(FileRecord, ChunkedFile)> = (0..300)
        .map(|i| {
            let path = format!("src/handlers/h{i:03}.rs");
            let content = "pub fn handle_request(req: Request) -> Response {\n    route(req)\n}";
            let chunk = Chunk {
                file: path.clone(),
                language: Language::Rust,
                start_line: 1,
                end_line: 3,
                content_hash: hash16(content.as_bytes()),
                content: content.to_string(),
                symbol: None,
                defines: Vec::new(),
                breadcrumbs: Vec::new(),
            };
            let record = FileRecord {
                path,
                language: Language::Rust,
                size: content.len() as u64,
                mtime_ms: 1_700_000_000_000,
                indexed_at_ms: 1_700_000_100_000,
            };
            let chunked = ChunkedFile {
                chunks: vec![chunk],
                ..ChunkedFile::default()
            };
            (record, chunked)
        })
        .collect();
    let forwards = tempfile::tempdir().unwrap();
    build(forwards.path(), &files);
    let mut reversed_files = files.clone();
    reversed_files.reverse();
    let backwards = tempfile::tempdir().unwrap();
    build(backwards.path(), &reversed_files);
    let forwards = Index::new(Generation::open(forwards.path()).unwrap());
    let backwards = Index::new(Generation::open(backwards.path()).unwrap());
    for mode in [ResultMode::Grouped, ResultMode::Raw] {
        let r = SearchRequest {
            result_mode: mode,
            ..req("handle request route")
        };
        let a = render(&run(&forwards, &r).unwrap());
        let b = render(&run(&backwards, &r).unwrap());
        assert_eq!(a, b, "{mode:?}");
        assert!(a.starts_with(" 1. src/handlers/h000.rs:1-3"), "{a}");
    }
}

/// Runs `query` with the default ranking but for the weights in `overrides` (JSON), with
/// score components.
fn run_with(f: &Fixture, query: &str, overrides: &str) -> SearchOutcome {
    let tuning = SearchTuning {
        weights: Weights::with_overrides(overrides).unwrap(),
        ..SearchTuning::default()
    };
    let request = SearchRequest {
        debug: true,
        ..req(query)
    };
    search::search(
        &f.index,
        &request,
        SearchContext {
            embedder: None,
            tuning,
            rerank: Default::default(),
        },
    )
    .unwrap()
}

#[test]
fn ranking_components() {
    let f = fixture();
    let located = |o: &SearchOutcome| -> Vec<String> {
        o.hits
            .iter()
            .map(|h| format!("{}#{}", h.file, h.symbol.as_ref().map_or("-", |s| &s.name)))
            .collect()
    };
    let parts = |o: &SearchOutcome, at: usize| o.hits[at].components.clone().unwrap();

    // Definition lookup: with a one-chunk pool, retrieval finds only the handler that
    // mentions `getUserById` most; the lookup still brings its definition.
    let tiny = r#"{"pool_min": 1, "pool_first_max": 1, "pool_max": 1"#;
    let query = "handleProfile response profile getUserById";
    let on = run_with(&f, query, &format!("{tiny}}}"));
    let off = run_with(&f, query, &format!(r#"{tiny}, "definition_lookup": 0}}"#));
    assert_eq!(located(&off), ["src/api/handlers.ts#handleProfile"]);
    assert!(
        located(&on).contains(&"src/users/repository.ts#getUserById".to_string()),
        "{:?}",
        located(&on)
    );

    // File coherence: the best chunk of the file with the largest share of the retrieval
    // score gets the whole boost; a file's other chunks get none.
    let o = run_with(&f, "session", "{}");
    assert_eq!(o.hits[0].file, "src/auth/session.ts");
    assert!((parts(&o, 0).coherence_boost - Weights::default().file_coherence).abs() < 1e-6);
    assert_eq!(o.hits[1].file, "src/auth/session.ts");
    assert_eq!(parts(&o, 1).coherence_boost, 0.0);
    let none = run_with(&f, "session", r#"{"file_coherence": 0}"#);
    assert!(
        none.hits
            .iter()
            .all(|h| h.components.as_ref().unwrap().coherence_boost == 0.0)
    );

    // Grouped per-file decay: a file's second group keeps `group_file_decay` of its score.
    let flat = run_with(&f, "session", r#"{"group_file_decay": 1.0}"#);
    let decayed = run_with(&f, "session", r#"{"group_file_decay": 0.5}"#);
    assert_eq!(located(&flat)[1], located(&decayed)[1]);
    assert!((decayed.hits[1].score - 0.5 * flat.hits[1].score).abs() < 1e-6);
    assert_eq!(decayed.hits[0].score, flat.hits[0].score);

    // Path words: a question's word that names the file (`retries` ~ `retry.py`) raises
    // the file's chunks, in proportion to the weight; at 0 it is off.
    let question = "how are retries scheduled";
    let hit = |o: &SearchOutcome| {
        o.hits
            .iter()
            .position(|h| h.file == "src/net/retry.py")
            .map(|i| parts(o, i).path_boost)
    };
    assert_eq!(
        hit(&run_with(&f, question, r#"{"path_words": 0}"#)),
        Some(0.0)
    );
    let shipped = hit(&run_with(&f, question, "{}")).unwrap();
    assert!(shipped > 0.0, "{shipped}");
    let boosted = hit(&run_with(&f, question, r#"{"path_words": 1.0}"#)).unwrap();
    assert!(boosted > shipped, "{boosted} {shipped}");

    // File words: a question whose words the names a file defines use ("revoked",
    // "refreshed", "sessions" ~ `revokeAllSessions`, `refreshSession`, `SessionStore`)
    // raises that file's best chunk by the file-names weight times the (rarity-weighted)
    // share, and nothing at 0; the same for a file whose documentation uses them ("wait
    // between attempts" ~ the docstring of `RetryPolicy`).
    let file_boost = |o: &SearchOutcome, file: &str| {
        o.hits
            .iter()
            .position(|h| h.file == file)
            .map(|i| parts(o, i).coherence_boost)
            .unwrap()
    };
    for (question, file, weight) in [
        (
            "how are sessions revoked and refreshed",
            "src/auth/session.ts",
            "file_names",
        ),
        (
            "how long to wait between attempts",
            "src/net/retry.py",
            "file_doc",
        ),
    ] {
        let shipped = file_boost(&run_with(&f, question, "{}"), file);
        let off = file_boost(
            &run_with(&f, question, &format!(r#"{{"{weight}": 0}}"#)),
            file,
        );
        let doubled = file_boost(
            &run_with(&f, question, &format!(r#"{{"{weight}": 0.4}}"#)),
            file,
        );
        assert!(shipped > off, "{question}: {shipped} {off}");
        assert!(
            doubled - off > shipped - off + 0.05,
            "{question}: {doubled} {shipped} {off}"
        );
    }

    // An identifier in a question: a name and a word or two is a lookup of the name and
    // keeps `definition_in_short_question` of the definition boost; in a longer question
    // the name is part of a description and keeps `definition_in_question`.
    let definition = |query: &str| {
        let o = run_with(&f, query, "{}");
        let at = o
            .hits
            .iter()
            .position(|h| h.symbol.as_ref().is_some_and(|s| s.name == "RetryPolicy"))
            .unwrap();
        parts(&o, at).definition_boost
    };
    let (short, long) = (
        definition("RetryPolicy class"),
        definition("how many attempts does the RetryPolicy give a failing request"),
    );
    let w = Weights::default();
    assert!(short > 0.0 && long > 0.0, "{short} {long}");
    assert!(
        (short / long - w.definition_in_short_question / w.definition_in_question).abs() < 1e-3,
        "{short} {long}"
    );

    // Kind cue: a question that asks for a struct gets the struct of the file first; the
    // function that builds it led before, and the file keeps its place on the page.
    let question = "which struct results from splitting a header at its colon";
    let header = |o: &SearchOutcome| -> Vec<String> {
        located(o)
            .into_iter()
            .filter(|l| l.starts_with("crates/parser/src/header.rs"))
            .collect()
    };
    let first_file = |o: &SearchOutcome| {
        o.hits
            .iter()
            .position(|h| h.file == "crates/parser/src/header.rs")
    };
    let on = run_with(&f, question, "{}");
    let off = run_with(&f, question, r#"{"kind_promote": -1}"#);
    assert_eq!(
        header(&on)[0],
        "crates/parser/src/header.rs#Header",
        "{:?}",
        located(&on)
    );
    assert_eq!(
        header(&off)[0],
        "crates/parser/src/header.rs#parse_header",
        "{:?}",
        located(&off)
    );
    assert_eq!(first_file(&on), first_file(&off));
}

/// The README's row for `SATORI_SEARCH_ABLATION` lists every switch the parser knows, in
/// its order, and no other.
#[test]
fn ablation_switches_are_documented() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `SATORI_SEARCH_ABLATION` |"))
        .expect("README.md has a row for SATORI_SEARCH_ABLATION");
    let listed: Vec<&str> = row
        .split('`')
        .skip(3)
        .step_by(2)
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(listed, SearchTuning::SWITCHES, "{row}");
}
