//! The index job: walk, chunk, embed and write a new generation beside the published one,
//! then publish it and record the outcome in the state file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use super::Engine;
use super::status::published_state;
use crate::chunk::{ChunkedFile, chunk_file};
use crate::embed::{Scratch, StaticModel, chunk_text};
use crate::layout::{CodebaseDir, Manifest, ManifestFile, WriterLock};
use crate::state::{CodebaseState, IndexState, IndexStatus, Phase};
use crate::store::{FileRecord, GenerationWriter};
use crate::util::{hash_parts, hash16, now_ms};
use crate::walk::{self, WalkOptions};
use crate::{Error, Result};

/// Indexing stops adding chunks past this many (the index is then `limit_reached`).
const CHUNK_LIMIT: u64 = 450_000;

/// Files chunked per parallel batch: bounds memory on huge repositories.
const BATCH_FILES: usize = 512;

/// Options of an index build.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    pub custom_extensions: Vec<String>,
    pub ignore_patterns: Vec<String>,
}

/// Progress of a build, reported through the callback of [`IndexJob::run`].
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub phase: Phase,
    pub files_done: u64,
    pub files_total: u64,
    pub chunks: u64,
    /// 0..=100.
    pub percentage: f32,
}

impl Progress {
    /// A build that has not started scanning yet.
    pub fn starting() -> Progress {
        Progress {
            phase: Phase::Scanning,
            files_done: 0,
            files_total: 0,
            chunks: 0,
            percentage: 0.0,
        }
    }
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

impl Engine {
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
        st.phase = Some(Phase::Scanning);
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

    /// Makes the build stop when `flag` is set instead of its own flag, so a caller that
    /// owns a cancel flag (a sync steered by a request) can reach the build.
    pub fn set_cancel_flag(&mut self, flag: Arc<AtomicBool>) {
        self.cancel = flag;
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
                    c.phase = Some(p.phase);
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
                        st.index_status = Some(if summary.limit_reached {
                            IndexStatus::LimitReached
                        } else {
                            IndexStatus::Completed
                        });
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
        let mut progress = Progress::starting();
        report(&progress, true);
        let walked = walk::walk(&self.root, &walk_options(&self.opts))?;
        let total = walked.files.len() as u64;
        progress.files_total = total;
        progress.phase = Phase::Chunking;
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
        progress.phase = Phase::Writing;
        progress.percentage = 90.0;
        report(&progress, true);
        let stats = writer.finish()?;
        progress.phase = Phase::Publishing;
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
    fn embed_chunks(&mut self, model: &StaticModel, path: &str, chunked: &ChunkedFile) -> Vec<f32> {
        let dim = model.dim();
        let mut out = vec![0.0f32; chunked.chunks.len() * dim];
        for (chunk, v) in chunked.chunks.iter().zip(out.chunks_exact_mut(dim)) {
            chunk_text(path, &chunk.content, &mut self.text);
            model.embed_into(&self.text, &mut self.model, v);
        }
        out
    }
}

/// The walk a build (or a sync's comparison) makes with `opts`.
pub(super) fn walk_options(opts: &IndexOptions) -> WalkOptions {
    WalkOptions {
        custom_extensions: opts.custom_extensions.clone(),
        ignore_patterns: opts.ignore_patterns.clone(),
        max_file_bytes: 0,
    }
}

/// A hash of the ignore rules in force at the root.
pub(super) fn ignore_signature(root: &Path, opts: &IndexOptions) -> String {
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
