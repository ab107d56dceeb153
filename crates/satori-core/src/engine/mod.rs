//! The engine façade: index a codebase (in generations), keep its state, gate searches and
//! reads, sync it, search it, outline a file, clear it. Callers (the MCP server, tests,
//! benches) use the engine and the types re-exported at the crate root.
//!
//! Split by job: `build` (the index job), `sync` (sync and reindex preflight), `status`
//! (state repair, fingerprint and integrity checks), `target` (the gate of searches and
//! reads), `read` (the one way a tool gets at a file's text), `verify` (opening a generation without trusting its bytes: checksums, caught
//! panics, damage reports); this module holds the [`Engine`] itself and its small queries.

mod build;
mod codebase;
mod layer;
mod read;
mod status;
mod sync;
mod target;
mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use self::build::{HandOff, IndexJob, IndexOptions, IndexSummary, Progress};
pub use self::layer::{LAYER_MAX_FILES, LayerSummary};
pub use self::read::{FileKind, READ_HEAD_BYTES, ReadLimits, ReadPurpose, ReadRefusal, Readable};
pub use self::sync::{Preflight, ProgressFn, SyncControl, SyncSummary};
pub use self::target::{Purpose, Refusal, Target};

use crate::chunk::{ChunkOptions, outline_file};
use crate::dense::{EmbeddedVectors, VectorBackend};
use crate::embed::{Embedder, Embeddings};
use crate::graph::{CallGraph, GraphFile, GraphStatus};
use crate::lang::Language;
use crate::layout::{CodebaseDir, ExistingLock, Fingerprint, Home, Manifest, WriterLock};
use crate::policy::{Policy, RootRefusal};
use crate::search::rerank::{RerankSetup, Reranker};
use crate::search::{self, SearchContext, SearchOutcome, SearchRequest, SearchTuning};
use crate::state::{IndexState, ReindexReason, StateStore};
use crate::symbol::Symbol;
use crate::util::now_ms;
use crate::{Error, Result};

use crate::util::lock;

/// Attempts at opening the published generation when it is replaced (and the one read
/// removed) between reading `CURRENT` and opening it.
const OPEN_ATTEMPTS: usize = 5;

/// How long a build or sync waits for a writer lock whose holder has already recorded the
/// end of its work. A build writes its final state before it releases the lock (and may
/// still be removing long-retired generations), so in that window the index is not busy,
/// only finishing.
const FINISHING_WAIT: Duration = Duration::from_secs(5);

/// The engine, shared by every request of a process.
pub struct Engine {
    home: Home,
    store: StateStore,
    fingerprint: Fingerprint,
    embeddings: Arc<Embeddings>,
    /// Where every generation's vectors are kept.
    vectors: Arc<dyn VectorBackend>,
    tuning: SearchTuning,
    /// The reranker of searches, and whether a search that does not say uses it.
    reranker: Option<Arc<dyn Reranker>>,
    rerank_by_default: bool,
    /// What this process keeps of each codebase: open generations, call graphs, layered
    /// changes, what its syncs saw (see `codebase`).
    codebases: codebase::Codebases,
    chunk_options: ChunkOptions,
    /// The most chunks one codebase's index holds (`build::CHUNK_LIMIT` unless set).
    chunk_limit: u64,
    policy: Policy,
}

/// What an engine embeds with and keeps vectors in, chosen by its caller: the binary picks
/// the backends, so that one with a client of its own (a remote vector store) lives in a
/// crate of its own. `Arc<Embeddings>` converts into the embedded default.
#[derive(Debug, Clone)]
pub struct Backends {
    pub embeddings: Arc<Embeddings>,
    pub vectors: Arc<dyn VectorBackend>,
}

impl Backends {
    /// `embeddings`, with vectors in each generation's embedded matrix.
    pub fn embedded(embeddings: Arc<Embeddings>) -> Backends {
        Backends {
            embeddings,
            vectors: Arc::new(EmbeddedVectors),
        }
    }
}

impl From<Arc<Embeddings>> for Backends {
    fn from(embeddings: Arc<Embeddings>) -> Backends {
        Backends::embedded(embeddings)
    }
}

impl Engine {
    /// An engine over `home` embedding and keeping vectors with `backends` (whose identities
    /// become the runtime fingerprint) and ranking with `tuning`.
    pub fn new(home: Home, backends: impl Into<Backends>, tuning: SearchTuning) -> Engine {
        let Backends {
            embeddings,
            vectors,
        } = backends.into();
        Engine {
            store: StateStore::new(home.clone()),
            fingerprint: Fingerprint::of(embeddings.info(), vectors.id()),
            embeddings,
            vectors,
            tuning,
            reranker: None,
            rerank_by_default: false,
            codebases: codebase::Codebases::default(),
            chunk_options: ChunkOptions::default(),
            chunk_limit: build::CHUNK_LIMIT,
            policy: Policy::default().with_state_dir(home.root()),
            home,
        }
    }

    /// The same engine stopping indexes at `limit` chunks instead of
    /// [`CHUNK_LIMIT`](build::CHUNK_LIMIT) (a monorepo whose vectors live in a remote store).
    pub fn with_chunk_limit(mut self, limit: u64) -> Engine {
        self.chunk_limit = limit.max(1);
        self
    }

    /// The same engine reranking searches with `reranker`: always when a request asks
    /// (`useReranker: true`), and when it does not say if `by_default`.
    pub fn with_reranker(mut self, reranker: Arc<dyn Reranker>, by_default: bool) -> Engine {
        self.reranker = Some(reranker);
        self.rerank_by_default = by_default;
        self
    }

    /// The reranker of searches, if any.
    pub fn reranker(&self) -> Option<&dyn Reranker> {
        self.reranker.as_deref()
    }

    /// Whether a search that does not say reranks.
    pub fn reranks_by_default(&self) -> bool {
        self.reranker.is_some() && self.rerank_by_default
    }

    /// The same engine applying `policy` (its state directory is this engine's home).
    pub fn with_policy(mut self, policy: Policy) -> Engine {
        self.policy = policy.with_state_dir(self.home.root());
        self
    }

    /// What may be tracked, indexed and read.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Why `root` (canonical) cannot be tracked as a codebase, if it cannot.
    pub fn refuse_root(&self, root: &Path) -> Option<RootRefusal> {
        self.policy.refuse_root(root)
    }

    /// Loads the embedding model on a background thread, so that the first search of a
    /// fresh process (every `satori-cli` call) finds it ready: the load overlaps the MCP
    /// handshake. A search that arrives first waits for the same load; a failure is kept
    /// and reported by that search.
    pub fn preload_model(self: &Arc<Self>) {
        if !self.embeddings.enabled() {
            return;
        }
        let engine = Arc::clone(self);
        // If the thread cannot be spawned, the first search loads the model itself.
        let _ = std::thread::Builder::new()
            .name("satori-model".into())
            .spawn(move || {
                let _ = engine.embedder();
            });
    }

    /// The indexed codebase a search of `path` would use (the longest tracked root that
    /// holds it), when it is ready to search and served; `None` otherwise. Reads the state
    /// file and nothing else: a process started for one search (a `satori-cli` call) uses it
    /// to open that index, and to ask git what changed, while the handshake still runs.
    pub fn searchable_root(&self, path: &Path) -> Option<PathBuf> {
        let path = path.canonicalize().ok()?;
        let file = self.store.load().ok()?;
        let (root, st) = file
            .codebases
            .into_iter()
            .filter(|(root, _)| path.starts_with(root))
            .max_by_key(|(root, _)| root.as_os_str().len())?;
        (matches!(st.state, IndexState::Indexed | IndexState::SyncCompleted)
            && self.refuse_root(&root).is_none())
        .then_some(root)
    }

    /// The embedder, its model loaded on first use; `None` when dense retrieval is off.
    fn embedder(&self) -> Result<Option<Arc<dyn Embedder>>> {
        if !self.embeddings.enabled() {
            return Ok(None);
        }
        self.embeddings
            .embedder(&self.home.models_dir())
            .map(Some)
            .map_err(|e| Error::Model(e.0))
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// Resolves a user path to the canonical directory used as the key of its index.
    pub fn canonical_root(path: &Path) -> Result<PathBuf> {
        if !path.exists() {
            return Err(Error::NotFound(path.to_path_buf()));
        }
        let canon = path
            .canonicalize()
            .map_err(|e| Error::io("resolve", path, e))?;
        if !canon.is_dir() {
            return Err(Error::NotADirectory(path.to_path_buf()));
        }
        Ok(canon)
    }

    /// Opens (or reuses) the published generation of a codebase, prepared for search. A
    /// generation is verified when this process first opens it (see `verify`); the verdict
    /// is kept with the open generation. A damaged generation is recorded as
    /// `requires_reindex` and answered with [`Error::Damaged`].
    pub fn generation(&self, root: &Path) -> Result<Arc<search::Index>> {
        self.open_current(root).map(|(_, index)| index)
    }

    /// [`Engine::generation`] with the directory of the generation opened.
    fn open_current(&self, root: &Path) -> Result<(PathBuf, Arc<search::Index>)> {
        let dir = self.home.codebase(root);
        let codebase = self.codebases.of(root);
        let mut attempt = 1;
        loop {
            let gen_dir = self.published_dir(root)?;
            // This codebase's lock only: verifying a large generation takes seconds, and
            // searches of other codebases go on meanwhile.
            let mut open = lock(&codebase.open);
            if let Some(g) = open.get(&gen_dir) {
                return Ok((gen_dir, Arc::clone(g)));
            }
            match verify::open(&gen_dir, self.vectors.as_ref()) {
                Ok(index) => {
                    let g = Arc::new(index);
                    open.clear();
                    open.insert(gen_dir.clone(), Arc::clone(&g));
                    return Ok((gen_dir, g));
                }
                // Replaced and removed between our read of CURRENT and the open (a reader
                // slower than the retirement grace period): open the newer one.
                Err(_)
                    if attempt < OPEN_ATTEMPTS && dir.current_dir().as_ref() != Some(&gen_dir) =>
                {
                    attempt += 1;
                }
                Err(e) => {
                    drop(open);
                    return Err(self.note_damage(root, &gen_dir, e));
                }
            }
        }
    }

    /// Opens the generation this process just wrote in `gen_dir` (whose chunk table is
    /// `table`) before it is published, without reading the table back or running the
    /// checksums, and keeps it beside the published one: searches go on using the published
    /// generation until `CURRENT` names the new one, and then find it open. Call
    /// [`Engine::settle_open`] once it is published (or not). On failure the first search
    /// after the publish opens it from disk as usual.
    fn adopt(&self, root: &Path, gen_dir: &Path, table: crate::store::table::ChunkTable) {
        let opened = verify::guarded(gen_dir, || {
            crate::store::Generation::open_with(gen_dir, table, self.vectors.as_ref())
                .map(search::Index::new)
        });
        if let Ok(index) = opened {
            let codebase = self.codebases.of(root);
            lock(&codebase.open).insert(gen_dir.to_path_buf(), Arc::new(index));
        }
    }

    /// Keeps only the open generation of `root` that is published now (dropping the others
    /// and the changes layered over them).
    fn settle_open(&self, root: &Path) {
        let current = self.home.codebase(root).current_dir();
        let codebase = self.codebases.of(root);
        lock(&codebase.open).retain(|k, _| Some(k) == current.as_ref());
        self.drop_layer(root);
    }

    /// Records a damaged generation as `requires_reindex` (when it is still the published
    /// one and no build is replacing it), and passes the error on.
    fn note_damage(&self, root: &Path, gen_dir: &Path, e: Error) -> Error {
        if let Error::Damaged { .. } = &e
            && self.home.codebase(root).current_dir().as_deref() == Some(gen_dir)
        {
            let message = e.to_string();
            let _ = self.store.modify(root, |c| {
                if c.state != IndexState::Indexing {
                    c.state = IndexState::RequiresReindex;
                    c.reason = Some(ReindexReason::IndexDamaged);
                    c.error_message = Some(message);
                }
            });
            self.forget_open(root);
        }
        e
    }

    /// Drops the open generations of a codebase (its index changed or went away).
    fn forget_open(&self, root: &Path) {
        let codebase = self.codebases.of(root);
        lock(&codebase.open).clear();
        lock(&codebase.graphs).clear();
        self.drop_layer(root);
    }

    /// Searches the published generation of a codebase, with the changes layered over it
    /// (see [`Engine::layer_changes`]). A panic of the index library while searching (a damaged file it reads lazily) is
    /// caught and answered with [`Error::Damaged`].
    pub fn search(&self, root: &Path, req: &SearchRequest) -> Result<SearchOutcome> {
        let (gen_dir, stored) = self.open_current(root)?;
        let index = self.layer_over(root, &gen_dir).unwrap_or(stored);
        let embedder = match index.generation().dense_dim() {
            Some(_) if self.tuning.dense => self.embedder()?,
            _ => None,
        };
        let ctx = SearchContext {
            embedder: embedder.as_deref(),
            tuning: self.tuning,
            rerank: RerankSetup {
                reranker: self.reranker.as_deref(),
                by_default: self.rerank_by_default,
                weight: -1.0,
            },
        };
        verify::guarded(&gen_dir, || search::search(&index, req, ctx))
            .map_err(|e| self.note_damage(root, &gen_dir, e))
    }

    /// The outline of a file: every definition in `text`, sorted by position, with ids
    /// derived from `file` — the root-relative, `/`-separated path search results use, so
    /// the ids match theirs. Empty when the file's language has no grammar or it defines
    /// nothing. Computed from the text given, not from the index, so it is never stale.
    pub fn outline(&self, file: &str, text: &str) -> Vec<Symbol> {
        self.outline_of(file, text).1
    }

    /// [`Engine::outline`] with the language the file was read as (its extension, refined
    /// by a `#!` line).
    pub fn outline_of(&self, file: &str, text: &str) -> (Language, Vec<Symbol>) {
        let language = Language::from_path(file)
            .unwrap_or(Language::Text)
            .refined(text);
        if !language.has_symbols() {
            return (language, Vec::new());
        }
        (language, outline_file(file, language, text))
    }

    /// The resolved call graph of a codebase's published generation, built from the
    /// generation's stored definitions and call sites on first use and kept for the life
    /// of the generation. `Ok(None)` when the generation predates the call graph (a
    /// reindex records it); a graph that a sync could only partly carry over answers as
    /// well, with [`GraphStatus::Partial`].
    pub fn call_graph(&self, root: &Path) -> Result<Option<(Arc<CallGraph>, GraphStatus)>> {
        let gen_dir = self.published_dir(root)?;
        let codebase = self.codebases.of(root);
        let mut graphs = lock(&codebase.graphs);
        // One codebase's generations replace each other: older entries are dead weight.
        graphs.retain(|k, _| k == &gen_dir);
        if let Some(g) = graphs.get(&gen_dir) {
            let status = g.status();
            return Ok(Some((Arc::clone(g), status)));
        }
        let Some(file) = GraphFile::load(&gen_dir)? else {
            return Ok(None);
        };
        let graph = Arc::new(CallGraph::build(file));
        graphs.insert(gen_dir, Arc::clone(&graph));
        let status = graph.status();
        Ok(Some((graph, status)))
    }

    /// The manifest of the published generation.
    pub fn manifest(&self, root: &Path) -> Option<Manifest> {
        self.home.codebase(root).current().map(|(_, m)| m)
    }

    /// Removes a codebase's index and state. Fails with `Busy` while a build runs; holds
    /// the writer lock throughout, so a build starting meanwhile waits for it and then builds
    /// on a fresh directory.
    pub fn clear(&self, root: &Path) -> Result<bool> {
        let dir = self.home.codebase(root);
        let _lock = match dir.try_writer_lock()? {
            ExistingLock::Held(lock) => lock,
            ExistingLock::Busy => return Err(Error::Busy(root.to_path_buf())),
            // Nothing on disk: only a state record may be left. A build may create the
            // directory any moment, so the lock is taken all the same (on a directory made
            // for it) to order this clear before or after that build, never inside it.
            ExistingLock::Gone => {
                if self.state(root)?.is_none() {
                    return Ok(false);
                }
                dir.lock_for_build(root)?
                    .ok_or_else(|| Error::Busy(root.to_path_buf()))?
            }
        };
        if dir.path().exists() {
            self.vectors.forget(dir.path())?;
        }
        self.forget_open(root);
        *lock(&self.codebases.of(root).own_check) = None;
        let tracked = self.store.remove(root)?;
        let existed = dir.path().exists();
        dir.remove()?;
        Ok(tracked || existed)
    }

    /// Takes the writer lock for a build or a sync of `root`. `Busy` when another build is
    /// recorded as running; a holder that has recorded the end of its work is waited for
    /// (briefly), so a call that follows a finished build never sees it as busy.
    pub(super) fn lock_for_work(&self, dir: &CodebaseDir, root: &Path) -> Result<WriterLock> {
        let deadline = Instant::now() + FINISHING_WAIT;
        loop {
            if let Some(lock) = dir.lock_for_build(root)? {
                return Ok(lock);
            }
            // Only a recorded, finished build is waited for: no record means a `clear` holds
            // the lock (or a build that has not recorded itself yet), busy either way.
            let finishing = self
                .store
                .load()?
                .codebases
                .get(root)
                .is_some_and(|c| c.state != IndexState::Indexing);
            if !finishing || Instant::now() >= deadline {
                return Err(Error::Busy(root.to_path_buf()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Removes what killed processes left behind, for every codebase whose writer lock is
    /// free: unfinished generations, generations retired past their grace period, and
    /// cleared directories whose deletion was interrupted. Run at process start.
    pub fn tidy(&self) {
        self.home.sweep_cleared();
        for (_, dir) in self.home.codebases() {
            if let Ok(ExistingLock::Held(_lock)) = dir.try_writer_lock() {
                dir.sweep(now_ms());
            }
        }
    }
}
