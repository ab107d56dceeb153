//! The index job: walk, chunk, embed and write a new generation beside the published one,
//! then publish it and record the outcome in the state file. The per-file work (read,
//! chunk, embed, hand to the writer) is [`FileIndexer`], which a sync shares. Embedding is
//! the job's too: the texts of a batch of files are cut into the embedder's batches, run
//! concurrently up to its limit, and retried while the embedder says it is rate-limited.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::Engine;
use super::status::published_state;
use crate::chunk::{ChunkOptions, ChunkedFile, chunk_file};
use crate::embed::{EmbedError, Embedder, chunk_text};
use crate::layout::{CodebaseDir, Manifest, ManifestFile, SkipReason, WriterLock};
use crate::policy::Policy;
use crate::state::{CodebaseState, IndexState, IndexStatus, Phase};
use crate::store::{FileRecord, GenerationWriter, Row};
use crate::util::{hash_parts, hash16, now_ms};
use crate::walk::{self, SourceFile, WalkOptions};
use crate::{Error, Result};

/// Indexing stops adding chunks past this many (the index is then `limit_reached`), unless
/// the engine is given another limit ([`super::Engine::with_chunk_limit`]).
pub const CHUNK_LIMIT: u64 = 450_000;

/// Files chunked per parallel batch: bounds memory on huge repositories.
pub(super) const BATCH_FILES: usize = 512;

/// Options of an index build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// Files that could not be read (every sync tries them again).
    pub unreadable_files: u64,
    pub limit_reached: bool,
    pub duration_ms: u64,
}

impl Engine {
    /// Starts a build: takes the writer lock and marks the codebase `indexing`. The returned
    /// job does the work when [`IndexJob::run`] is called (typically on a background thread).
    pub fn start_index(self: &Arc<Self>, root: &Path, opts: IndexOptions) -> Result<IndexJob> {
        if let Some(refusal) = self.refuse_root(root) {
            return Err(Error::RefusedRoot {
                root: root.to_path_buf(),
                refusal,
            });
        }
        let dir = self.home.codebase(root);
        let lock = self.lock_for_work(&dir, root)?;
        self.begin_index(root, dir, lock, opts)
    }

    /// Takes over a build that another process handed off (see [`IndexJob::handoff`]): once
    /// the writer lock is free, a build with the recorded options starts if the codebase is
    /// still recorded as `indexing`. `Ok(None)` when there is nothing to take over (the build
    /// finished or failed before it was stopped, or the codebase was cleared); `Busy` while
    /// the lock is still held. The `HANDOFF` marker goes either way.
    pub fn resume_index(self: &Arc<Self>, root: &Path) -> Result<Option<IndexJob>> {
        if let Some(refusal) = self.refuse_root(root) {
            return Err(Error::RefusedRoot {
                root: root.to_path_buf(),
                refusal,
            });
        }
        let dir = self.home.codebase(root);
        if !dir.path().is_dir() {
            return Ok(None);
        }
        let lock = match dir.try_writer_lock()? {
            crate::layout::ExistingLock::Held(lock) => lock,
            crate::layout::ExistingLock::Busy => return Err(Error::Busy(root.to_path_buf())),
            crate::layout::ExistingLock::Gone => return Ok(None),
        };
        let record = self.store.load()?.codebases.get(root).cloned();
        let job = match record {
            Some(st) if st.state == IndexState::Indexing => {
                let opts = IndexOptions {
                    custom_extensions: st.custom_extensions,
                    ignore_patterns: st.ignore_patterns,
                };
                Some(self.begin_index(root, dir.clone(), lock, opts))
            }
            _ => None,
        };
        let _ = std::fs::remove_file(dir.handoff_file());
        job.transpose()
    }

    /// Records the build `indexing` and returns its job (the writer lock is held).
    fn begin_index(
        self: &Arc<Self>,
        root: &Path,
        dir: CodebaseDir,
        lock: WriterLock,
        opts: IndexOptions,
    ) -> Result<IndexJob> {
        // Leftovers of killed builds and long-retired generations go before the new one.
        dir.sweep(now_ms());
        let previous = self.store.load()?.codebases.get(root).cloned();
        let mut st = CodebaseState::new(IndexState::Indexing);
        st.phase = Some(Phase::Scanning);
        // A damaged index (requires_reindex with the runtime fingerprint) is not searchable.
        st.searchable_during_indexing = dir.current().is_some()
            && previous.as_ref().is_some_and(|p| {
                p.state != IndexState::RequiresReindex
                    && p.fingerprint.as_ref() == Some(&self.fingerprint)
            });
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
            handed_off: Arc::new(AtomicBool::new(false)),
            discarded: Arc::new(AtomicBool::new(false)),
        })
    }
}

/// Stops a build so that another process can take it over (see [`Engine::resume_index`]).
#[derive(Debug, Clone)]
pub struct HandOff {
    marker: PathBuf,
    cancel: Arc<AtomicBool>,
    handed_off: Arc<AtomicBool>,
}

impl HandOff {
    /// Marks the build as changing hands and stops it at its next batch; it then leaves its
    /// `indexing` record as it is for the process taking over.
    pub fn hand_off(&self) -> Result<()> {
        std::fs::write(&self.marker, now_ms().to_string())
            .map_err(|e| Error::io("write", &self.marker, e))?;
        self.handed_off.store(true, Ordering::Relaxed);
        self.cancel.store(true, Ordering::Relaxed);
        Ok(())
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
    /// Set when the build was stopped for another process to take it over.
    handed_off: Arc<AtomicBool>,
    /// Set when the build was stopped because its index is being removed (a clear).
    discarded: Arc<AtomicBool>,
}

impl IndexJob {
    /// What stops this build for another process to take it over.
    pub fn handoff(&self) -> HandOff {
        HandOff {
            marker: self.dir.handoff_file(),
            cancel: Arc::clone(&self.cancel),
            handed_off: Arc::clone(&self.handed_off),
        }
    }

    /// A flag to set before stopping the build when its index is about to be removed (a
    /// clear): the stopped build then leaves its `indexing` record for the clear to remove,
    /// instead of recording a failure that a concurrent caller would read in between.
    pub fn discard_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.discarded)
    }

    /// A flag that stops the build at the next batch boundary.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }

    /// Makes `flag` the one that stops the build (a caller's flag that stops other work too).
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
        let began = now_ms();
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
                        // Before the state says `indexed`: a client that sees it and searches
                        // at once must find the check recorded, or its search syncs again.
                        self.engine.saw_whole_tree(&self.root, began);
                        self.engine.store.set(&self.root, st)?;
                        Ok(summary)
                    }
                    Err(e) => {
                        let e = crate::util::or_disk_full(e, self.dir.path());
                        let _ = std::fs::remove_dir_all(&gen_dir);
                        Err(e)
                    }
                }
            }
            Err(e) => Err(e),
        };
        let taken_over = matches!(outcome, Err(Error::Cancelled))
            && (self.handed_off.load(Ordering::Relaxed) || self.discarded.load(Ordering::Relaxed));
        if taken_over {
            // The process taking over records its own build; only the unfinished
            // generation goes. A build stopped for a clear leaves no record either: removed
            // while this build still holds the writer lock, so that no caller reads a
            // failure (or an `indexing` with nobody building) before the clear runs.
            if self.discarded.load(Ordering::Relaxed) {
                let _ = self.engine.store.remove(&self.root);
            }
            self.dir.sweep(now_ms());
        } else if let Err(e) = &outcome {
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
            // The unfinished generation goes; the published one stays.
            self.dir.sweep(now_ms());
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
        let walked = walk::walk(&self.root, &walk_options(&self.opts, &self.engine.policy))?;
        walked.ensure_complete(&self.root)?;
        progress.files_total = walked.files.len() as u64;
        progress.phase = Phase::Chunking;
        progress.percentage = 5.0;
        report(&progress, true);

        let embedder = self.engine.embedder()?;
        let gen_dir = self.dir.new_generation()?;
        let written = self.write(&gen_dir, &walked, embedder, started, &mut progress, report);
        match written {
            Ok((manifest, summary)) => Ok((gen_dir, manifest, summary)),
            Err(e) => {
                // Checked before the unfinished generation goes and frees its space.
                let e = crate::util::or_disk_full(e, self.dir.path());
                let _ = std::fs::remove_dir_all(&gen_dir);
                Err(e)
            }
        }
    }

    /// Indexes every walked file into a new generation in `gen_dir`.
    fn write(
        &self,
        gen_dir: &Path,
        walked: &walk::WalkReport,
        embedder: Option<Arc<dyn Embedder>>,
        started: Instant,
        progress: &mut Progress,
        report: &mut impl FnMut(&Progress, bool),
    ) -> Result<(Manifest, IndexSummary)> {
        let dim = embedder.as_ref().map(|e| e.dim());
        let mut writer = GenerationWriter::create_in(gen_dir, dim, self.engine.vectors.as_ref())?;
        let mut indexer = FileIndexer::new(
            embedder,
            self.engine.chunk_options,
            &self.engine.policy,
            0,
            self.engine.chunk_limit,
        );
        let mut file_list = Vec::with_capacity(walked.files.len());
        let total = walked.files.len() as u64;
        for batch in walked.files.chunks(BATCH_FILES) {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            file_list.extend(indexer.batch(batch, &mut writer, &|_, _| None)?);
            progress.files_done += batch.len() as u64;
            progress.chunks = indexer.chunks;
            progress.percentage = 5.0 + 85.0 * progress.files_done as f32 / total.max(1) as f32;
            report(progress, false);
        }
        progress.phase = Phase::Writing;
        progress.percentage = 90.0;
        report(progress, true);
        let finished = writer.finish_all()?;
        let stats = finished.stats;
        // Files the build could not read because the root went away would otherwise be
        // published as a complete index of part of the tree.
        if !self.root.is_dir() {
            return Err(Error::RootVanished(self.root.clone()));
        }
        progress.phase = Phase::Publishing;
        progress.percentage = 99.0;
        report(progress, true);
        let duration_ms = started.elapsed().as_millis() as u64;
        let manifest = Manifest {
            root: self.root.clone(),
            fingerprint: self.engine.fingerprint.clone(),
            created_at_ms: indexer.indexed_at,
            duration_ms,
            files: stats.files,
            chunks: stats.chunks,
            custom_extensions: self.opts.custom_extensions.clone(),
            ignore_patterns: self.opts.ignore_patterns.clone(),
            ignore_signature: ignore_signature(&self.root, &self.opts),
            policy: self.engine.policy.signature(),
            chunking: crate::chunk::chunking_signature(),
            oversized: walked.oversized.len() as u64,
            non_utf8_names: walked.non_utf8_names.len() as u64,
            non_utf8_sample: crate::state::non_utf8_sample(&walked.non_utf8_names),
            vectors: finished.vectors,
            file_list,
        };
        let summary = IndexSummary {
            files: stats.files,
            chunks: stats.chunks,
            skipped_files: walked.skipped.len() as u64 + indexer.skipped,
            unreadable_files: indexer.unreadable.len() as u64,
            limit_reached: indexer.limit_reached,
            duration_ms,
        };
        Ok((manifest, summary))
    }
}

/// The bytes of a file the walk found regular: a link that replaced it since (to a file
/// outside the codebase, say) is not followed, so only what the walk judged is indexed.
fn read_unlinked(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut options.open(path)?, &mut bytes)?;
    Ok(bytes)
}

/// What reading, chunking and embedding one file gave.
enum Prepared {
    /// The file is gone since the walk saw it: it is simply not there any more.
    Gone,
    /// The file exists but could not be read.
    Unreadable,
    /// Read but not indexed (binary, minified or secret content).
    Skipped { hash: String, reason: SkipReason },
    /// Chunked; `reused[i]` names the previous generation's chunk (by key) whose vector
    /// chunk `i` reuses, and
    /// `texts` holds what to embed for the others, in chunk order (when there is an
    /// embedder).
    Chunked {
        hash: String,
        /// The walk's language, or the one a script's shebang names (see
        /// [`Language::refined`](crate::Language::refined)).
        language: crate::Language,
        chunked: ChunkedFile,
        texts: Vec<String>,
        reused: Vec<Option<u64>>,
    },
}

/// The per-file work of a build or a sync: read, hash, chunk, embed (or reuse an earlier
/// vector), hand to the writer, and record the file for the manifest.
pub(super) struct FileIndexer {
    embedder: Option<Arc<dyn Embedder>>,
    opts: ChunkOptions,
    /// Files whose text holds a secret are skipped.
    policy: Policy,
    /// When these files' chunks were produced.
    pub indexed_at: u64,
    /// Chunks in the generation so far (a derived one starts with the chunks it kept).
    pub chunks: u64,
    /// The most chunks the generation may hold.
    pub limit: u64,
    pub limit_reached: bool,
    /// Files read but not indexed (binary, minified).
    pub skipped: u64,
    /// Paths of files that could not be read.
    pub unreadable: Vec<String>,
    /// Chunks whose vector was copied from the previous generation.
    pub reused_vectors: u64,
    /// Chunks embedded afresh.
    pub embedded_chunks: u64,
}

impl FileIndexer {
    pub(super) fn new(
        embedder: Option<Arc<dyn Embedder>>,
        opts: ChunkOptions,
        policy: &Policy,
        chunks: u64,
        limit: u64,
    ) -> FileIndexer {
        FileIndexer {
            embedder,
            opts,
            policy: policy.clone(),
            indexed_at: now_ms(),
            chunks,
            limit,
            limit_reached: false,
            skipped: 0,
            unreadable: Vec::new(),
            reused_vectors: 0,
            embedded_chunks: 0,
        }
    }

    /// Indexes one batch of files (in parallel) into `writer`; returns their manifest
    /// entries in batch order (none for files gone since the walk). `reuse(path, hash)`
    /// names a previous chunk (by key) whose vector embeds exactly that text, if any.
    pub(super) fn batch(
        &mut self,
        batch: &[SourceFile],
        writer: &mut GenerationWriter<'_>,
        reuse: &(dyn Fn(&str, &str) -> Option<u64> + Sync),
    ) -> Result<Vec<ManifestFile>> {
        let (embeds, opts, policy) = (self.embedder.is_some(), &self.opts, &self.policy);
        let done: Vec<_> = batch
            .par_iter()
            .map(|f| (f, prepare(f, embeds, opts, policy, reuse)))
            .collect();
        // Every text of the batch in one run of the embedder's batches: a file holds too few
        // chunks to fill one.
        let mut vectors = match &self.embedder {
            Some(embedder) => {
                let texts: Vec<&str> = done
                    .iter()
                    .flat_map(|(_, p)| match p {
                        Prepared::Chunked { texts, .. } => texts.as_slice(),
                        _ => &[],
                    })
                    .map(String::as_str)
                    .collect();
                embed_texts(embedder.as_ref(), &texts)?
            }
            None => Vec::new(),
        }
        .into_iter();
        let mut entries = Vec::with_capacity(done.len());
        for (f, prepared) in done {
            let mut entry = ManifestFile {
                path: f.rel_path.clone(),
                size: f.size,
                mtime_ms: f.mtime_ms,
                hash: String::new(),
                skipped: true,
                unreadable: false,
                reason: None,
                too_deep: false,
            };
            match prepared {
                Prepared::Gone => continue,
                Prepared::Unreadable => {
                    entry.unreadable = true;
                    self.unreadable.push(f.rel_path.clone());
                }
                Prepared::Skipped { hash, reason } => {
                    entry.hash = hash;
                    entry.reason = Some(reason);
                    self.skipped += 1;
                }
                Prepared::Chunked {
                    hash,
                    chunked,
                    texts,
                    ..
                } if self.limit_reached
                    || self.chunks + chunked.chunks.len() as u64 > self.limit =>
                {
                    // Its vectors go unused.
                    vectors.by_ref().take(texts.len()).for_each(drop);
                    entry.hash = hash;
                    self.limit_reached = true;
                }
                Prepared::Chunked {
                    hash,
                    language,
                    chunked,
                    texts,
                    reused,
                } => {
                    entry.hash = hash;
                    entry.skipped = false;
                    entry.too_deep = chunked.too_deep;
                    self.chunks += chunked.chunks.len() as u64;
                    let record = FileRecord {
                        path: f.rel_path.clone(),
                        language,
                        size: f.size,
                        mtime_ms: f.mtime_ms,
                        indexed_at_ms: self.indexed_at,
                    };
                    let fresh: Vec<Vec<f32>> = vectors.by_ref().take(texts.len()).collect();
                    let mut fresh = fresh.iter();
                    let rows: Vec<Row> = match &self.embedder {
                        Some(_) => reused
                            .iter()
                            .map(|r| match r {
                                Some(r) => Ok(Row::Previous(*r)),
                                None => fresh.next().map(|v| Row::Embedded(v)).ok_or_else(|| {
                                    Error::Embed(EmbedError::Unavailable(
                                        "fewer vectors than texts".into(),
                                    ))
                                }),
                            })
                            .collect::<Result<_>>()?,
                        None => Vec::new(),
                    };
                    let n_reused = rows
                        .iter()
                        .filter(|r| matches!(r, Row::Previous(_)))
                        .count() as u64;
                    self.reused_vectors += n_reused;
                    self.embedded_chunks += rows.len() as u64 - n_reused;
                    writer.add_file_rows(&record, &chunked, &rows)?;
                }
            }
            entries.push(entry);
        }
        Ok(entries)
    }
}

/// Reads and chunks one file, and writes the texts to embed for the chunks `reuse` has
/// no vector of (see [`Prepared`]).
fn prepare(
    f: &SourceFile,
    embeds: bool,
    opts: &ChunkOptions,
    policy: &Policy,
    reuse: &(dyn Fn(&str, &str) -> Option<u64> + Sync),
) -> Prepared {
    let bytes = match read_unlinked(&f.abs_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Prepared::Gone,
        Err(_) => return Prepared::Unreadable,
    };
    let hash = hash16(&bytes);
    let text = match walk::read_text(bytes) {
        Ok(text) if policy.admits(&text) => text,
        Ok(_) => {
            return Prepared::Skipped {
                hash,
                reason: SkipReason::Secret,
            };
        }
        Err(reason) => return Prepared::Skipped { hash, reason },
    };
    let language = f.language.refined(&text);
    let chunked = chunk_file(&f.rel_path, language, &text, opts);
    let reused: Vec<Option<u64>> = chunked
        .chunks
        .iter()
        .map(|c| reuse(&f.rel_path, &c.content_hash))
        .collect();
    let texts = match embeds {
        true => chunked
            .chunks
            .iter()
            .zip(&reused)
            .filter(|(_, r)| r.is_none())
            .map(|(chunk, _)| {
                let mut text = String::new();
                chunk_text(&f.rel_path, &chunk.content, &mut text);
                text
            })
            .collect(),
        false => Vec::new(),
    };
    Prepared::Chunked {
        hash,
        language,
        chunked,
        texts,
        reused,
    }
}

/// Attempts at a batch the embedder rate-limits before the job fails with that error.
const RATE_LIMIT_ATTEMPTS: usize = 4;

/// The first wait before retrying a rate-limited batch that came without a Retry-After
/// (doubling with each attempt), and the longest one a Retry-After is granted.
const RATE_LIMIT_WAIT: Duration = Duration::from_secs(1);
const RATE_LIMIT_MAX_WAIT: Duration = Duration::from_secs(60);

/// The vectors of one batch, once it ran.
type Embedded = Option<Result<Vec<Vec<f32>>>>;

/// The vectors of `texts`, in order: cut into the embedder's batches, run on up to its
/// [`Embedder::concurrency`] threads at once (the calling thread alone for one batch).
/// The first batch that fails fails them all.
fn embed_texts(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let batches: Vec<&[&str]> = texts.chunks(embedder.max_batch().max(1)).collect();
    let workers = embedder.concurrency().clamp(1, batches.len().max(1));
    let mut done: Vec<Embedded> = Vec::new();
    if workers == 1 {
        for b in &batches {
            let r = embed_batch(embedder, b);
            let failed = r.is_err();
            done.push(Some(r));
            if failed {
                break;
            }
        }
    } else {
        let slots: Vec<Mutex<Embedded>> = batches.iter().map(|_| Mutex::new(None)).collect();
        let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= batches.len() || failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let r = embed_batch(embedder, batches[i]);
                        if r.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                    }
                });
            }
        });
        done = slots
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
            .collect();
    }
    // Batches are claimed in order, so one skipped because another failed comes after the
    // failed one, whose error is returned first.
    let mut out = Vec::with_capacity(texts.len());
    for r in done.into_iter().flatten() {
        out.extend(r?);
    }
    Ok(out)
}

/// One batch, retried while the embedder rate-limits it; its vectors checked for number
/// and length.
fn embed_batch(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let mut attempt = 1;
    loop {
        match embedder.embed(texts) {
            Err(EmbedError::RateLimited { retry_after }) if attempt < RATE_LIMIT_ATTEMPTS => {
                let wait = retry_after.unwrap_or(RATE_LIMIT_WAIT * (1 << (attempt - 1)));
                attempt += 1;
                std::thread::sleep(wait.min(RATE_LIMIT_MAX_WAIT));
            }
            Err(e) => return Err(Error::Embed(e)),
            Ok(vectors) => {
                let dim = embedder.dim();
                if vectors.len() != texts.len() {
                    return Err(Error::Embed(EmbedError::Unavailable(format!(
                        "{} vectors for {} texts",
                        vectors.len(),
                        texts.len()
                    ))));
                }
                if let Some(v) = vectors.iter().find(|v| v.len() != dim) {
                    return Err(Error::Embed(EmbedError::Unavailable(format!(
                        "a vector of {} values from a model of dimension {dim}",
                        v.len()
                    ))));
                }
                return Ok(vectors);
            }
        }
    }
}

/// The walk a build (or a sync's comparison) makes with `opts`.
pub(super) fn walk_options(opts: &IndexOptions, policy: &Policy) -> WalkOptions {
    WalkOptions {
        custom_extensions: opts.custom_extensions.clone(),
        ignore_patterns: opts.ignore_patterns.clone(),
        max_file_bytes: 0,
        policy: policy.clone(),
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
