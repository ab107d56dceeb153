//! The engine façade: index a codebase (in generations), keep its state, gate searches and
//! reads, sync it, search it, outline a file, clear it. Callers (the MCP server, tests,
//! benches) use the engine and the types re-exported at the crate root.
//!
//! Split by job: `build` (the index job), `sync` (sync and reindex preflight), `status`
//! (state repair and fingerprint checks), `target` (the gate of searches and reads); this
//! module holds the [`Engine`] itself and its small queries.

mod build;
mod status;
mod sync;
mod target;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use self::build::{IndexJob, IndexOptions, IndexSummary, Progress};
pub use self::sync::{Preflight, ProgressFn, SyncControl, SyncSummary};
pub use self::target::{Purpose, Refusal, Target};

use crate::chunk::{ChunkOptions, Symbol, chunk_file};
use crate::embed::{Embeddings, StaticModel};
use crate::lang::Language;
use crate::layout::{Fingerprint, Home, Manifest};
use crate::search::{self, SearchContext, SearchOutcome, SearchRequest, SearchTuning};
use crate::state::StateStore;
use crate::store::Generation;
use crate::{Error, Result};

/// The engine, shared by every request of a process.
pub struct Engine {
    home: Home,
    store: StateStore,
    fingerprint: Fingerprint,
    embeddings: Arc<Embeddings>,
    tuning: SearchTuning,
    open: Mutex<HashMap<PathBuf, Arc<search::Index>>>,
    chunk_options: ChunkOptions,
}

impl Engine {
    /// An engine over `home` embedding with `embeddings` (whose identity becomes the runtime
    /// fingerprint) and ranking with `tuning`.
    pub fn new(home: Home, embeddings: Arc<Embeddings>, tuning: SearchTuning) -> Engine {
        Engine {
            store: StateStore::new(home.clone()),
            fingerprint: Fingerprint::of(embeddings.info()),
            home,
            embeddings,
            tuning,
            open: Mutex::new(HashMap::new()),
            chunk_options: ChunkOptions::default(),
        }
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
                let _ = engine.model();
            });
    }

    /// The embedding model, loaded on first use; `None` when dense retrieval is off.
    fn model(&self) -> Result<Option<Arc<StaticModel>>> {
        if !self.embeddings.enabled() {
            return Ok(None);
        }
        self.embeddings
            .model(&self.home.models_dir())
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

    /// Opens (or reuses) the published generation of a codebase, prepared for search.
    pub fn generation(&self, root: &Path) -> Result<Arc<search::Index>> {
        let dir = self.home.codebase(root);
        let gen_dir = dir
            .current_dir()
            .ok_or_else(|| Error::IndexMissing(root.to_path_buf()))?;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(g) = open.get(&gen_dir) {
            return Ok(Arc::clone(g));
        }
        let g = Arc::new(search::Index::new(Generation::open(&gen_dir)?));
        open.retain(|k, _| !k.starts_with(dir.path()));
        open.insert(gen_dir, Arc::clone(&g));
        Ok(g)
    }

    /// Drops the open generations of a codebase (its index changed or went away).
    fn forget_open(&self, root: &Path) {
        let dir = self.home.codebase(root);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|k, _| !k.starts_with(dir.path()));
    }

    /// Searches the published generation of a codebase.
    pub fn search(&self, root: &Path, req: &SearchRequest) -> Result<SearchOutcome> {
        let index = self.generation(root)?;
        let model = match index.generation().dense_dim() {
            Some(_) if self.tuning.dense => self.model()?,
            _ => None,
        };
        search::search(
            &index,
            req,
            SearchContext {
                model: model.as_deref(),
                tuning: self.tuning,
            },
        )
    }

    /// The outline of a file: every definition in `text`, sorted by position, with ids
    /// derived from `file` — the root-relative, `/`-separated path search results use, so
    /// the ids match theirs. Empty when the file's language has no grammar or it defines
    /// nothing. Computed from the text given, not from the index, so it is never stale.
    pub fn outline(&self, file: &str, text: &str) -> Vec<Symbol> {
        match Language::from_path(file) {
            Some(language) => chunk_file(file, language, text, &self.chunk_options).symbols,
            None => Vec::new(),
        }
    }

    /// The manifest of the published generation.
    pub fn manifest(&self, root: &Path) -> Option<Manifest> {
        self.home.codebase(root).current().map(|(_, m)| m)
    }

    /// Removes a codebase's index and state. Fails with `Busy` while a build runs.
    pub fn clear(&self, root: &Path) -> Result<bool> {
        let dir = self.home.codebase(root);
        let _lock = if dir.path().exists() {
            Some(
                dir.try_writer_lock()?
                    .ok_or_else(|| Error::Busy(root.to_path_buf()))?,
            )
        } else {
            None
        };
        self.forget_open(root);
        let tracked = self.store.remove(root)?;
        let existed = dir.path().exists();
        dir.remove()?;
        Ok(tracked || existed)
    }
}
