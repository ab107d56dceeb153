//! Generations under concurrency and damage: a search never loses the generation it read
//! from `CURRENT` to a publish, `clear` and builds serialise without leaving directories
//! behind, leftovers of killed builds go at the next start, and a damaged index is reported
//! (as `requires_reindex`, naming the file) instead of panicking.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::{SearchRequest, SearchTuning};
use satori_core::{
    Engine, Error, Home, IndexOptions, IndexState, Purpose, Refusal, ReindexReason, SyncControl,
};

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    home: Home,
    root: PathBuf,
    dense: bool,
}

impl Fixture {
    /// A repository of `files` small Rust files; `dense` builds with the bundled model.
    fn new(files: usize, dense: bool) -> Fixture {
        let home_dir = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join("src")).unwrap();
        for i in 0..files {
            std::fs::write(
                repo.path().join(format!("src/m{i}.rs")),
                format!("/// Parses header number {i}.\npub fn parse_header_{i}(input: &str) -> usize {{\n    input.len() + {i}\n}}\n"),
            )
            .unwrap();
        }
        Fixture {
            root: repo.path().canonicalize().unwrap(),
            home: Home::new(home_dir.path().to_path_buf()),
            _dirs: (home_dir, repo),
            dense,
        }
    }

    /// A new engine over the fixture's home: a fresh process, with nothing open or cached.
    fn engine(&self) -> Arc<Engine> {
        let embeddings = if self.dense {
            Embeddings::new(
                ModelSource::Bundled,
                &self.home.models_dir(),
                HubOptions::default(),
            )
            .unwrap()
        } else {
            Embeddings::disabled()
        };
        Arc::new(Engine::new(
            self.home.clone(),
            Arc::new(embeddings),
            SearchTuning::default(),
        ))
    }

    fn index(&self, engine: &Arc<Engine>) -> satori_core::Result<()> {
        engine
            .start_index(&self.root, IndexOptions::default())?
            .run(|_| {})
            .map(|_| ())
    }

    fn current_gen(&self) -> PathBuf {
        let dir = self.home.codebase(&self.root);
        let name = std::fs::read_to_string(dir.path().join("CURRENT")).unwrap();
        dir.path().join(name.trim())
    }

    /// Directories under `indexes/` that belong to no tracked codebase.
    fn orphans(&self, engine: &Engine) -> Vec<String> {
        let tracked: Vec<PathBuf> = engine
            .states()
            .unwrap()
            .keys()
            .map(|r| self.home.codebase(r).path().to_path_buf())
            .collect();
        std::fs::read_dir(self.home.indexes_dir())
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| !tracked.contains(p))
                    .map(|p| p.display().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn query(text: &str) -> SearchRequest {
    SearchRequest {
        query: text.to_owned(),
        limit: 5,
        ..SearchRequest::default()
    }
}

/// A search in one process racing publishes of another: every search succeeds.
#[test]
fn a_searcher_never_loses_its_generation_to_a_publisher() {
    let f = Fixture::new(200, false);
    let publisher = f.engine();
    f.index(&publisher).unwrap();
    let done = AtomicBool::new(false);
    let (searches, failures) = std::thread::scope(|s| {
        let searcher = s.spawn(|| {
            let (mut n, mut failures) = (0, Vec::new());
            while !done.load(Ordering::Relaxed) {
                n += 1;
                // A fresh engine opens the generation every time, as every CLI process does.
                if let Err(e) = f.engine().search(&f.root, &query("parse header")) {
                    failures.push(e.to_string());
                }
            }
            (n, failures)
        });
        for i in 0..40 {
            std::fs::write(
                f.root.join("src/m0.rs"),
                format!("pub fn edited_{i}() {{}}\n"),
            )
            .unwrap();
            f.index(&publisher).unwrap();
        }
        done.store(true, Ordering::Relaxed);
        searcher.join().unwrap()
    });
    assert!(searches > 40, "the searcher ran ({searches} searches)");
    assert!(
        failures.is_empty(),
        "{} of {searches} searches failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
}

/// A generation read from `CURRENT` before a publish is still there to open after it.
#[test]
fn a_published_generation_outlives_its_replacement_for_readers() {
    let f = Fixture::new(3, false);
    let engine = f.engine();
    f.index(&engine).unwrap();
    let read_before = f.current_gen();
    f.index(&engine).unwrap();
    assert_ne!(f.current_gen(), read_before);
    assert!(read_before.join("COMPLETE").is_file(), "still openable");
    satori_core::Generation::open(&read_before).unwrap();
}

/// Leftovers of killed builds (generations without `COMPLETE`) are removed when a process
/// starts, unless a build holds the writer lock.
#[test]
fn leftovers_of_killed_builds_go_at_the_next_start() {
    let f = Fixture::new(3, false);
    f.index(&f.engine()).unwrap();
    let dir = f.home.codebase(&f.root);
    let leftover = dir.path().join("gen-1-1");
    std::fs::create_dir_all(leftover.join("lexical")).unwrap();
    let interrupted_clear = f.home.indexes_dir().join(".cleared-0000-1-1");
    std::fs::create_dir_all(&interrupted_clear).unwrap();

    let lock = dir.lock_for_build(&f.root).unwrap().unwrap();
    f.engine().tidy();
    assert!(
        leftover.exists(),
        "a running build's generation is left alone"
    );
    drop(lock);
    f.engine().tidy();
    assert!(!leftover.exists() && !interrupted_clear.exists());
    assert!(f.current_gen().is_dir());
    f.engine().search(&f.root, &query("parse header")).unwrap();
}

/// `clear` racing builds from another process: the only errors are `Busy`, and afterwards no
/// directory is left without its state.
#[test]
fn clear_and_create_serialise() {
    let f = Fixture::new(30, false);
    let done = AtomicBool::new(false);
    let unexpected = std::thread::scope(|s| {
        let clearer = s.spawn(|| {
            let engine = f.engine();
            let mut unexpected = Vec::new();
            while !done.load(Ordering::Relaxed) {
                match engine.clear(&f.root) {
                    Ok(_) | Err(Error::Busy(_)) => {}
                    Err(e) => unexpected.push(format!("clear: {e}")),
                }
            }
            unexpected
        });
        let builder = f.engine();
        let mut unexpected = Vec::new();
        for _ in 0..40 {
            match f.index(&builder) {
                Ok(()) | Err(Error::Busy(_)) => {}
                Err(e) => unexpected.push(format!("create: {e}")),
            }
        }
        done.store(true, Ordering::Relaxed);
        unexpected.extend(clearer.join().unwrap());
        unexpected
    });
    assert!(unexpected.is_empty(), "{unexpected:?}");
    let engine = f.engine();
    assert_eq!(f.orphans(&engine), Vec::<String>::new());
    f.index(&engine).unwrap();
    engine.search(&f.root, &query("parse header")).unwrap();
    assert_eq!(f.orphans(&engine), Vec::<String>::new());
}

/// Damages one file of the published generation.
type Damage = fn(&Path);

fn overwrite_middle(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let (mid, len) = (bytes.len() / 2, bytes.len());
    for b in &mut bytes[mid.saturating_sub(8)..(mid + 8).min(len)] {
        *b ^= 0x5a;
    }
    std::fs::write(path, bytes).unwrap();
}

/// The one file of `gen`'s lexical index with `extension`.
fn lexical_file(gen_dir: &Path, extension: &str) -> PathBuf {
    std::fs::read_dir(gen_dir.join("lexical"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == extension))
        .unwrap_or_else(|| panic!("no .{extension} file"))
}

/// One damage case: `damage` applied to the published generation makes status (a fresh
/// process's `check_index`) and search report `requires_reindex` naming a file that ends with
/// `names`; no panic escapes; a rebuild repairs it. The generation was searched (and so
/// verified, and the verification recorded) before the damage: the record must not hide it.
/// With `derived`, the damaged generation is one a sync derived after a one-file edit,
/// which stores only its changes over the files it shares with the build before it.
fn check(name: &str, (dense, derived): (bool, bool), damage: Damage, names: &str) {
    let f = Fixture::new(20, dense);
    f.index(&f.engine()).unwrap();
    if derived {
        std::fs::write(
            f.root.join("src/m3.rs"),
            "pub fn parse_header_edited() {}\n",
        )
        .unwrap();
        let s = f.engine().sync(&f.root, &SyncControl::default()).unwrap();
        assert!(s.derived, "{name}: {s:?}");
    }
    f.engine().search(&f.root, &query("parse header")).unwrap();
    assert!(f.current_gen().join("lexical.verified").is_file(), "{name}");
    damage(&f.current_gen());

    let status = f.engine().check_index(&f.root).unwrap();
    let message = status.unwrap_or_else(|| panic!("{name}: status saw no damage"));
    assert!(message.contains(names), "{name}: {message}");
    let st = f.engine().state(&f.root).unwrap().unwrap();
    assert_eq!(st.state, IndexState::RequiresReindex, "{name}");
    assert_eq!(st.reason, Some(ReindexReason::IndexDamaged), "{name}");
    match f.engine().target(&f.root, Purpose::Search) {
        Err(Refusal::RequiresReindex { detail, reason, .. }) => {
            assert_eq!(reason, ReindexReason::IndexDamaged, "{name}");
            assert!(detail.is_some_and(|d| d.contains(names)), "{name}");
        }
        other => panic!("{name}: the gate let a damaged index through: {other:?}"),
    }
    match f.engine().search(&f.root, &query("parse header")) {
        Err(Error::Damaged { file, .. }) => {
            assert!(
                file.to_string_lossy().ends_with(names),
                "{name}: {}",
                file.display()
            );
        }
        other => panic!("{name}: search of a damaged index: {other:?}"),
    }

    let engine = f.engine();
    f.index(&engine).unwrap();
    assert_eq!(
        engine.check_index(&f.root).unwrap(),
        None,
        "{name}: rebuilt"
    );
    let hits = engine.search(&f.root, &query("parse header")).unwrap().hits;
    assert!(!hits.is_empty(), "{name}: rebuilt index answers");
}

#[test]
fn a_damaged_index_is_reported_and_rebuilt() {
    let term: Damage = |g| overwrite_middle(&lexical_file(g, "term"));
    let missing_term: Damage = |g| std::fs::remove_file(lexical_file(g, "term")).unwrap();
    let store: Damage = |g| overwrite_middle(&lexical_file(g, "store"));
    let meta: Damage = |g| std::fs::write(g.join("lexical/meta.json"), "{not json").unwrap();
    let table: Damage = |g| overwrite_middle(&g.join("chunks.bin"));
    let manifest: Damage = |g| std::fs::write(g.join("manifest.json"), "").unwrap();
    let vectors: Damage = |g| {
        let path = g.join("vectors/matrix.bin");
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    };
    let overlay: Damage = |g| overwrite_middle(&g.join("overlay.bin"));
    let added_chunks: Damage = |g| overwrite_middle(&g.join("chunks.delta.bin"));
    let added_vectors: Damage =
        |g| std::fs::write(g.join("vectors/matrix.delta.bin"), b"SATVEC02").unwrap();
    let file_list: Damage = |g| std::fs::write(g.join("files.json"), "[{").unwrap();
    let file_changes: Damage = |g| std::fs::write(g.join("files.delta.json"), "{").unwrap();
    let (whole, derived) = ((false, false), (false, true));
    let cases: [(&str, (bool, bool), Damage, &str); 12] = [
        ("term file", whole, term, ".term"),
        ("missing term file", whole, missing_term, ".term"),
        ("document store", whole, store, ".store"),
        ("lexical meta.json", whole, meta, "meta.json"),
        ("chunk table", whole, table, "chunks.bin"),
        ("manifest", whole, manifest, "manifest.json"),
        ("vectors", (true, false), vectors, "matrix.bin"),
        ("overlay", derived, overlay, "overlay.bin"),
        ("added chunks", derived, added_chunks, "chunks.delta.bin"),
        (
            "added vectors",
            (true, true),
            added_vectors,
            "matrix.delta.bin",
        ),
        ("file list", derived, file_list, "files.json"),
        (
            "file list changes",
            derived,
            file_changes,
            "files.delta.json",
        ),
    ];
    for (name, dense, damage, names) in cases {
        check(name, dense, damage, names);
    }
}
