//! Cost of a sync against a cold full index of the same tree. Copies tokio's sources from
//! the cargo registry (or `SATORI_BENCH_TREE`, any source directory) into a scratch
//! directory, indexes it with the bundled model, then times a sync after no change and
//! after editing 1, 100 and every file, and a zero-change sync of a generated 10k-file tree.
//! Prints one JSON line: each time in ms and its ratio to the cold index of its tree.
//!
//! `cargo bench -p satori-core --bench sync`

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::SearchTuning;
use satori_core::{Engine, Home, IndexOptions, SyncControl};

mod common;
use common::{median, rust_files};

/// tokio's sources in the cargo registry, the newest version found.
fn default_tree() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let mut found = Vec::new();
    for registry in std::fs::read_dir(home.join("registry/src")).ok()?.flatten() {
        for krate in std::fs::read_dir(registry.path()).ok()?.flatten() {
            let name = krate.file_name().to_string_lossy().into_owned();
            if name.starts_with("tokio-1.") {
                found.push(krate.path());
            }
        }
    }
    found.sort();
    found.pop()
}

fn new_engine(home: &Path) -> Arc<Engine> {
    let home = Home::new(home.to_path_buf());
    let embeddings = Embeddings::new(
        ModelSource::Bundled,
        &home.models_dir(),
        HubOptions::default(),
    )
    .unwrap();
    Arc::new(Engine::new(
        home,
        Arc::new(embeddings),
        SearchTuning::default(),
    ))
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn cold_index(engine: &Arc<Engine>, root: &Path) -> f64 {
    let t = Instant::now();
    let job = engine.start_index(root, IndexOptions::default()).unwrap();
    job.run(|_| {}).unwrap();
    ms(t)
}

/// The median of `reps` zero-change syncs.
fn zero_change_sync(engine: &Arc<Engine>, root: &Path, reps: usize) -> f64 {
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                let s = engine.sync(root, &SyncControl::default()).unwrap();
                assert!(!s.derived && !s.rebuilt, "{s:?}");
                ms(t)
            })
            .collect(),
    )
}

#[allow(clippy::disallowed_methods)] // A benchmark's figures are its output.
fn main() {
    let tree = std::env::var_os("SATORI_BENCH_TREE")
        .map(PathBuf::from)
        .or_else(default_tree)
        .expect("no tree to index: set SATORI_BENCH_TREE");
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("tree");
    let files = rust_files(&tree);
    let mut copied = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&tree).unwrap();
        let dst = root.join(rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(f, &dst).unwrap();
        copied.push(dst);
    }
    let root = root.canonicalize().unwrap();
    let engine = new_engine(&scratch.path().join("home"));
    let cold = cold_index(&engine, &root);
    let mut report = serde_json::json!({
        "tree": tree.display().to_string(),
        "files": copied.len(),
        "coldIndexMs": cold,
        "zeroChangeSyncMs": zero_change_sync(&engine, &root, 5),
    });
    for (round, n) in [1usize, 100, copied.len()].into_iter().enumerate() {
        for f in copied.iter().take(n) {
            let mut file = std::fs::OpenOptions::new().append(true).open(f).unwrap();
            writeln!(file, "// edit {round}").unwrap();
        }
        let t = Instant::now();
        let s = engine.sync(&root, &SyncControl::default()).unwrap();
        let took = ms(t);
        report[format!("edit{n}")] = serde_json::json!({
            "syncMs": took,
            "ratioToCold": took / cold,
            "derived": s.derived,
            "modified": s.modified,
            "reusedVectors": s.reused_vectors,
            "embeddedChunks": s.embedded_chunks,
        });
    }

    // A 10k-file tree for the zero-change target.
    let big = scratch.path().join("big").join("tree");
    for i in 0..10_000 {
        let p = big.join(format!("d{}/f{i}.rs", i % 100));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("pub fn f{i}() -> usize {{ {i} }}\n")).unwrap();
    }
    let big = big.canonicalize().unwrap();
    let big_engine = new_engine(&scratch.path().join("big").join("home"));
    let big_cold = cold_index(&big_engine, &big);
    let big_zero = zero_change_sync(&big_engine, &big, 7);
    report["big"] = serde_json::json!({
        "files": 10_000,
        "coldIndexMs": big_cold,
        "zeroChangeSyncMs": big_zero,
        "ratioToCold": big_zero / big_cold,
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{report}").unwrap();
}
