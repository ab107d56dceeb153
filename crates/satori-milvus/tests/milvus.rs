//! The backend against a real Milvus: the server binary PyPI's `milvus-lite==2.5.1` ships,
//! started by these tests (`satori_milvus::testing`) and stopped after.
//!
//! What they check: an engine over the backend indexes a tree, finds a file by meaning, and
//! sees a sync; a search never sees a sync that did not publish and the next sync removes
//! its rows; old lineages and dropped keys are deleted; a collection of another dimension, a
//! server that is down, and an index built for another backend are each refused clearly.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use satori_core::dense::{EmbeddedVectors, VectorBackend};
use satori_core::embed::Embeddings;
use satori_core::search::{RetrievalMode, SearchRequest, SearchTuning};
use satori_core::{Backends, Engine, Home, IndexOptions, SyncControl};
use satori_milvus::testing::server;
use satori_milvus::{Endpoint, MilvusBackend, VECTORS_FILE};

fn backend(address: &str) -> Arc<MilvusBackend> {
    Arc::new(MilvusBackend::new(Endpoint::parse(address, None).unwrap(), "test_").unwrap())
}

fn engine(home: &Path, vectors: Arc<dyn VectorBackend>, tuning: &str) -> Arc<Engine> {
    let embeddings = Arc::new(
        Embeddings::new(
            satori_core::embed::ModelSource::Bundled,
            &home.join("models"),
            Default::default(),
        )
        .unwrap(),
    );
    Arc::new(Engine::new(
        Home::new(home.to_path_buf()),
        Backends {
            embeddings,
            vectors,
        },
        SearchTuning::parse(tuning).unwrap(),
    ))
}

fn write(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

fn tree(root: &Path) {
    for (name, body) in [
        (
            "retry",
            "retries a request with exponential backoff between attempts",
        ),
        ("header", "parses one header line at its colon"),
        ("page", "renders the page layout and its widgets"),
        ("queue", "pushes jobs onto a bounded work queue"),
        ("socket", "opens a socket and reads the stream"),
    ] {
        write(
            root,
            &format!("src/{name}.rs"),
            &format!("/// {body}\npub fn {name}() {{}}\n"),
        );
    }
}

/// A full build of `root`, which must succeed.
fn build(engine: &Arc<Engine>, root: &Path) {
    engine
        .start_index(root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap();
}

/// The files of the first hits of a dense-only search for `query`.
fn files(engine: &Engine, root: &Path, query: &str) -> Vec<String> {
    let req = SearchRequest {
        query: query.into(),
        limit: 3,
        ..SearchRequest::default()
    };
    let out = engine.search(root, &req).unwrap();
    assert_eq!(out.diagnostics.retrieval_mode, RetrievalMode::Dense);
    out.hits.iter().map(|h| h.file.clone()).collect()
}

/// The published generation's directory.
fn current(home: &Path) -> PathBuf {
    let indexes = home.join("indexes");
    let codebase = std::fs::read_dir(&indexes)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.'))
        .unwrap()
        .path();
    let name = std::fs::read_to_string(codebase.join("CURRENT")).unwrap();
    codebase.join(name.trim())
}

#[test]
fn indexes_searches_and_syncs_through_milvus() {
    let Some(milvus) = server() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    tree(&root);
    let b = backend(&milvus.address);
    let engine = engine(home.path(), b.clone(), "dense_only");
    build(&engine, &root);
    let first = current(home.path());
    let codebase = first.parent().unwrap().to_path_buf();
    // One chunk per file.
    assert_eq!(b.rows(&codebase).unwrap(), 5);
    let record = std::fs::read_to_string(first.join(VECTORS_FILE)).unwrap();
    assert!(record.contains("\"collection\":\"test_satori_"), "{record}");
    // The last write's timestamp, which searches are guaranteed at (Milvus Lite answers 0
    // for every write, so its searches are strong).
    let written: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert!(written["written"].is_u64(), "{record}");
    assert_eq!(
        files(&engine, &root, "exponential backoff between attempts")[0],
        "src/retry.rs"
    );

    // A sync: one file changes meaning, one goes, one comes.
    write(
        &root,
        "src/page.rs",
        "/// compresses the archive with deflate\npub fn page() {}\n",
    );
    std::fs::remove_file(root.join("src/queue.rs")).unwrap();
    write(
        &root,
        "src/cache.rs",
        "/// evicts the least recently used cache entries\npub fn cache() {}\n",
    );
    let summary = engine.sync(&root, &SyncControl::default()).unwrap();
    assert!(summary.derived, "{summary:?}");
    assert_eq!(
        files(&engine, &root, "compresses the archive with deflate")[0],
        "src/page.rs"
    );
    assert_eq!(
        files(&engine, &root, "least recently used cache entries")[0],
        "src/cache.rs"
    );
    let hits = files(&engine, &root, "bounded work queue jobs");
    assert!(!hits.contains(&"src/queue.rs".to_string()), "{hits:?}");

    // A second engine process over the same home (a CLI call) reads the same vectors.
    let other = self::engine(home.path(), backend(&milvus.address), "dense_only");
    assert_eq!(
        files(&other, &root, "least recently used cache entries")[0],
        "src/cache.rs"
    );

    // A full rebuild starts a lineage; the next sync deletes the old one.
    engine.clear(&root).unwrap();
    build(&engine, &root);
    write(
        &root,
        "src/extra.rs",
        "/// parses command line flags\npub fn extra() {}\n",
    );
    engine.sync(&root, &SyncControl::default()).unwrap();
    assert_eq!(
        files(&engine, &root, "parses command line flags")[0],
        "src/extra.rs"
    );
    // The old lineage's rows are gone: only the six files' chunks remain.
    assert_eq!(b.rows(&codebase).unwrap(), 6);

    assert_eq!(
        files(&engine, &root, "least recently used cache entries")[0],
        "src/cache.rs"
    );

    // Clearing the codebase drops its collection: no slot is left taken.
    let name = b.collection_name(&codebase).unwrap();
    engine.clear(&root).unwrap();
    let client = backend(&milvus.address);
    assert!(client.rows(&codebase).is_err(), "{name} is still there");
}

#[test]
fn a_sync_that_never_published_is_invisible_and_cleaned() {
    let Some(milvus) = server() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    tree(&root);
    let milvus_backend = backend(&milvus.address);
    let engine = engine(home.path(), milvus_backend.clone(), "dense_only");
    build(&engine, &root);

    // A sync that is stopped after its vectors went in and before it published.
    write(
        &root,
        "src/retry.rs",
        "/// renders the page layout and its widgets, twice\npub fn retry() {}\n",
    );
    let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let c = Arc::clone(&cancel);
    let ctl = SyncControl {
        cancel: Some(cancel),
        on_progress: Some(Box::new(move |p| {
            if p.phase == satori_core::Phase::Writing {
                c.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        })),
    };
    assert!(engine.sync(&root, &ctl).is_err());
    // The published generation answers as before in another process (this one may layer
    // the change it saw in memory): the rows the sync inserted are not seen.
    let other = self::engine(home.path(), milvus_backend.clone(), "dense_only");
    let hits = files(&other, &root, "exponential backoff between attempts");
    assert_eq!(hits[0], "src/retry.rs", "{hits:?}");
    // The next sync publishes the change.
    engine.sync(&root, &SyncControl::default()).unwrap();
    let hits = files(&other, &root, "exponential backoff between attempts");
    assert_ne!(hits[0], "src/retry.rs", "{hits:?}");
    // The rows the stopped sync inserted went with the next one's start, and the row of
    // the chunk it replaced goes with the sync after it: five files' chunks, and the one
    // replaced chunk still named as dropped.
    let codebase = current(home.path()).parent().unwrap().to_path_buf();
    assert_eq!(milvus_backend.rows(&codebase).unwrap(), 6);
    write(
        &root,
        "src/more.rs",
        "/// one more file\npub fn more() {}\n",
    );
    engine.sync(&root, &SyncControl::default()).unwrap();
    assert_eq!(milvus_backend.rows(&codebase).unwrap(), 6);
}

#[test]
fn refusals_name_the_problem() {
    let Some(milvus) = server() else { return };
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    tree(&root);

    // A server that is down: the build fails naming the address and the setting.
    let home = tempfile::tempdir().unwrap();
    let down = engine(home.path(), backend("127.0.0.1:9"), "dense_only");
    let err = down
        .start_index(&root, IndexOptions::default())
        .unwrap()
        .run(|_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot be reached") && err.contains("MILVUS_ADDRESS"),
        "{err}"
    );
    // Clearing it keeps the local index while Milvus cannot be told, and says how to go on.
    let err = down.clear(&root).unwrap_err().to_string();
    assert!(
        err.contains("the index is kept") && err.contains("without MILVUS_ADDRESS"),
        "{err}"
    );
    let local = engine(home.path(), Arc::new(EmbeddedVectors), "dense_only");
    assert!(local.clear(&root).unwrap());

    // An index built on the embedded backend, opened with Milvus: rebuilt, not misread.
    let home = tempfile::tempdir().unwrap();
    let embedded = engine(home.path(), Arc::new(EmbeddedVectors), "dense_only");
    build(&embedded, &root);
    let milvus_engine = engine(home.path(), backend(&milvus.address), "dense_only");
    let reason = milvus_engine.check_fingerprint(&root).unwrap();
    assert!(reason.is_some(), "a backend switch must require a reindex");

    // The codebase's collection holds vectors of another dimension: refused before
    // anything is embedded, with the fix.
    let home = tempfile::tempdir().unwrap();
    let b = backend(&milvus.address);
    let e = engine(home.path(), b.clone(), "dense_only");
    build(&e, &root);
    let gen_dir = current(home.path());
    let err = match b.sink(&gen_dir.parent().unwrap().join("gen-other"), 7, None) {
        Ok(_) => panic!("a sink of another dimension was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("but the model embeds 7") && err.contains("clear the codebase"),
        "{err}"
    );
}

/// The bundled model behind a counter: a stand-in for a paid API, counting the texts it is
/// asked to embed.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn satori_core::embed::Embedder>,
    texts: Arc<std::sync::atomic::AtomicUsize>,
}

impl satori_core::embed::Embedder for Counting {
    fn info(&self) -> &satori_core::embed::ModelInfo {
        self.inner.info()
    }
    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }
    fn concurrency(&self) -> usize {
        self.inner.concurrency()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, satori_core::embed::EmbedError> {
        self.texts
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

/// An engine over `home` embedding through `counting` behind Milvus's shared vectors.
fn team_engine(
    home: &Path,
    b: &Arc<MilvusBackend>,
    texts: &Arc<std::sync::atomic::AtomicUsize>,
) -> Arc<Engine> {
    let bundled = Embeddings::new(
        satori_core::embed::ModelSource::Bundled,
        &home.join("models"),
        Default::default(),
    )
    .unwrap();
    let info = bundled.info().clone();
    let inner = bundled.embedder(&home.join("models")).unwrap();
    let (b2, t) = (Arc::clone(b), Arc::clone(texts));
    let embeddings = Embeddings::remote(
        info,
        home.join("embed-cache"),
        Box::new(move || {
            let counting: Arc<dyn satori_core::embed::Embedder> = Arc::new(Counting {
                inner: Arc::clone(&inner),
                texts: Arc::clone(&t),
            });
            Ok(b2.share(counting))
        }),
    );
    Arc::new(Engine::new(
        Home::new(home.to_path_buf()),
        Backends {
            embeddings: Arc::new(embeddings),
            vectors: b.clone(),
        },
        SearchTuning::parse("dense_only").unwrap(),
    ))
}

#[test]
fn a_team_shares_what_it_embedded() {
    use std::sync::atomic::Ordering::SeqCst;
    let Some(milvus) = server() else { return };
    let b = backend(&milvus.address);
    // Two homes (two machines), each with its checkout of the same code.
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (repo_a, repo_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root_a = repo_a.path().canonicalize().unwrap();
    let root_b = repo_b.path().canonicalize().unwrap();
    tree(&root_a);
    tree(&root_b);
    let (texts_a, texts_b) = (Arc::default(), Arc::default());
    let a = team_engine(home_a.path(), &b, &texts_a);
    let bee = team_engine(home_b.path(), &b, &texts_b);

    build(&a, &root_a);
    assert_eq!(texts_a.load(SeqCst), 5);
    // The teammate indexes without asking the API for anything, and finds by meaning.
    build(&bee, &root_b);
    assert_eq!(texts_b.load(SeqCst), 0);
    assert_eq!(
        files(&bee, &root_b, "exponential backoff between attempts")[0],
        "src/retry.rs"
    );

    // A changes a file and syncs; the change reaches B's checkout, and B's sync embeds
    // nothing either.
    let changed = "/// compresses the archive with deflate\npub fn page() {}\n";
    write(&root_a, "src/page.rs", changed);
    a.sync(&root_a, &SyncControl::default()).unwrap();
    write(&root_b, "src/page.rs", changed);
    let before = texts_b.load(SeqCst);
    bee.sync(&root_b, &SyncControl::default()).unwrap();
    assert_eq!(
        files(&bee, &root_b, "compresses the archive with deflate")[0],
        "src/page.rs"
    );
    // Its search's own query is the only text it embedded.
    assert_eq!(texts_b.load(SeqCst) - before, 1);

    // The two homes keep their generations apart: each has its own collection.
    let codebase_a = current(home_a.path()).parent().unwrap().to_path_buf();
    let codebase_b = current(home_b.path()).parent().unwrap().to_path_buf();
    assert_ne!(
        b.collection_name(&codebase_a).unwrap(),
        b.collection_name(&codebase_b).unwrap()
    );
    // Six texts were ever embedded (five files, one change) and the queries.
    let info = Embeddings::new(
        satori_core::embed::ModelSource::Bundled,
        &home_a.path().join("models"),
        Default::default(),
    )
    .unwrap()
    .info()
    .clone();
    assert!(b.shared_rows(&info).unwrap() >= 6);
}
