//! The engine façade: index a codebase (in generations), keep its state, check its
//! fingerprint, sync it, search it, clear it. Callers (the MCP server, tests, benches) use
//! only this module and the types it returns.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use crate::chunk::{ChunkOptions, chunk_file};
use crate::embed::{Embeddings, Scratch, StaticModel, chunk_text};
use crate::layout::{CodebaseDir, Fingerprint, Home, Manifest, ManifestFile, WriterLock};
use crate::search::{self, SearchContext, SearchOutcome, SearchRequest, SearchTuning};
use crate::state::{CodebaseState, IndexState, StateStore};
use crate::store::{FileRecord, Generation, GenerationWriter};
use crate::util::{hash_parts, hash16, now_ms};
use crate::walk::{self, WalkOptions};
use crate::{Error, Result};

/// Version of the on-disk index layout. Bumping it makes older indexes `requires_reindex`.
pub const INDEX_SCHEMA_VERSION: &str = "hybrid_v1";

/// Indexing stops adding chunks past this many (the index is then `limit_reached`).
pub const CHUNK_LIMIT: u64 = 450_000;

/// Files chunked per parallel batch: bounds memory on huge repositories.
const BATCH_FILES: usize = 512;

/// Why a codebase must be reindexed before it can be used again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReindexReason {
    FingerprintMismatch,
    MissingFingerprint,
    LegacyUnverifiedFingerprint,
}

impl ReindexReason {
    pub fn id(self) -> &'static str {
        match self {
            ReindexReason::FingerprintMismatch => "fingerprint_mismatch",
            ReindexReason::MissingFingerprint => "missing_fingerprint",
            ReindexReason::LegacyUnverifiedFingerprint => "legacy_unverified_fingerprint",
        }
    }
}

/// Options of an index build.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    pub custom_extensions: Vec<String>,
    pub ignore_patterns: Vec<String>,
}

/// Progress of a build, reported through the callback of [`IndexJob::run`].
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// `scanning`, `chunking`, `writing`, `publishing`.
    pub phase: &'static str,
    pub files_done: u64,
    pub files_total: u64,
    pub chunks: u64,
    /// 0..=100.
    pub percentage: f32,
}

/// What a finished build produced.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSummary {
    pub files: u64,
    pub chunks: u64,
    pub skipped_files: u64,
    pub limit_reached: bool,
    pub duration_ms: u64,
}

/// What a sync found and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncSummary {
    pub added: u64,
    pub removed: u64,
    pub modified: u64,
    /// True when the index was rebuilt because something changed.
    pub rebuilt: bool,
    pub duration_ms: u64,
}

/// Outcome of the reindex preflight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preflight {
    /// Files changed (or no earlier index to compare with): a reindex does real work.
    ReindexRequired,
    /// Only ignore rules changed since the last index: a sync reconciles that for free.
    IgnoreOnly,
}

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

    /// The embedding model, loaded on first use; `None` when dense retrieval is off.
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

    /// Every tracked codebase with its state (stale `indexing` records repaired).
    pub fn states(&self) -> Result<BTreeMap<PathBuf, CodebaseState>> {
        let file = self.store.load()?;
        let mut out = BTreeMap::new();
        for (root, st) in file.codebases {
            let st = self.repair_if_stale(&root, st)?;
            out.insert(root, st);
        }
        Ok(out)
    }

    /// The state of one tracked codebase (`None` when untracked).
    pub fn state(&self, root: &Path) -> Result<Option<CodebaseState>> {
        let file = self.store.load()?;
        match file.codebases.get(root).cloned() {
            Some(st) => Ok(Some(self.repair_if_stale(root, st)?)),
            None => Ok(None),
        }
    }

    /// The tracked root that is `path` or its nearest ancestor, with its state.
    pub fn find_root(&self, path: &Path) -> Result<Option<(PathBuf, CodebaseState)>> {
        let states = self.states()?;
        let mut best: Option<(PathBuf, CodebaseState)> = None;
        for (root, st) in states {
            if path.starts_with(&root)
                && best
                    .as_ref()
                    .is_none_or(|(b, _)| root.as_os_str().len() > b.as_os_str().len())
            {
                best = Some((root, st));
            }
        }
        Ok(best)
    }

    /// A record that says `indexing` while nobody holds the writer lock belongs to a build
    /// that died (killed process, crash). Report what is really on disk instead.
    fn repair_if_stale(&self, root: &Path, st: CodebaseState) -> Result<CodebaseState> {
        if st.state != IndexState::Indexing {
            return Ok(st);
        }
        let dir = self.home.codebase(root);
        if dir.writer_busy() {
            return Ok(st);
        }
        let repaired = match dir.current() {
            Some((_, m)) => {
                let mut c = published_state(&m, &st);
                c.error_message = Some(
                    "the last rebuild was interrupted; the previous index is still in use".into(),
                );
                c
            }
            None => {
                let mut c = st.clone();
                c.state = IndexState::IndexFailed;
                c.error_message = Some(
                    "indexing was interrupted (the process building the index stopped); run create again"
                        .into(),
                );
                c.phase = None;
                c
            }
        };
        self.store.set(root, repaired.clone())?;
        Ok(repaired)
    }

    /// Compares the runtime fingerprint with the one the index was built with. On a mismatch
    /// the codebase moves to `requires_reindex` (persisted) and the reason is returned.
    pub fn check_fingerprint(&self, root: &Path) -> Result<Option<ReindexReason>> {
        let Some(st) = self.state(root)? else {
            return Ok(None);
        };
        if st.state == IndexState::RequiresReindex {
            return Ok(Some(match st.reason.as_deref() {
                Some("missing_fingerprint") => ReindexReason::MissingFingerprint,
                Some("legacy_unverified_fingerprint") => ReindexReason::LegacyUnverifiedFingerprint,
                _ => ReindexReason::FingerprintMismatch,
            }));
        }
        if !(st.state.is_searchable() || st.searchable_during_indexing) {
            return Ok(None);
        }
        let reason = match &st.fingerprint {
            None => Some(ReindexReason::MissingFingerprint),
            Some(fp) if *fp == self.fingerprint => None,
            Some(fp)
                if fp.schema_version != self.fingerprint.schema_version
                    && fp.embedding_model == self.fingerprint.embedding_model =>
            {
                Some(ReindexReason::LegacyUnverifiedFingerprint)
            }
            Some(_) => Some(ReindexReason::FingerprintMismatch),
        };
        if let Some(r) = reason
            && st.state != IndexState::Indexing
        {
            self.store.modify(root, |c| {
                c.state = IndexState::RequiresReindex;
                c.reason = Some(r.id().to_string());
            })?;
            self.forget_open(root);
        }
        Ok(reason)
    }

    /// Starts a build: takes the writer lock and marks the codebase `indexing`. The returned
    /// job does the work when [`IndexJob::run`] is called (typically on a background thread).
    pub fn start_index(self: &Arc<Self>, root: &Path, opts: IndexOptions) -> Result<IndexJob> {
        let dir = self.home.codebase(root);
        dir.ensure(root)?;
        let lock = dir
            .try_writer_lock()?
            .ok_or_else(|| Error::Busy(root.to_path_buf()))?;
        let previous = self.store.load()?.codebases.get(root).cloned();
        let mut st = CodebaseState::new(IndexState::Indexing);
        st.phase = Some("scanning".into());
        st.searchable_during_indexing = dir.current().is_some()
            && previous
                .as_ref()
                .and_then(|p| p.fingerprint.as_ref())
                .is_some_and(|f| *f == self.fingerprint);
        if let Some(p) = &previous {
            st.files = p.files;
            st.chunks = p.chunks;
            st.indexed_at_ms = p.indexed_at_ms;
            st.fingerprint = p.fingerprint.clone();
        }
        st.custom_extensions = opts.custom_extensions.clone();
        st.ignore_patterns = opts.ignore_patterns.clone();
        self.store.set(root, st)?;
        Ok(IndexJob {
            engine: Arc::clone(self),
            root: root.to_path_buf(),
            dir,
            opts,
            lock: Some(lock),
            cancel: Arc::new(AtomicBool::new(false)),
        })
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

    /// The manifest of the published generation.
    pub fn manifest(&self, root: &Path) -> Option<Manifest> {
        self.home.codebase(root).current().map(|(_, m)| m)
    }

    /// Decides whether a reindex would do real work (see [`Preflight`]).
    pub fn preflight(&self, root: &Path) -> Result<Preflight> {
        let Some(m) = self.manifest(root) else {
            return Ok(Preflight::ReindexRequired);
        };
        let opts = IndexOptions {
            custom_extensions: m.custom_extensions.clone(),
            ignore_patterns: m.ignore_patterns.clone(),
        };
        if ignore_signature(root, &opts) == m.ignore_signature {
            return Ok(Preflight::ReindexRequired);
        }
        let report = walk::walk(root, &walk_options(&opts))?;
        let old: HashMap<&str, &ManifestFile> =
            m.file_list.iter().map(|f| (f.path.as_str(), f)).collect();
        // Only ignore rules changed when no file present both before and now has changed.
        let any_modified = report.files.iter().any(|f| {
            old.get(f.rel_path.as_str())
                .is_some_and(|o| o.size != f.size || o.mtime_ms != f.mtime_ms)
        });
        Ok(if any_modified {
            Preflight::ReindexRequired
        } else {
            Preflight::IgnoreOnly
        })
    }

    /// Brings the index in line with the working tree. Change detection compares sizes and
    /// modification times (then content hashes); when anything changed the index is rebuilt
    /// as a new generation.
    pub fn sync(self: &Arc<Self>, root: &Path) -> Result<SyncSummary> {
        let started = Instant::now();
        let st = self
            .state(root)?
            .ok_or_else(|| Error::IndexMissing(root.to_path_buf()))?;
        let m = self
            .manifest(root)
            .ok_or_else(|| Error::IndexMissing(root.to_path_buf()))?;
        let opts = IndexOptions {
            custom_extensions: st.custom_extensions.clone(),
            ignore_patterns: st.ignore_patterns.clone(),
        };
        let report = walk::walk(root, &walk_options(&opts))?;
        let mut summary = diff_files(&m.file_list, &report.files);
        let ignore_changed = ignore_signature(root, &opts) != m.ignore_signature;
        if summary.added + summary.removed + summary.modified > 0 || ignore_changed {
            let job = self.start_index(root, opts)?;
            job.run(|_| {})?;
            summary.rebuilt = true;
        }
        summary.duration_ms = started.elapsed().as_millis() as u64;
        let now = now_ms();
        self.store.modify(root, |c| {
            c.state = IndexState::SyncCompleted;
            c.added = summary.added;
            c.removed = summary.removed;
            c.modified = summary.modified;
            c.last_sync_ms = Some(now);
        })?;
        Ok(summary)
    }

    /// Records that the index was just checked against the tree (nothing to do).
    pub fn touch_sync(&self, root: &Path) -> Result<()> {
        let now = now_ms();
        self.store.modify(root, |c| c.last_sync_ms = Some(now))?;
        Ok(())
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

/// A build in progress; holds the codebase's writer lock until dropped.
pub struct IndexJob {
    engine: Arc<Engine>,
    root: PathBuf,
    dir: CodebaseDir,
    opts: IndexOptions,
    lock: Option<WriterLock>,
    cancel: Arc<AtomicBool>,
}

impl IndexJob {
    /// A flag that stops the build at the next batch boundary.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Builds and publishes a new generation, updating the state file as it goes. On failure
    /// the state becomes `indexfailed` (or the previous index stays in use) and the
    /// unfinished generation is removed.
    pub fn run(mut self, mut on_progress: impl FnMut(&Progress)) -> Result<IndexSummary> {
        let started = Instant::now();
        let mut last_persist = Instant::now();
        let mut last_pct = 0.0f32;
        let engine = Arc::clone(&self.engine);
        let root = self.root.clone();
        let mut report = |p: &Progress, force: bool| {
            last_pct = p.percentage;
            on_progress(p);
            if force || last_persist.elapsed().as_millis() >= 300 {
                last_persist = Instant::now();
                let _ = engine.store.modify(&root, |c| {
                    c.percentage = p.percentage;
                    c.phase = Some(p.phase.to_string());
                    c.files_done = p.files_done;
                    c.files_total = p.files_total;
                });
            }
        };
        let result = self.build(started, &mut report);
        let lock = self.lock.take();
        let outcome = match result {
            Ok((gen_dir, manifest, summary)) => {
                self.engine.forget_open(&self.root);
                let published = self.dir.publish(&gen_dir, &manifest);
                match published {
                    Ok(()) => {
                        let prev = self.engine.store.load()?.codebases.get(&self.root).cloned();
                        let mut st = published_state(
                            &manifest,
                            prev.as_ref()
                                .unwrap_or(&CodebaseState::new(IndexState::Indexed)),
                        );
                        st.index_status = Some(
                            if summary.limit_reached {
                                "limit_reached"
                            } else {
                                "completed"
                            }
                            .into(),
                        );
                        self.engine.store.set(&self.root, st)?;
                        Ok(summary)
                    }
                    Err(e) => {
                        let _ = std::fs::remove_dir_all(&gen_dir);
                        Err(e)
                    }
                }
            }
            Err(e) => Err(e),
        };
        if let Err(e) = &outcome {
            let message = e.to_string();
            let fallback = self.dir.current();
            let _ = self.engine.store.modify(&self.root, |c| match &fallback {
                Some((_, m)) => {
                    *c = published_state(m, c);
                    c.error_message = Some(format!("the last rebuild failed: {message}"));
                }
                None => {
                    c.state = IndexState::IndexFailed;
                    c.error_message = Some(message.clone());
                    c.percentage = last_pct;
                }
            });
            let keep =
                fallback.and_then(|(d, _)| d.file_name().map(|n| n.to_string_lossy().into_owned()));
            self.dir.remove_generations_except(keep.as_deref());
        }
        drop(lock);
        outcome
    }

    fn build(
        &self,
        started: Instant,
        report: &mut impl FnMut(&Progress, bool),
    ) -> Result<(PathBuf, Manifest, IndexSummary)> {
        let mut progress = Progress {
            phase: "scanning",
            files_done: 0,
            files_total: 0,
            chunks: 0,
            percentage: 0.0,
        };
        report(&progress, true);
        let walked = walk::walk(&self.root, &walk_options(&self.opts))?;
        let total = walked.files.len() as u64;
        progress.files_total = total;
        progress.phase = "chunking";
        progress.percentage = 5.0;
        report(&progress, true);

        let model = self.engine.model()?;
        let gen_dir = self.dir.new_generation()?;
        let mut writer = GenerationWriter::create(&gen_dir, model.as_ref().map(|m| m.dim()))?;
        let mut file_list = Vec::with_capacity(walked.files.len());
        let mut skipped = walked.skipped.len() as u64;
        let mut chunks = 0u64;
        let mut limit_reached = false;
        let opts = self.engine.chunk_options;
        let indexed_at = now_ms();
        for batch in walked.files.chunks(BATCH_FILES) {
            if self.cancel.load(Ordering::Relaxed) {
                let _ = std::fs::remove_dir_all(&gen_dir);
                return Err(Error::Cancelled);
            }
            let done: Vec<_> = batch
                .par_iter()
                .map_init(EmbedScratch::default, |scratch, f| {
                    let Ok(bytes) = std::fs::read(&f.abs_path) else {
                        return (f, String::new(), None);
                    };
                    let hash = hash16(&bytes);
                    let indexed = walk::decode_text(bytes).map(|text| {
                        let chunked = chunk_file(&f.rel_path, f.language, &text, &opts);
                        let vectors = match &model {
                            Some(m) => scratch.embed_chunks(m, &f.rel_path, &chunked),
                            None => Vec::new(),
                        };
                        (chunked, vectors)
                    });
                    (f, hash, indexed)
                })
                .collect();
            for (f, hash, indexed) in done {
                progress.files_done += 1;
                let mut entry = ManifestFile {
                    path: f.rel_path.clone(),
                    size: f.size,
                    mtime_ms: f.mtime_ms,
                    hash,
                    skipped: true,
                };
                match indexed {
                    None => skipped += 1,
                    Some((chunked, _)) if chunks + chunked.chunks.len() as u64 > CHUNK_LIMIT => {
                        limit_reached = true;
                    }
                    Some((chunked, vectors)) => {
                        chunks += chunked.chunks.len() as u64;
                        let record = FileRecord {
                            path: f.rel_path.clone(),
                            language: f.language,
                            size: f.size,
                            mtime_ms: f.mtime_ms,
                            indexed_at_ms: indexed_at,
                        };
                        writer.add_file(&record, &chunked, &vectors)?;
                        entry.skipped = false;
                    }
                }
                file_list.push(entry);
            }
            progress.chunks = chunks;
            progress.percentage = 5.0 + 85.0 * progress.files_done as f32 / total.max(1) as f32;
            report(&progress, false);
        }
        progress.phase = "writing";
        progress.percentage = 90.0;
        report(&progress, true);
        let stats = writer.finish()?;
        progress.phase = "publishing";
        progress.percentage = 99.0;
        report(&progress, true);
        let duration_ms = started.elapsed().as_millis() as u64;
        let manifest = Manifest {
            root: self.root.clone(),
            fingerprint: self.engine.fingerprint.clone(),
            created_at_ms: indexed_at,
            duration_ms,
            files: stats.files,
            chunks: stats.chunks,
            custom_extensions: self.opts.custom_extensions.clone(),
            ignore_patterns: self.opts.ignore_patterns.clone(),
            ignore_signature: ignore_signature(&self.root, &self.opts),
            file_list,
        };
        let summary = IndexSummary {
            files: stats.files,
            chunks: stats.chunks,
            skipped_files: skipped,
            limit_reached,
            duration_ms,
        };
        Ok((gen_dir, manifest, summary))
    }
}

/// Per-thread buffers for embedding chunks during a build.
#[derive(Default)]
struct EmbedScratch {
    text: String,
    model: Scratch,
}

impl EmbedScratch {
    /// The vectors of a file's chunks, concatenated in chunk order.
    fn embed_chunks(
        &mut self,
        model: &StaticModel,
        path: &str,
        chunked: &crate::chunk::ChunkedFile,
    ) -> Vec<f32> {
        let dim = model.dim();
        let mut out = vec![0.0f32; chunked.chunks.len() * dim];
        for (chunk, v) in chunked.chunks.iter().zip(out.chunks_exact_mut(dim)) {
            chunk_text(path, &chunk.content, &mut self.text);
            model.embed_into(&self.text, &mut self.model, v);
        }
        out
    }
}

/// The state record of a published generation, keeping the options and sync info of `prev`.
fn published_state(m: &Manifest, prev: &CodebaseState) -> CodebaseState {
    let mut c = CodebaseState::new(IndexState::Indexed);
    c.files = m.files;
    c.chunks = m.chunks;
    c.index_status = Some("completed".into());
    c.indexed_at_ms = Some(m.created_at_ms);
    c.duration_ms = Some(m.duration_ms);
    c.fingerprint = Some(m.fingerprint.clone());
    c.custom_extensions = m.custom_extensions.clone();
    c.ignore_patterns = m.ignore_patterns.clone();
    c.percentage = 100.0;
    c.last_sync_ms = prev.last_sync_ms.or(Some(m.created_at_ms));
    c
}

fn walk_options(opts: &IndexOptions) -> WalkOptions {
    WalkOptions {
        custom_extensions: opts.custom_extensions.clone(),
        ignore_patterns: opts.ignore_patterns.clone(),
        max_file_bytes: 0,
    }
}

/// A hash of the ignore rules in force at the root.
fn ignore_signature(root: &Path, opts: &IndexOptions) -> String {
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap_or_default();
    hash_parts(
        &[
            &read(".gitignore"),
            &read(".satoriignore"),
            &opts.ignore_patterns.join("\n"),
            &opts.custom_extensions.join("\n"),
        ],
        16,
    )
}

/// Compares a manifest's file list with a fresh walk. Files whose size and mtime match are
/// unchanged; others are hashed to tell a real modification from a touch.
fn diff_files(old: &[ManifestFile], now: &[walk::SourceFile]) -> SyncSummary {
    let old_map: HashMap<&str, &ManifestFile> = old.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut s = SyncSummary::default();
    let mut seen = 0u64;
    for f in now {
        match old_map.get(f.rel_path.as_str()) {
            None => s.added += 1,
            Some(o) => {
                seen += 1;
                if o.size != f.size || o.mtime_ms != f.mtime_ms {
                    let same = std::fs::read(&f.abs_path)
                        .map(|b| hash16(&b) == o.hash)
                        .unwrap_or(false);
                    if !same {
                        s.modified += 1;
                    }
                }
            }
        }
    }
    s.removed = old.len() as u64 - seen;
    s
}
