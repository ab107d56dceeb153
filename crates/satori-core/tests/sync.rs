//! Incremental sync against real trees, a real home and the bundled embedding model: a
//! derived generation must hold exactly what a full index of the same tree holds, reuse
//! what did not change, and never publish a partial view of the tree.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::{SearchRequest, SearchTuning};
use satori_core::{
    Engine, Error, Home, IndexOptions, IndexState, Phase, StateStore, SyncControl, SyncSummary,
};

struct Repo {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: PathBuf,
    engine: Arc<Engine>,
}

fn engine(home: &Home) -> Arc<Engine> {
    let embeddings = Embeddings::new(
        ModelSource::Bundled,
        &home.models_dir(),
        HubOptions::default(),
    )
    .unwrap();
    Arc::new(Engine::new(
        home.clone(),
        Arc::new(embeddings),
        SearchTuning::default(),
    ))
}

/// The body of generated file `i`: a few functions with words of their own and words
/// shared with other files, so that BM25 and the vectors both have something to rank.
fn body(i: usize, version: usize) -> String {
    let topics = [
        "retry", "parse", "cache", "token", "socket", "render", "queue",
    ];
    let t = topics[i % topics.len()];
    let mut s = String::new();
    for f in 0..3 {
        // Long enough that each function is a chunk of its own.
        for line in 0..10 {
            s.push_str(&format!(
                "/// Line {line} about the {t} step {f}: it explains what the step does here.\n"
            ));
        }
        s.push_str(&format!(
            "/// Handles the {t} step {f} of module {i}.\npub fn {t}_step_{i}_{f}(input: &str) -> usize {{\n    let mut total = {version};\n    for part in input.split(',') {{\n        total += part.len() * {f};\n    }}\n    total\n}}\n\n"
        ));
    }
    s
}

fn path_of(i: usize) -> String {
    format!("src/m{}/file_{i}.rs", i % 4)
}

/// A repository of `n` generated files, indexed.
fn repo(n: usize) -> Repo {
    let home_dir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for i in 0..n {
        write(&root, &path_of(i), &body(i, 0));
    }
    let home = Home::new(home_dir.path().to_path_buf());
    let engine = engine(&home);
    let r = Repo {
        _dirs: (home_dir, dir),
        root,
        engine,
    };
    index(&r.engine, &r.root).unwrap();
    r
}

fn index(engine: &Arc<Engine>, root: &Path) -> satori_core::Result<()> {
    let job = engine.start_index(root, IndexOptions::default())?;
    job.run(|_| {}).map(|_| ())
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn sync(r: &Repo) -> SyncSummary {
    r.engine.sync(&r.root, &SyncControl::default()).unwrap()
}

/// Every chunk of the published generation: path, lines, content — sorted.
fn chunk_set(engine: &Engine, root: &Path) -> Vec<(String, u32, u32, String)> {
    let index = engine.generation(root).unwrap();
    let g = index.generation();
    let mut out: Vec<_> = g
        .chunks()
        .iter()
        .enumerate()
        .map(|(ord, c)| {
            (
                g.files()[c.file as usize].path.clone(),
                c.start_line,
                c.end_line,
                g.chunk_content(ord).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

const QUERIES: &[&str] = &[
    "retry step",
    "parse input split",
    "cache_step_2_1",
    "socket module total",
    "how are tokens handled",
];

/// The top results of a few queries: file, lines and score of each hit.
fn top_results(engine: &Engine, root: &Path) -> Vec<Vec<(String, u32, u32, f32)>> {
    QUERIES
        .iter()
        .map(|q| {
            let req = SearchRequest {
                query: q.to_string(),
                limit: 5,
                ..SearchRequest::default()
            };
            let out = engine.search(root, &req).unwrap();
            out.hits
                .into_iter()
                .map(|h| (h.file, h.start_line, h.end_line, h.score))
                .collect()
        })
        .collect()
}

/// A full index's answer as groups of near ties (consecutive scores within 3%), without the
/// last group, which the page may cut short. A derived index must return each group at the
/// same places, in any order within it: a derived generation keeps the documents it
/// replaced until tantivy merges them away, and BM25's document counts and average length
/// still include them; on this small tree that moves scores by a few percent, enough to
/// swap hits that a full index ranks almost equally.
fn tie_groups(hits: &[(String, u32, u32, f32)]) -> Vec<Vec<(String, u32, u32)>> {
    let mut groups: Vec<Vec<(String, u32, u32)>> = Vec::new();
    let mut last = f32::INFINITY;
    for (f, s, e, score) in hits {
        if groups.is_empty() || last - score >= 0.03 * last {
            groups.push(Vec::new());
        }
        groups.last_mut().unwrap().push((f.clone(), *s, *e));
        last = *score;
    }
    groups.pop();
    for g in &mut groups {
        g.sort();
    }
    groups
}

/// Indexes a copy of the tree from scratch and checks the derived index holds the same
/// chunks and answers the same top results.
#[track_caller]
/// A full index of `root` by an engine with a home of its own (dropped with the directory).
fn fully_indexed(root: &Path) -> (tempfile::TempDir, Arc<Engine>) {
    let home = tempfile::tempdir().unwrap();
    let fresh = engine(&Home::new(home.path().to_path_buf()));
    index(&fresh, root).unwrap();
    (home, fresh)
}

fn assert_same_as_full_index(r: &Repo, label: &str) {
    let (_home, fresh) = fully_indexed(&r.root);
    assert_eq!(
        chunk_set(&r.engine, &r.root),
        chunk_set(&fresh, &r.root),
        "{label}: chunk set"
    );
    let derived = top_results(&r.engine, &r.root);
    let all = chunk_set(&fresh, &r.root);
    for (q, full) in top_results(&fresh, &r.root).iter().enumerate() {
        let what = format!("{label}: top results of {:?}", QUERIES[q]);
        assert_eq!(derived[q].len(), full.len(), "{what}");
        // Nothing replaced or removed surfaces.
        for (f, s, e, _) in &derived[q] {
            assert!(
                all.iter().any(|c| (&c.0, c.1, c.2) == (f, *s, *e)),
                "{what}: {f}:{s}-{e} is not in a full index"
            );
        }
        let mut at = 0;
        for group in tie_groups(full) {
            let mut got: Vec<(String, u32, u32)> = derived[q][at..at + group.len()]
                .iter()
                .map(|(f, s, e, _)| (f.clone(), *s, *e))
                .collect();
            got.sort();
            assert_eq!(got, group, "{what}");
            at += group.len();
        }
    }
}

/// What a sync after `edit` must report.
struct Expect {
    added: u64,
    removed: u64,
    modified: u64,
    /// Some chunk vectors must be reused (a modified file kept some chunks).
    reuses: bool,
}

#[track_caller]
fn check(name: &str, edit: impl Fn(&Path), expect: Expect) {
    let r = repo(24);
    edit(&r.root);
    let s = sync(&r);
    assert_eq!(
        (s.added, s.removed, s.modified),
        (expect.added, expect.removed, expect.modified),
        "{name}: counts {s:?}"
    );
    assert!(
        s.derived && !s.rebuilt,
        "{name}: derived, not rebuilt: {s:?}"
    );
    assert_eq!(s.reused_vectors > 0, expect.reuses, "{name}: reuse {s:?}");
    assert_same_as_full_index(&r, name);
    let st = r.engine.state(&r.root).unwrap().unwrap();
    assert_eq!(st.state, IndexState::SyncCompleted, "{name}");
    assert_eq!(
        st.chunks,
        chunk_set(&r.engine, &r.root).len() as u64,
        "{name}"
    );
    // A second sync finds nothing to do.
    let again = sync(&r);
    assert_eq!(
        (
            again.added,
            again.removed,
            again.modified,
            again.derived,
            again.rebuilt
        ),
        (0, 0, 0, false, false),
        "{name}: second sync {again:?}"
    );
}

#[test]
fn incremental_sync_matches_a_full_index() {
    check(
        "added",
        |root| write(root, "src/new/added.rs", &body(100, 0)),
        Expect {
            added: 1,
            removed: 0,
            modified: 0,
            reuses: false,
        },
    );
    check(
        "modified_one_function",
        |root| {
            let p = path_of(3);
            let text = body(3, 0).replacen("total += part.len() * 1", "total -= 7 + part.len()", 1);
            write(root, &p, &text);
        },
        Expect {
            added: 0,
            removed: 0,
            modified: 1,
            reuses: true,
        },
    );
    check(
        "removed",
        |root| std::fs::remove_file(root.join(path_of(5))).unwrap(),
        Expect {
            added: 0,
            removed: 1,
            modified: 0,
            reuses: false,
        },
    );
    check(
        "renamed",
        |root| {
            std::fs::rename(root.join(path_of(6)), root.join("src/m2/renamed.rs")).unwrap();
        },
        Expect {
            added: 1,
            removed: 1,
            modified: 0,
            reuses: false,
        },
    );
    check(
        "mixed",
        |root| {
            write(root, "lib/extra.rs", &body(200, 0));
            write(
                root,
                &path_of(1),
                &format!("{}\npub fn more() {{}}\n", body(1, 0)),
            );
            write(root, &path_of(2), &body(2, 9));
            std::fs::remove_file(root.join(path_of(7))).unwrap();
        },
        Expect {
            added: 1,
            removed: 1,
            modified: 2,
            reuses: true,
        },
    );
    check(
        "touched_only",
        |root| {
            // Same bytes, new mtime: nothing to index, but the manifest learns the mtime.
            std::thread::sleep(std::time::Duration::from_millis(5));
            write(root, &path_of(4), &body(4, 0));
        },
        Expect {
            added: 0,
            removed: 0,
            modified: 0,
            reuses: false,
        },
    );
}

#[test]
fn twenty_derivations_in_a_row_stay_correct_and_drop_deleted_documents() {
    let r = repo(30);
    let mut derived = 0;
    for round in 0..20 {
        let i = round % 30;
        // The old text of file `i` holds a word no later version has.
        let gone = format!("vanishingword{round}");
        write(
            &r.root,
            &path_of(i),
            &format!("// {gone}\n{}", body(i, round + 1)),
        );
        let s = sync(&r);
        derived += u64::from(s.derived);
        write(&r.root, &path_of(i), &body(i, round + 2));
        write(
            &r.root,
            &format!("extra/round_{round}.rs"),
            &body(300 + round, 1),
        );
        if round % 3 == 0 {
            let _ = std::fs::remove_file(r.root.join(format!("extra/round_{}.rs", round / 2)));
        }
        let s = sync(&r);
        derived += u64::from(s.derived);
        // The document holding the word was deleted: neither BM25 nor postings return it.
        let req = SearchRequest {
            query: gone.clone(),
            limit: 50,
            ..SearchRequest::default()
        };
        let hits = r.engine.search(&r.root, &req).unwrap().hits;
        assert!(
            hits.iter().all(|h| !h.text.contains(&gone)),
            "round {round}: a deleted document surfaced"
        );
        if round % 5 == 4 {
            assert_same_as_full_index(&r, &format!("round {round}"));
        }
    }
    assert!(derived >= 30, "most syncs derive: {derived} of 40");
}

/// True when this process can read a file whose permissions forbid it (root can).
fn permissions_are_bypassed() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("probe");
    std::fs::write(&p, "x").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::read(&p).is_ok()
}

#[test]
fn unreadable_files_are_counted_and_retried_until_readable() {
    if permissions_are_bypassed() {
        return;
    }
    let r = repo(6);
    let secret = r.root.join("src/locked.rs");
    write(
        &r.root,
        "src/locked.rs",
        "pub fn locked_away_function() {}\n",
    );
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let s = sync(&r);
    assert_eq!((s.added, s.unreadable_files), (1, 1), "{s:?}");
    let st = r.engine.state(&r.root).unwrap().unwrap();
    assert_eq!(st.unreadable_files, 1);
    assert_eq!(st.unreadable_sample, vec!["src/locked.rs".to_string()]);
    // Still unreadable: nothing to do, and nothing forgotten.
    let s = sync(&r);
    assert!(!s.derived && !s.rebuilt && s.unreadable_files == 1, "{s:?}");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = sync(&r);
    assert!(s.derived && s.unreadable_files == 0, "{s:?}");
    let st = r.engine.state(&r.root).unwrap().unwrap();
    assert_eq!(st.unreadable_files, 0);
    assert!(
        chunk_set(&r.engine, &r.root)
            .iter()
            .any(|c| c.0 == "src/locked.rs")
    );
}

#[test]
fn an_unreadable_directory_fails_the_sync_and_removes_nothing() {
    if permissions_are_bypassed() {
        return;
    }
    let r = repo(8);
    let before = chunk_set(&r.engine, &r.root);
    let dir = r.root.join("src/m1");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o000)).unwrap();
    let err = r.engine.sync(&r.root, &SyncControl::default()).unwrap_err();
    let fresh = tempfile::tempdir().unwrap();
    let create_err = index(&engine(&Home::new(fresh.path().to_path_buf())), &r.root).unwrap_err();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in [&err, &create_err] {
        assert!(
            matches!(e, Error::ScanIncomplete { first, .. } if first == "src/m1"),
            "{e}"
        );
    }
    assert_eq!(chunk_set(&r.engine, &r.root), before);
}

#[test]
fn a_root_that_vanishes_during_the_work_publishes_nothing() {
    // During a sync: the previous generation stays.
    let r = repo(8);
    write(&r.root, "src/new.rs", &body(50, 0));
    let before = r.engine.manifest(&r.root).unwrap();
    let root = r.root.clone();
    let moved = r.root.with_extension("moved");
    let (root2, moved2) = (root.clone(), moved.clone());
    let ctl = SyncControl {
        cancel: None,
        on_progress: Some(Box::new(move |p| {
            if p.phase == Phase::Chunking && root2.exists() {
                std::fs::rename(&root2, &moved2).unwrap();
            }
        })),
    };
    let err = r.engine.sync(&r.root, &ctl).unwrap_err();
    assert!(matches!(err, Error::RootVanished(_)), "{err}");
    assert_eq!(r.engine.manifest(&r.root).unwrap(), before);
    std::fs::rename(&moved, &root).unwrap();

    // During a first build: the codebase ends `indexfailed`, never `indexed`.
    let home = tempfile::tempdir().unwrap();
    let e = engine(&Home::new(home.path().to_path_buf()));
    let job = e.start_index(&root, IndexOptions::default()).unwrap();
    let err = job
        .run(|p| {
            if p.phase == Phase::Chunking && root.exists() {
                std::fs::rename(&root, &moved).unwrap();
            }
        })
        .unwrap_err();
    assert!(matches!(err, Error::RootVanished(_)), "{err}");
    let st = StateStore::new(Home::new(home.path().to_path_buf()))
        .load()
        .unwrap();
    assert_eq!(st.codebases[&root].state, IndexState::IndexFailed);
    assert!(e.manifest(&root).is_none());
    std::fs::rename(&moved, &root).unwrap();
}

#[test]
fn a_cancelled_sync_leaves_the_published_generation() {
    let r = repo(8);
    write(&r.root, "src/new.rs", &body(60, 0));
    let before = r.engine.manifest(&r.root).unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let f2 = Arc::clone(&flag);
    let ctl = SyncControl {
        cancel: Some(Arc::clone(&flag)),
        on_progress: Some(Box::new(move |_| f2.store(true, Ordering::Relaxed))),
    };
    let err = r.engine.sync(&r.root, &ctl).unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert_eq!(r.engine.manifest(&r.root).unwrap(), before);
    let s = sync(&r);
    assert_eq!(s.added, 1);
}

#[test]
fn non_utf8_file_names_are_skipped_and_never_collide() {
    let r = repo(4);
    // Two names that a lossy conversion would both turn into `bad\u{fffd}.rs`.
    for b in [0xffu8, 0xfe] {
        let bytes = [b'b', b'a', b'd', b, b'.', b'r', b's'];
        let name = std::ffi::OsStr::from_bytes(&bytes);
        std::fs::write(r.root.join("src").join(name), body(70 + b as usize, 0)).unwrap();
    }
    // Nothing to index, but the index learns what it left out, for `status` to report.
    let s = sync(&r);
    assert_eq!((s.added, s.modified), (0, 0));
    let st = r.engine.state(&r.root).unwrap().unwrap();
    assert_eq!(st.non_utf8_names, 2);
    assert_eq!(
        st.non_utf8_sample,
        ["src/bad\u{fffd}.rs", "src/bad\u{fffd}.rs"]
    );
    let s = sync(&r);
    assert!(!s.derived && !s.rebuilt, "{s:?}");
    let home = tempfile::tempdir().unwrap();
    let e = engine(&Home::new(home.path().to_path_buf()));
    let job = e.start_index(&r.root, IndexOptions::default()).unwrap();
    let summary = job.run(|_| {}).unwrap();
    assert_eq!(summary.skipped_files, 2, "{summary:?}");
    assert!(chunk_set(&e, &r.root).iter().all(|c| !c.0.contains("bad")));
    let again = e.sync(&r.root, &SyncControl::default()).unwrap();
    assert!(!again.derived && !again.rebuilt, "{again:?}");
    assert_eq!(e.state(&r.root).unwrap().unwrap().non_utf8_names, 2);
    // Renamed, a file is indexed and no longer counted.
    let bad = r
        .root
        .join("src")
        .join(std::ffi::OsStr::from_bytes(b"bad\xff.rs"));
    std::fs::rename(bad, r.root.join("src/good.rs")).unwrap();
    let s = e.sync(&r.root, &SyncControl::default()).unwrap();
    assert_eq!(s.added, 1, "{s:?}");
    let st = e.state(&r.root).unwrap().unwrap();
    assert_eq!(st.non_utf8_names, 1);
    assert_eq!(st.non_utf8_sample, ["src/bad\u{fffd}.rs"]);
}

/// Sets the modification time of everything under `dir` (and `dir`) an hour back, as if
/// the tree had been checked out long ago.
fn age(dir: &Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            age(&p);
        } else {
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    std::fs::File::open(dir).unwrap().set_modified(old).unwrap();
}

/// After two idle syncs (the second confirms by `stat` alone), `edit` changes the tree in
/// a way a walk would see; the next sync must notice it and report `expect` (added,
/// removed, modified), and then be stat-only again once the tree is old.
#[track_caller]
fn check_stamp(name: &str, setup: impl Fn(&Path), edit: impl Fn(&Path), expect: (u64, u64, u64)) {
    let home_dir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for i in 0..6 {
        write(&root, &path_of(i), &body(i, 0));
    }
    setup(&root);
    age(&root);
    let r = Repo {
        engine: engine(&Home::new(home_dir.path().to_path_buf())),
        _dirs: (home_dir, dir),
        root,
    };
    index(&r.engine, &r.root).unwrap();
    let first = sync(&r);
    assert!(!first.stat_only, "{name}: the first sync walks: {first:?}");
    let second = sync(&r);
    assert!(
        second.stat_only,
        "{name}: an old, unchanged tree is confirmed by stat: {second:?}"
    );
    edit(&r.root);
    let s = sync(&r);
    assert!(!s.stat_only, "{name}: the change was noticed: {s:?}");
    assert_eq!((s.added, s.removed, s.modified), expect, "{name}: {s:?}");
    // The chunks are those of a full index (rankings of a six-file tree tie too easily to
    // compare: deleted documents still count in BM25's statistics).
    let (_home, fresh) = fully_indexed(&r.root);
    let same = chunk_set(&r.engine, &r.root) == chunk_set(&fresh, &r.root);
    assert!(same, "{name}: the chunk set differs from a full index's");
    // Ageing the tree touches every file: one sync records the times, one walks and stamps.
    age(&r.root);
    sync(&r);
    sync(&r);
    let idle = sync(&r);
    assert!(
        idle.stat_only && !idle.derived,
        "{name}: idle again: {idle:?}"
    );
}

#[test]
fn a_stat_only_sync_notices_every_change_a_walk_would_see() {
    let none = |_: &Path| {};
    // Same length, new time: only the file's own stat shows it.
    check_stamp(
        "modified_same_size",
        none,
        |root| {
            let p = path_of(1);
            write(root, &p, &body(1, 7));
        },
        (0, 0, 1),
    );
    check_stamp(
        "added",
        none,
        |root| write(root, "src/m0/new.rs", &body(50, 0)),
        (1, 0, 0),
    );
    check_stamp(
        "added_in_new_directory",
        none,
        |root| write(root, "src/m3/deeper/new.rs", &body(51, 0)),
        (1, 0, 0),
    );
    check_stamp(
        "removed",
        none,
        |root| std::fs::remove_file(root.join(path_of(2))).unwrap(),
        (0, 1, 0),
    );
    // An ignore file edited in place changes no directory's time.
    check_stamp(
        "nested_gitignore_edited",
        |root| write(root, "src/m1/.gitignore", "nothing.rs\n"),
        |root| write(root, "src/m1/.gitignore", "file_1.rs\n"),
        (0, 1, 0),
    );
    check_stamp(
        "git_exclude_edited",
        |root| write(root, ".git/info/exclude", "# none\n"),
        |root| write(root, ".git/info/exclude", "src/m2/file_2.rs\n"),
        (0, 1, 0),
    );
    // A file passed over for its size becomes indexable when it shrinks.
    check_stamp(
        "oversized_shrinks",
        |root| write(root, "src/m0/big.rs", &"// filler line\n".repeat(80_000)),
        |root| write(root, "src/m0/big.rs", &body(52, 0)),
        (1, 0, 0),
    );
}

/// A stamp is left for other processes: an engine that never synced this tree (a new
/// process over the same home) confirms an unchanged tree by `stat` alone, and notices an
/// edit made after the stamp was taken.
#[test]
fn another_process_confirms_an_unchanged_tree_by_the_stamp_left_on_disk() {
    let home_dir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for i in 0..6 {
        write(&root, &path_of(i), &body(i, 0));
    }
    age(&root);
    let home = Home::new(home_dir.path().to_path_buf());
    let first = engine(&home);
    index(&first, &root).unwrap();
    let walked = first.sync(&root, &SyncControl::default()).unwrap();
    assert!(!walked.stat_only, "{walked:?}");
    let other = engine(&home);
    let s = other.sync(&root, &SyncControl::default()).unwrap();
    assert!(s.stat_only, "the stamp on disk was used: {s:?}");
    write(&root, &path_of(3), &body(3, 9));
    let third = engine(&home);
    let s = third.sync(&root, &SyncControl::default()).unwrap();
    assert!(!s.stat_only && s.derived, "{s:?}");
    assert_eq!((s.added, s.removed, s.modified), (0, 0, 1), "{s:?}");
    // A torn or foreign stamp file is no stamp: the next process walks, and finds nothing.
    third.sync(&root, &SyncControl::default()).unwrap();
    let stamp = home.codebase(&root).path().join("tree-stamp");
    let bytes = std::fs::read(&stamp).unwrap();
    for damaged in [bytes[..bytes.len() / 2].to_vec(), b"not a stamp".to_vec()] {
        std::fs::write(&stamp, damaged).unwrap();
        let s = engine(&home).sync(&root, &SyncControl::default()).unwrap();
        assert!(!s.stat_only && !s.derived, "{s:?}");
    }
}

/// The files whose chunks a search for exactly `word` returns.
fn files_with(engine: &Engine, root: &Path, word: &str) -> Vec<String> {
    let req = SearchRequest {
        query: format!("must:{word} {word}"),
        limit: 10,
        scope: satori_core::search::Scope::Mixed,
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

/// What a layer over a repository must show after `edit`, which returns the changed paths
/// (root-relative) as a watcher would report them.
struct LayerExpect {
    /// (added, modified, removed) files.
    counts: (u64, u64, u64),
    /// Words that must now be found, each in exactly these files.
    found: &'static [(&'static str, &'static [&'static str])],
    /// Words no file may hold any more.
    gone: &'static [&'static str],
}

#[track_caller]
fn check_layer(name: &str, edit: impl Fn(&Path) -> Vec<&'static str>, expect: LayerExpect) {
    let r = repo(24);
    let published = r.engine.manifest(&r.root).unwrap();
    let before = r.engine.state(&r.root).unwrap().unwrap();
    let paths: Vec<PathBuf> = edit(&r.root).iter().map(|p| r.root.join(p)).collect();
    let s = r.engine.layer_changes(&r.root, &paths, 1).unwrap();
    assert_eq!(
        (s.added, s.modified, s.removed),
        expect.counts,
        "{name}: {s:?}"
    );
    for (word, files) in expect.found {
        assert_eq!(
            files_with(&r.engine, &r.root, word),
            *files,
            "{name}: {word}"
        );
    }
    for word in expect.gone {
        assert_eq!(
            files_with(&r.engine, &r.root, word),
            Vec::<String>::new(),
            "{name}: {word}"
        );
    }
    // Layering wrote nothing: the same generation is published and the state is unchanged.
    assert_eq!(r.engine.manifest(&r.root).unwrap(), published, "{name}");
    assert_eq!(r.engine.state(&r.root).unwrap().unwrap(), before, "{name}");
    // The same layer asked again is the one already built; the sync then publishes the
    // changes and the layer goes: the index holds what a full index of the tree holds.
    // (Top results are not compared: a derive that deleted many documents scores with
    // statistics that still count them until tantivy merges them away.)
    assert_eq!(r.engine.layer_changes(&r.root, &paths, 1).unwrap(), s);
    sync(&r);
    for (word, files) in expect.found {
        assert_eq!(
            files_with(&r.engine, &r.root, word),
            *files,
            "{name}: synced {word}"
        );
    }
    let (_home, fresh) = fully_indexed(&r.root);
    assert_eq!(
        chunk_set(&r.engine, &r.root),
        chunk_set(&fresh, &r.root),
        "{name}: chunk set"
    );
}

#[test]
fn changes_layered_in_memory_are_searchable_before_the_sync() {
    check_layer(
        "modified",
        |root| {
            let p = path_of(3);
            let text = body(3, 0).replace("token_step_3_1", "layered_marmot_fn");
            write(root, &p, &text);
            vec!["src/m3/file_3.rs"]
        },
        LayerExpect {
            counts: (0, 1, 0),
            found: &[
                ("layered_marmot_fn", &["src/m3/file_3.rs"]),
                ("token_step_3_0", &["src/m3/file_3.rs"]),
            ],
            gone: &["token_step_3_1"],
        },
    );
    check_layer(
        "added_and_removed",
        |root| {
            write(root, "src/m1/fresh.rs", "pub fn newly_layered_otter() {}\n");
            std::fs::remove_file(root.join(path_of(5))).unwrap();
            vec!["src/m1/fresh.rs", "src/m1/file_5.rs"]
        },
        LayerExpect {
            counts: (1, 0, 1),
            found: &[("newly_layered_otter", &["src/m1/fresh.rs"])],
            gone: &["render_step_5_0"],
        },
    );
    check_layer(
        "directory_removed",
        |root| {
            std::fs::remove_dir_all(root.join("src/m2")).unwrap();
            vec!["src/m2"]
        },
        LayerExpect {
            counts: (0, 0, 6),
            found: &[("retry_step_0_0", &["src/m0/file_0.rs"])],
            gone: &["socket_step_18_0", "token_step_10_1"],
        },
    );
    // The secrets policy holds for layered files as for indexed ones.
    check_layer(
        "secret_added",
        |root| {
            let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLayeredkey\n-----END RSA PRIVATE KEY-----\n";
            write(
                root,
                "src/m0/keys.rs",
                &format!("pub fn leaky_walrus() {{}}\nconst K: &str = \"{key}\";\n"),
            );
            write(root, "src/m0/.env", "TOKEN=leaky_walrus\n");
            vec!["src/m0/keys.rs", "src/m0/.env"]
        },
        LayerExpect {
            counts: (1, 0, 0),
            found: &[],
            gone: &[
                "leaky_walrus",
                "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLayeredkey",
            ],
        },
    );
}

/// Changes only a walk can apply are refused, and leave searches on the published
/// generation.
#[test]
fn changes_a_layer_cannot_hold_are_refused() {
    let r = repo(8);
    write(&r.root, "src/newdir/inner.rs", "pub fn in_new_dir() {}\n");
    write(&r.root, ".gitignore", "src/m1/\n");
    let many: Vec<PathBuf> = (0..=satori_core::LAYER_MAX_FILES)
        .map(|i| r.root.join(format!("src/m0/many_{i}.rs")))
        .collect();
    for (name, paths) in [
        ("new directory", vec![r.root.join("src/newdir")]),
        ("ignore rules", vec![r.root.join(".gitignore")]),
        ("too many", many),
    ] {
        let e = r.engine.layer_changes(&r.root, &paths, 1).unwrap_err();
        assert!(matches!(e, Error::NotLayerable(_)), "{name}: {e}");
    }
    assert!(files_with(&r.engine, &r.root, "in_new_dir").is_empty());
    assert_eq!(
        files_with(&r.engine, &r.root, "parse_step_1_0"),
        ["src/m1/file_1.rs"]
    );
}

/// The generation published for `r` now.
fn current_gen(r: &Repo) -> PathBuf {
    let dir = r.engine.home().codebase(&r.root);
    let name = std::fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    dir.path().join(name.trim())
}

/// Every regular file under `dir`: (device, inode) → size.
fn files_by_inode(dir: &Path) -> std::collections::HashMap<(u64, u64), u64> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::HashMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                out.insert((meta.dev(), meta.ino()), meta.len());
            }
        }
    }
    out
}

/// (bytes of `gen` in files no file of `prev` shares, bytes of `gen` in all).
fn new_bytes(prev: &Path, gen_dir: &Path) -> (u64, u64) {
    let before = files_by_inode(prev);
    let now = files_by_inode(gen_dir);
    let new = now
        .iter()
        .filter(|(ino, _)| !before.contains_key(ino))
        .map(|(_, n)| n)
        .sum();
    (new, now.values().sum())
}

/// The call graph's definitions, as (file, symbol name) pairs, sorted.
fn graph_symbols(engine: &Engine, root: &Path) -> Vec<(String, String)> {
    let (graph, _) = engine.call_graph(root).unwrap().unwrap();
    let mut out = Vec::new();
    for (path, _, _, _) in chunk_set(engine, root) {
        if let Some((symbols, _)) = graph.symbols_of(&path) {
            out.extend(symbols.iter().map(|s| (path.clone(), s.name.clone())));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A one-line edit costs what changed, not the whole index: the derived generation shares
/// every untouched byte with the one before it (hard links), and what it writes of its own
/// is a small fraction of the index. Through many such syncs, and through the compaction a
/// larger change causes, it answers as a full index of the same tree.
#[test]
fn a_one_line_edit_writes_what_changed_not_the_whole_index() {
    let r = repo(300);
    for round in 0..12 {
        let prev = current_gen(&r);
        let i = round * 37 % 300;
        let p = r.root.join(path_of(i));
        let text = std::fs::read_to_string(&p).unwrap();
        write(&r.root, &path_of(i), &format!("{text}// edit {round}\n"));
        let s = sync(&r);
        assert!(s.derived && s.modified == 1, "round {round}: {s:?}");
        let (new, total) = new_bytes(&prev, &current_gen(&r));
        assert!(
            new * 10 < total,
            "round {round}: {new} of the generation's {total} bytes were written anew"
        );
        if round % 6 == 5 {
            assert_same_as_full_index(&r, &format!("round {round}"));
            let (_home, fresh) = fully_indexed(&r.root);
            assert_eq!(
                graph_symbols(&r.engine, &r.root),
                graph_symbols(&fresh, &r.root),
                "round {round}: call graph"
            );
        }
    }
    // A change to a fifth of the files is past what a generation carries as changes over
    // an older one: it is written whole again, and still answers as a full index does.
    for i in (0..300).step_by(5) {
        write(&r.root, &path_of(i), &body(i, 7));
    }
    let prev = current_gen(&r);
    let s = sync(&r);
    assert!(s.derived && s.modified == 60, "{s:?}");
    let (new, total) = new_bytes(&prev, &current_gen(&r));
    assert!(new * 4 > total, "compacted: {new} of {total} bytes written");
    assert_same_as_full_index(&r, "compacted");
    let (_home, fresh) = fully_indexed(&r.root);
    assert_eq!(
        graph_symbols(&r.engine, &r.root),
        graph_symbols(&fresh, &r.root),
        "compacted: call graph"
    );
    // And the next edit is cheap again.
    let prev = current_gen(&r);
    write(&r.root, &path_of(1), &format!("{}// after\n", body(1, 0)));
    sync(&r);
    let (new, total) = new_bytes(&prev, &current_gen(&r));
    assert!(new * 10 < total, "after compaction: {new} of {total} bytes");
    assert_same_as_full_index(&r, "after compaction");
}
