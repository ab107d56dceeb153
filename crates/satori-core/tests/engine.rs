//! The engine façade against a real home and a real (lexical-only) index: the gate that
//! answers whether a path can be searched or read, the outline of a file, and the full
//! rebuild of an index built under other policy rules.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use satori_core::embed::Embeddings;
use satori_core::search::{Scope, SearchRequest, SearchTuning};
use satori_core::{
    Engine, Error, Home, IndexOptions, IndexState, Phase, Policy, Purpose, Refusal, ReindexReason,
    StateStore, SymbolKind, SyncControl,
};

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    home: Home,
    root: PathBuf,
    engine: Arc<Engine>,
}

fn fixture() -> Fixture {
    let home_dir = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    std::fs::write(
        repo.path().join("src/lib.rs"),
        "pub fn parse_header(input: &str) -> usize {\n    input.len()\n}\n",
    )
    .unwrap();
    let root = repo.path().canonicalize().unwrap();
    let home = Home::new(home_dir.path().to_path_buf());
    let engine = Arc::new(Engine::new(
        home.clone(),
        Arc::new(Embeddings::disabled()),
        SearchTuning::default(),
    ));
    Fixture {
        _dirs: (home_dir, repo),
        home,
        root,
        engine,
    }
}

fn index(f: &Fixture) {
    let job = f
        .engine
        .start_index(&f.root, IndexOptions::default())
        .unwrap();
    job.run(|_| {}).unwrap();
}

fn store(f: &Fixture) -> StateStore {
    StateStore::new(f.home.clone())
}

#[test]
fn an_untracked_path_is_refused() {
    let f = fixture();
    for purpose in [Purpose::Search, Purpose::Read] {
        assert!(matches!(
            f.engine.target(&f.root, purpose),
            Err(Refusal::NotTracked)
        ));
    }
}

#[test]
fn an_indexed_codebase_is_a_target_with_its_prefix() {
    let f = fixture();
    index(&f);
    let t = f
        .engine
        .target(&f.root.join("src/lib.rs"), Purpose::Search)
        .unwrap();
    assert_eq!(t.root, f.root);
    assert_eq!(t.prefix.as_deref(), Some("src/lib.rs"));
    assert_eq!(t.state.state, IndexState::Indexed);
    assert!(!t.searchable_while_indexing);
    let at_root = f.engine.target(&f.root, Purpose::Search).unwrap();
    assert_eq!(at_root.prefix, None);
}

#[test]
fn a_first_build_refuses_search_and_read_with_its_progress() {
    let f = fixture();
    let job = f
        .engine
        .start_index(&f.root, IndexOptions::default())
        .unwrap();
    // The job holds the writer lock, so the `indexing` record is live, not stale.
    store(&f)
        .modify(&f.root, |c| {
            c.percentage = 40.0;
            c.phase = Some(Phase::Chunking);
        })
        .unwrap();
    for purpose in [Purpose::Search, Purpose::Read] {
        match f.engine.target(&f.root.join("src"), purpose) {
            Err(Refusal::Indexing {
                root,
                percentage,
                phase,
            }) => {
                assert_eq!(root, f.root);
                assert_eq!(percentage, 40.0);
                assert_eq!(phase, Some(Phase::Chunking));
            }
            other => panic!("{other:?}"),
        }
    }
    drop(job);
    // The build died without publishing: the record is repaired to a failure, which refuses a
    // search but not a read.
    match f.engine.target(&f.root, Purpose::Search) {
        Err(Refusal::Failed { root, message }) => {
            assert_eq!(root, f.root);
            assert!(message.unwrap().contains("interrupted"));
        }
        other => panic!("{other:?}"),
    }
    let t = f.engine.target(&f.root, Purpose::Read).unwrap();
    assert_eq!(t.state.state, IndexState::IndexFailed);
}

/// A first build stopped leaves `indexfailed` for the next caller to read; one stopped because
/// its index is being cleared leaves no record (and no failure) for a caller to read before the
/// clear removes the rest.
#[test]
fn a_first_build_stopped_for_a_clear_leaves_no_failure() {
    for (discard, want) in [(false, Some(IndexState::IndexFailed)), (true, None)] {
        let f = fixture();
        let job = f
            .engine
            .start_index(&f.root, IndexOptions::default())
            .unwrap();
        if discard {
            job.discard_flag().store(true, Ordering::Relaxed);
        }
        job.cancel_flag().store(true, Ordering::Relaxed);
        assert!(matches!(job.run(|_| {}), Err(Error::Cancelled)));
        let recorded = store(&f)
            .load()
            .unwrap()
            .codebases
            .get(&f.root)
            .map(|c| c.state);
        assert_eq!(recorded, want, "discard: {discard}");
    }
}

#[test]
fn a_rebuild_keeps_the_previous_index_searchable() {
    let f = fixture();
    index(&f);
    let _job = f
        .engine
        .start_index(&f.root, IndexOptions::default())
        .unwrap();
    let t = f.engine.target(&f.root, Purpose::Search).unwrap();
    assert_eq!(t.state.state, IndexState::Indexing);
    assert!(t.searchable_while_indexing);
}

#[test]
fn a_sync_reports_the_progress_of_its_work() {
    let f = fixture();
    index(&f);
    std::fs::write(f.root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let ctl = SyncControl {
        cancel: None,
        on_progress: Some(Box::new(move |p| sink.lock().unwrap().push(p.phase))),
    };
    let s = f.engine.sync(&f.root, &ctl).unwrap();
    assert!(
        s.rebuilt || s.derived,
        "a new generation was published: {s:?}"
    );
    assert_eq!(s.added, 1);
    let phases = seen.lock().unwrap().clone();
    assert_eq!(phases.first(), Some(&Phase::Scanning), "{phases:?}");
    assert!(phases.contains(&Phase::Chunking), "{phases:?}");
}

#[test]
fn a_cancelled_sync_keeps_the_published_generation_and_a_later_sync_redoes_it() {
    let f = fixture();
    index(&f);
    let before = f.engine.state(&f.root).unwrap().unwrap();
    std::fs::write(f.root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    // Cancel from inside the rebuild, once it has started: the build stops at its next
    // safe point.
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let ctl = SyncControl {
        cancel: Some(Arc::clone(&cancel)),
        on_progress: Some(Box::new(move |_| flag.store(true, Ordering::Relaxed))),
    };
    assert!(matches!(
        f.engine.sync(&f.root, &ctl),
        Err(Error::Cancelled)
    ));
    let t = f.engine.target(&f.root, Purpose::Search).unwrap();
    assert_eq!(t.state.state, IndexState::Indexed);
    assert_eq!(t.state.files, 1, "the old generation stays in use");
    assert_eq!(
        t.state.last_sync_ms, before.last_sync_ms,
        "a cancelled sync does not count as a check of the tree"
    );

    let s = f.engine.sync(&f.root, &SyncControl::default()).unwrap();
    assert!(
        s.rebuilt || s.derived,
        "a new generation was published: {s:?}"
    );
    assert_eq!(s.added, 1);
    let t = f.engine.target(&f.root, Purpose::Search).unwrap();
    assert_eq!(t.state.files, 2);
}

#[test]
fn a_sync_cancelled_before_it_starts_changes_nothing() {
    let f = fixture();
    index(&f);
    std::fs::write(f.root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    let ctl = SyncControl {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        on_progress: None,
    };
    assert!(matches!(
        f.engine.sync(&f.root, &ctl),
        Err(Error::Cancelled)
    ));
    let t = f.engine.target(&f.root, Purpose::Search).unwrap();
    assert_eq!(t.state.state, IndexState::Indexed);
    assert_eq!(t.state.files, 1);
    assert_eq!(t.state.error_message, None);
}

/// A build writes its final state before it releases the writer lock: a call in that window
/// must wait for the lock, not answer busy. A build recorded as running is busy at once.
#[test]
fn a_lock_held_after_the_build_finished_is_waited_for() {
    let f = fixture();
    index(&f);
    std::fs::write(f.root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    let check = |state: IndexState, expect_busy: bool| {
        store(&f).modify(&f.root, |c| c.state = state).unwrap();
        let lock = f
            .home
            .codebase(&f.root)
            .lock_for_build(&f.root)
            .unwrap()
            .unwrap();
        let holder = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(lock);
        });
        let sync = f.engine.sync(&f.root, &SyncControl::default());
        let build = f.engine.start_index(&f.root, IndexOptions::default());
        holder.join().unwrap();
        if expect_busy {
            assert!(matches!(sync, Err(Error::Busy(_))), "{state:?}: {sync:?}");
            assert!(matches!(build, Err(Error::Busy(_))), "{state:?}");
            store(&f)
                .modify(&f.root, |c| c.state = IndexState::Indexed)
                .unwrap();
        } else {
            assert_eq!(sync.unwrap().added, 1, "{state:?}");
            build.unwrap().run(|_| {}).unwrap();
        }
    };
    check(IndexState::Indexing, true);
    check(IndexState::Indexed, false);
}

#[test]
fn a_fingerprint_mismatch_refuses_search_and_is_recorded() {
    let f = fixture();
    index(&f);
    store(&f)
        .modify(&f.root, |c| {
            if let Some(fp) = c.fingerprint.as_mut() {
                fp.embedding_model = "another-model".into();
            }
        })
        .unwrap();
    // Reading does not judge the index.
    let t = f.engine.target(&f.root, Purpose::Read).unwrap();
    assert_eq!(t.state.state, IndexState::Indexed);
    match f.engine.target(&f.root, Purpose::Search) {
        Err(Refusal::RequiresReindex {
            root,
            reason,
            indexed,
            detail,
        }) => {
            assert_eq!(root, f.root);
            assert_eq!(reason, ReindexReason::FingerprintMismatch);
            assert_eq!(detail, None, "only a damaged index has details");
            assert_eq!(indexed.unwrap().embedding_model, "another-model");
        }
        other => panic!("{other:?}"),
    }
    let recorded = f.engine.state(&f.root).unwrap().unwrap();
    assert_eq!(recorded.state, IndexState::RequiresReindex);
    assert_eq!(recorded.reason, Some(ReindexReason::FingerprintMismatch));
    // The recorded verdict answers later checks.
    assert_eq!(
        f.engine.check_fingerprint(&f.root).unwrap(),
        Some(ReindexReason::FingerprintMismatch)
    );
}

#[test]
fn the_nearest_tracked_root_wins() {
    let f = fixture();
    index(&f);
    let inner = f.root.join("src");
    let job = f
        .engine
        .start_index(&inner, IndexOptions::default())
        .unwrap();
    job.run(|_| {}).unwrap();
    let t = f
        .engine
        .target(&inner.join("lib.rs"), Purpose::Search)
        .unwrap();
    assert_eq!(t.root, inner);
    assert_eq!(t.prefix.as_deref(), Some("lib.rs"));
    // The root a search would use, found from the state file alone (what a process started
    // for one search opens before the search arrives).
    assert_eq!(
        f.engine.searchable_root(&inner.join("lib.rs")),
        Some(inner.clone())
    );
    assert_eq!(f.engine.searchable_root(&f.root), Some(f.root.clone()));
    assert_eq!(f.engine.searchable_root(Path::new("/")), None);
    assert_eq!(f.engine.searchable_root(&f.root.join("missing")), None);
}

#[test]
fn only_a_searchable_codebase_has_a_root_to_open_early() {
    let f = fixture();
    assert_eq!(f.engine.searchable_root(&f.root), None, "not tracked yet");
    index(&f);
    assert_eq!(f.engine.searchable_root(&f.root), Some(f.root.clone()));
    store(&f)
        .modify(&f.root, |c| c.state = IndexState::IndexFailed)
        .unwrap();
    assert_eq!(f.engine.searchable_root(&f.root), None, "failed");
}

#[test]
fn outline_lists_the_definitions_with_ids_of_the_given_path() {
    let f = fixture();
    let text = std::fs::read_to_string(f.root.join("src/lib.rs")).unwrap();
    let outline = f.engine.outline("src/lib.rs", &text);
    assert_eq!(outline.len(), 1);
    let s = &outline[0];
    assert_eq!(
        (s.name.as_str(), s.kind, s.start_line, s.end_line),
        ("parse_header", SymbolKind::Function, 1, 3)
    );
    // Ids depend on the path, as search results name the file.
    assert_ne!(f.engine.outline("other/lib.rs", &text)[0].id, s.id);
    assert!(f.engine.outline("notes.txt", &text).is_empty());
    assert!(
        f.engine
            .outline(Path::new("src/empty.rs").to_str().unwrap(), "")
            .is_empty()
    );
}

/// An engine over the fixture's home whose policy allows secrets or not.
fn engine_with_secrets(f: &Fixture, allow_secrets: bool) -> Arc<Engine> {
    Arc::new(
        Engine::new(
            f.home.clone(),
            Arc::new(Embeddings::disabled()),
            SearchTuning::default(),
        )
        .with_policy(Policy::new(None, allow_secrets)),
    )
}

/// The files a search for `word` finds, in every kind of file.
fn found(engine: &Engine, root: &Path, word: &str) -> Vec<String> {
    let req = SearchRequest {
        query: word.to_owned(),
        scope: Scope::Mixed,
        limit: 20,
        ..SearchRequest::default()
    };
    let mut files: Vec<String> = engine
        .search(root, &req)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.file)
        .collect();
    files.sort();
    files.dedup();
    files
}

#[test]
fn an_index_built_under_other_policy_rules_is_rebuilt_by_its_next_sync() {
    /// How the index was built, and how it is synced.
    struct Case {
        label: &'static str,
        built_allowing_secrets: bool,
        /// The manifest lacks the policy, as a version before the policy wrote it.
        before_the_policy: bool,
        synced_allowing_secrets: bool,
    }
    #[track_caller]
    fn check(case: Case) {
        let label = case.label;
        let f = fixture();
        // A secret by content only: the walk lists it under every policy, so only the policy
        // recorded with the index can tell the sync that the index holds it (or lacks it).
        let armour = "-----";
        let material = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
        std::fs::write(
            f.root.join("notes.txt"),
            format!("zebracorn\n{armour}BEGIN PRIVATE KEY{armour}\n{material}\n{material}\n"),
        )
        .unwrap();
        std::fs::write(f.root.join("src/zebra.rs"), "pub fn zebracorn() {}\n").unwrap();
        let built = engine_with_secrets(&f, case.built_allowing_secrets);
        built
            .start_index(&f.root, IndexOptions::default())
            .unwrap()
            .run(|_| {})
            .unwrap();
        if case.before_the_policy {
            let (gen_dir, _) = f.home.codebase(&f.root).current().unwrap();
            let path = gen_dir.join("manifest.json");
            let mut m: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert!(
                m.as_object_mut().unwrap().remove("policy").is_some(),
                "{label}: the manifest records its policy"
            );
            std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
        }
        let synced = engine_with_secrets(&f, case.synced_allowing_secrets);
        let rules_changed =
            case.before_the_policy || case.built_allowing_secrets != case.synced_allowing_secrets;
        let summary = synced.sync(&f.root, &SyncControl::default()).unwrap();
        assert_eq!(summary.rebuilt, rules_changed, "{label}: {summary:?}");
        assert!(!summary.derived, "{label}: {summary:?}");
        let mut expected = vec!["src/zebra.rs".to_owned()];
        if case.synced_allowing_secrets {
            expected.insert(0, "notes.txt".to_owned());
        }
        assert_eq!(found(&synced, &f.root, "zebracorn"), expected, "{label}");
        // The rebuilt index records the rules it was built under: nothing more to do.
        let again = synced.sync(&f.root, &SyncControl::default()).unwrap();
        assert!(!again.rebuilt && !again.derived, "{label}: {again:?}");
    }
    for case in [
        Case {
            label: "built before the policy",
            built_allowing_secrets: true,
            before_the_policy: true,
            synced_allowing_secrets: false,
        },
        Case {
            label: "built with the opt-out, synced without",
            built_allowing_secrets: true,
            before_the_policy: false,
            synced_allowing_secrets: false,
        },
        Case {
            label: "the opt-out turned on",
            built_allowing_secrets: false,
            before_the_policy: false,
            synced_allowing_secrets: true,
        },
        Case {
            label: "the same rules",
            built_allowing_secrets: false,
            before_the_policy: false,
            synced_allowing_secrets: false,
        },
    ] {
        check(case);
    }
}

#[test]
fn an_index_built_under_older_chunking_rules_is_rebuilt_by_its_next_sync() {
    /// `chunking`: what the manifest records (None: nothing, as before it was recorded).
    #[track_caller]
    fn check(label: &str, chunking: Option<&str>, rebuilt: bool) {
        let f = fixture();
        std::fs::write(
            f.root.join("src/Shelf.pm"),
            "package Shelf;\n\nsub shelve_book {\n    my ($self, $book) = @_;\n}\n\n1;\n",
        )
        .unwrap();
        let engine = engine_with_secrets(&f, false);
        engine
            .start_index(&f.root, IndexOptions::default())
            .unwrap()
            .run(|_| {})
            .unwrap();
        let (gen_dir, _) = f.home.codebase(&f.root).current().unwrap();
        let path = gen_dir.join("manifest.json");
        let mut m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let obj = m.as_object_mut().unwrap();
        assert_eq!(
            obj["chunking"],
            format!("v{}", satori_core::CHUNKING_VERSION),
            "{label}: the manifest records its chunking rules"
        );
        match chunking {
            Some(v) => obj.insert("chunking".into(), v.into()),
            None => obj.remove("chunking"),
        };
        std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
        let summary = engine.sync(&f.root, &SyncControl::default()).unwrap();
        assert_eq!(summary.rebuilt, rebuilt, "{label}: {summary:?}");
        assert!(!summary.derived, "{label}: {summary:?}");
        assert_eq!(
            found(&engine, &f.root, "shelve_book"),
            ["src/Shelf.pm"],
            "{label}"
        );
        // The rebuilt index records the rules it was built under: nothing more to do.
        let again = engine.sync(&f.root, &SyncControl::default()).unwrap();
        assert!(!again.rebuilt && !again.derived, "{label}: {again:?}");
    }
    let current = format!("v{}", satori_core::CHUNKING_VERSION);
    check("built before the rules were recorded", None, true);
    check("built under older rules", Some("v0"), true);
    check("built under these rules", Some(&current), false);
}

#[test]
fn a_match_in_a_namespace_keeps_its_own_lines() {
    let f = fixture();
    // A C++ file whose namespace wraps everything, as most C++ sources are written: the
    // namespace's own chunk holds the constants and small types before the first function.
    let mut text = String::from(
        "#include \"db/writer.h\"\n\nnamespace storage {\n\nconst int kJournalBlockSize = 4096;\n\n\
         struct PendingWriter {\n  int sequence;\n  bool synced;\n};\n\n",
    );
    for i in 0..30 {
        text.push_str(&format!(
            "int Step{i}(int x) {{\n  int y = x * {i};\n  if (y > 10) {{\n    y -= 3;\n  }}\n  \
             y += x;\n  y *= 2;\n  return y + {i};\n}}\n\n"
        ));
    }
    text.push_str("}  // namespace storage\n");
    let lines = text.lines().count() as u32;
    std::fs::write(f.root.join("src/journal.cc"), &text).unwrap();
    index(&f);
    let hit = |query: &str| {
        let req = SearchRequest {
            query: query.to_owned(),
            scope: Scope::Mixed,
            limit: 5,
            ..SearchRequest::default()
        };
        let hits = f.engine.search(&f.root, &req).unwrap().hits;
        hits.into_iter()
            .find(|h| h.file == "src/journal.cc")
            .unwrap()
    };
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() as u32 + 1;

    let h = hit("kJournalBlockSize");
    let at = line_of("kJournalBlockSize");
    assert!(h.start_line <= at && at <= h.end_line, "{h:?}");
    assert!(h.end_line < lines / 2, "the hit spans the namespace: {h:?}");
}

#[test]
fn a_qualified_name_finds_the_definition_in_its_scope_or_file() {
    let f = fixture();
    let write = |path: &str, text: &str| {
        let path = f.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // Two definitions of `total` and of `post`. The ones the query does not mean mention the
    // qualifier more often, so only the scope or the file tells.
    write(
        "lib/billing.rb",
        "module Billing\n  class Invoice\n    def total\n      @lines.sum(&:amount)\n    end\n  end\nend\n",
    );
    write(
        "lib/reports.rb",
        "module Reports\n  # Sums every Invoice: Invoice totals, Invoice by Invoice.\n  \
         def self.total(invoices)\n    invoices.sum { |invoice| invoice.amount }\n  end\nend\n",
    );
    write(
        "pkg/ledger.py",
        "def post(entry):\n    return entry.amount\n",
    );
    write(
        "pkg/ledger_journal.py",
        "import ledger\n\n\ndef post(entry):\n    \"\"\"Posts to the ledger: ledger first, then ledger totals.\"\"\"\n    \
         return ledger.post(entry)\n",
    );
    index(&f);
    for (query, want) in [
        ("Invoice.total", "lib/billing.rb"),
        ("Reports.total", "lib/reports.rb"),
        ("ledger.post", "pkg/ledger.py"),
    ] {
        let req = SearchRequest {
            query: query.to_owned(),
            scope: Scope::Mixed,
            limit: 5,
            ..SearchRequest::default()
        };
        let hits = f.engine.search(&f.root, &req).unwrap().hits;
        assert_eq!(
            hits.first().map(|h| h.file.as_str()),
            Some(want),
            "{query}: {hits:?}"
        );
    }
}

/// An engine given a chunk limit stops there, in a build and in a sync, and says so.
#[test]
fn the_chunk_limit_is_the_engines() {
    let f = fixture();
    for name in ["a", "b", "c", "d"] {
        std::fs::write(
            f.root.join(format!("src/{name}.rs")),
            format!("pub fn {name}() {{}}\n"),
        )
        .unwrap();
    }
    let engine = Arc::new(
        Engine::new(
            f.home.clone(),
            Arc::new(Embeddings::disabled()),
            SearchTuning::default(),
        )
        .with_chunk_limit(3),
    );
    let summary = engine
        .start_index(&f.root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    assert!(summary.limit_reached, "{summary:?}");
    assert_eq!(summary.chunks, 3, "{summary:?}");
    let state = store(&f).load().unwrap();
    assert_eq!(
        state.codebases[&f.root].index_status,
        Some(satori_core::IndexStatus::LimitReached)
    );
    // The same tree under the default limit fits whole.
    let summary = f
        .engine
        .start_index(&f.root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
    assert!(!summary.limit_reached && summary.chunks == 5, "{summary:?}");
}
