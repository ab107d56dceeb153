//! A disk that fills up while the index is written: the build or sync fails with an error
//! that names the full device (the index library alone only reports a killed writer), the
//! published index stays searchable and unchanged, and the unfinished generation is removed.
//!
//! The home lives on a small tmpfs. Mounting one needs no privilege inside a user and mount
//! namespace, so the test runs itself again under `unshare` with the tmpfs mounted; where
//! the system allows no user namespaces it says so on stderr and checks nothing.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use satori_core::embed::hub::HubOptions;
use satori_core::embed::{Embeddings, ModelSource};
use satori_core::search::{Scope, SearchRequest, SearchTuning};
use satori_core::{Engine, Error, Home, IndexOptions, IndexState, SyncControl};

/// Set (to the mounted tmpfs) in the run inside the namespace.
const INSIDE: &str = "SATORI_TEST_SMALL_HOME";
const TEST: &str = "a_full_disk_is_named_and_loses_nothing";

#[test]
fn a_full_disk_is_named_and_loses_nothing() {
    match std::env::var_os(INSIDE) {
        Some(home) => inside(Path::new(&home)),
        None => outside(),
    }
}

/// Runs `script` (given the mount point as `$0`) in a new user and mount namespace.
fn in_namespace(mount: &Path, script: &str) -> std::io::Result<std::process::Output> {
    Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", script])
        .arg(mount)
        .env(INSIDE, mount)
        .output()
}

// The one line a skipped check leaves, so that a run without namespaces is visible.
#[allow(clippy::print_stderr)]
fn outside() {
    let mount = tempfile::tempdir().unwrap();
    let probe = in_namespace(mount.path(), r#"mount -t tmpfs -o size=1m tmpfs "$0""#);
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!(
            "{TEST}: not checked: this system cannot mount a tmpfs in a user namespace ({probe:?})"
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        r#"mount -t tmpfs -o size=3m tmpfs "$0" && exec '{}' --exact {TEST} --nocapture --test-threads 1"#,
        exe.display()
    );
    let run = in_namespace(mount.path(), &script).unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{out}\n{err}");
    assert!(out.contains("1 passed"), "{out}\n{err}");
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A file of `lines` functions whose names are unique to file `i`.
fn body(i: usize, lines: usize) -> String {
    (0..lines)
        .map(|l| {
            format!("pub fn unit_{i}_step_{l}(x: u64) -> u64 {{ x.wrapping_mul({l}) ^ {i} }}\n")
        })
        .collect()
}

fn hits(engine: &Engine, root: &Path, word: &str) -> usize {
    let req = SearchRequest {
        query: format!("must:{word} {word}"),
        scope: Scope::Mixed,
        limit: 5,
        ..SearchRequest::default()
    };
    engine.search(root, &req).unwrap().hits.len()
}

#[track_caller]
fn assert_disk_full(e: &Error, home: &Path) {
    let Error::DiskFull { dir, .. } = e else {
        panic!("expected a full disk, got: {e}");
    };
    assert!(dir.starts_with(home), "{dir:?}");
    assert!(e.to_string().contains("no space left"), "{e}");
}

fn inside(home: &Path) {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    for i in 0..10 {
        write(&root, &format!("src/f{i}.rs"), &body(i, 20));
    }
    let home_dir = Home::new(home.to_path_buf());
    let embeddings = Embeddings::new(
        ModelSource::Bundled,
        &home_dir.models_dir(),
        HubOptions::default(),
    )
    .unwrap();
    let engine = Arc::new(Engine::new(
        home_dir,
        Arc::new(embeddings),
        SearchTuning::default(),
    ));
    let job = engine.start_index(&root, IndexOptions::default()).unwrap();
    job.run(|_| {}).unwrap();
    assert_eq!(hits(&engine, &root, "unit_3_step_7"), 1);
    let free_before = fs_free(home);

    // Far more text than the tmpfs can index.
    for i in 10..2000 {
        write(&root, &format!("more/g{i}.rs"), &body(i, 30));
    }
    let e = engine.sync(&root, &SyncControl::default()).unwrap_err();
    assert_disk_full(&e, home);
    let job = engine.start_index(&root, IndexOptions::default()).unwrap();
    let e = job.run(|_| {}).unwrap_err();
    assert_disk_full(&e, home);

    // Nothing was lost: the published index answers as before, its record is not failed,
    // and the unfinished generations are gone with the space they took.
    assert_eq!(hits(&engine, &root, "unit_3_step_7"), 1);
    assert_eq!(hits(&engine, &root, "unit_1500_step_2"), 0);
    let st = engine.state(&root).unwrap().unwrap();
    assert_ne!(st.state, IndexState::IndexFailed, "{st:?}");
    assert!(
        st.error_message
            .as_deref()
            .is_some_and(|m| m.contains("no space left")),
        "{st:?}"
    );
    assert!(
        fs_free(home) + 64 * 1024 >= free_before,
        "leftovers fill the disk"
    );
}

fn fs_free(path: &Path) -> u64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}
