//! Keeping an index in line with its working tree: the sync and the reindex preflight
//! (would a rebuild do real work?).
//!
//! A sync stats every file and hashes only those whose size or mtime changed. When files
//! were added, modified or removed it *derives* a new generation from the published one:
//! only the changed files are read, chunked and embedded (a chunk whose embedded text is
//! unchanged keeps its vector), the rest is carried over (see `store`). It falls back to a
//! full build when a derive would not pay (deleted documents outweigh live ones, the chunk
//! limit), when the index was built under other policy or chunking rules, or when a derive
//! fails for any reason other than cancellation or an incomplete scan.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::Engine;
use super::build::{
    BATCH_FILES, FileIndexer, IndexOptions, Progress, ignore_signature, walk_options,
};
use super::status::published_state;
use crate::chunk::chunking_signature;
use crate::layout::{CodebaseDir, Manifest, ManifestFile};
use crate::policy::Policy;
use crate::state::{IndexState, IndexStatus, Phase};
use crate::store::GenerationWriter;
use crate::util::lock;
use crate::util::{hash16, now_ms};
use crate::walk::{self, PathFilter, SourceFile, TreeStamp};
use crate::{Error, Result};

/// A progress callback that can be handed to another thread.
pub type ProgressFn = Box<dyn Fn(&Progress) + Send + Sync>;

/// How a caller steers a sync: stop it at the next safe point, watch its progress.
///
/// The default neither cancels nor reports.
#[derive(Default)]
pub struct SyncControl {
    /// Set to stop the sync at its next safe point; it then fails with
    /// [`Error::Cancelled`] and the published generation stays in use.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called with the progress of the sync's work (a derive or a rebuild), per batch.
    pub on_progress: Option<ProgressFn>,
}

impl SyncControl {
    /// True once the caller asked the sync to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Reports `p` to the caller, if it watches.
    fn progress(&self, p: &Progress) {
        if let Some(f) = &self.on_progress {
            f(p);
        }
    }
}

/// What a sync found and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncSummary {
    pub added: u64,
    pub removed: u64,
    pub modified: u64,
    /// True when the index was rebuilt from scratch (a full build) because something changed.
    pub rebuilt: bool,
    /// True when a new generation was derived from the previous one (only changed files
    /// re-indexed).
    pub derived: bool,
    /// Chunks of changed files whose vector was copied because their text was unchanged.
    pub reused_vectors: u64,
    /// Chunks embedded afresh.
    pub embedded_chunks: u64,
    /// Files that could not be read; they are retried by every sync.
    pub unreadable_files: u64,
    /// True when the root's ignore rules (`.gitignore`, `.satoriignore`) had changed since
    /// the last build, so the sync reconciled the set of indexed files with them.
    pub ignore_rules_changed: bool,
    /// True when the sync learned that nothing changed from a `stat` of what the last idle
    /// sync saw, without walking the tree (see `walk::TreeStamp`). The stamp may have been
    /// left by another process.
    pub stat_only: bool,
    /// True when another process held the index (it was syncing), so the changes found
    /// were only layered over the published generation in this process (see
    /// [`Engine::layer_changes`]): nothing was written, and a later sync must still write
    /// them down.
    pub layered: bool,
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

/// How old the recorded time of the last check of a tree may get before a check that found
/// nothing to do writes it again (see `record_sync`).
const RECORD_CHECK_EVERY_MS: u64 = 10_000;

/// How long a sync that finds another process syncing the same index (holding its writer
/// lock) waits for that sync to publish before it gives up and leaves the published
/// generation as it is. Changes few enough to layer do not wait at all.
const OTHER_SYNC_WAIT: Duration = Duration::from_secs(30);

/// The file of a codebase's index directory that keeps the last stamp (see [`TreeStamp`]),
/// so that another process (every `satori-cli` call is one) can confirm by `stat` that the
/// tree is still as the published generation describes it, instead of walking it or
/// trusting the time of another process's last sync.
const STAMP_FILE: &str = "tree-stamp";

/// The first bytes of [`STAMP_FILE`], with the version of its layout.
const STAMP_MAGIC: &[u8] = b"satori tree stamp 1\n";

impl Engine {
    /// Decides whether a reindex would do real work (see [`Preflight`]).
    pub fn preflight(&self, root: &Path) -> Result<Preflight> {
        let Some(m) = self.manifest(root) else {
            return Ok(Preflight::ReindexRequired);
        };
        let opts = IndexOptions {
            custom_extensions: m.custom_extensions.clone(),
            ignore_patterns: m.ignore_patterns.clone(),
        };
        if m.policy != self.policy.signature()
            || m.chunking != chunking_signature()
            || ignore_signature(root, &opts) == m.ignore_signature
        {
            return Ok(Preflight::ReindexRequired);
        }
        let report = walk::walk(root, &walk_options(&opts, &self.policy))?;
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

    /// Brings the index in line with the working tree (see the module docs). A cancelled
    /// sync returns [`Error::Cancelled`] and leaves the published generation as it was; so
    /// does a scan that could not read the whole tree ([`Error::ScanIncomplete`],
    /// [`Error::RootVanished`]), since unread files must never count as removed.
    ///
    /// When another process is syncing the same index, the changes found are layered over
    /// the published generation if they are few enough ([`SyncSummary::layered`]);
    /// otherwise the sync waits (up to [`OTHER_SYNC_WAIT`]) for the other one to publish and
    /// compares the tree with what it published. A rebuild running elsewhere answers
    /// [`Error::Busy`] at once.
    pub fn sync(self: &Arc<Self>, root: &Path, ctl: &SyncControl) -> Result<SyncSummary> {
        let began = now_ms();
        let deadline = Instant::now() + OTHER_SYNC_WAIT;
        let outcome = loop {
            match self.sync_tracked(root, ctl) {
                Err(Error::Busy(_))
                    if Instant::now() < deadline && self.other_process_syncs(root) =>
                {
                    let dir = self.home.codebase(root);
                    while dir.writer_busy() && Instant::now() < deadline && !ctl.cancelled() {
                        std::thread::sleep(Duration::from_millis(25));
                    }
                    if ctl.cancelled() {
                        break Err(Error::Cancelled);
                    }
                }
                other => break other,
            }
        };
        if let Ok(s) = &outcome
            && !s.layered
        {
            self.saw_whole_tree(root, began);
        }
        // A `clear` that removed the index while the sync read it leaves io errors about
        // vanished files: what happened is that there is no index any more.
        match outcome {
            Err(Error::Io { .. } | Error::Corrupt { .. })
                if !self.home.codebase(root).path().exists()
                    || !self.store.load()?.codebases.contains_key(root) =>
            {
                Err(Error::IndexMissing(root.to_path_buf()))
            }
            other => other,
        }
    }

    fn sync_tracked(self: &Arc<Self>, root: &Path, ctl: &SyncControl) -> Result<SyncSummary> {
        let started = Instant::now();
        if let Some(refusal) = self.refuse_root(root) {
            return Err(Error::RefusedRoot {
                root: root.to_path_buf(),
                refusal,
            });
        }
        let st = self
            .state(root)?
            .ok_or_else(|| Error::IndexMissing(root.to_path_buf()))?;
        let dir = self.home.codebase(root);
        let opts = IndexOptions {
            custom_extensions: st.custom_extensions.clone(),
            ignore_patterns: st.ignore_patterns.clone(),
        };
        if let Some(unreadable) = self.unchanged_since_stamp(root, &dir, &opts) {
            let summary = SyncSummary {
                stat_only: true,
                ..SyncSummary::default()
            };
            return self.record_sync(root, summary, started, unreadable);
        }
        let gen_dir = self.published_dir(root)?;
        let mut m = Manifest::read(&gen_dir)?;
        let mut plan = Plan::of(root, &m, &opts, &self.policy)?;
        if !plan.has_work() {
            self.keep_stamp(root, &gen_dir, &m, &opts, plan.stamp.take());
        }
        let mut summary = SyncSummary::default();
        if plan.has_work() {
            if ctl.cancelled() {
                return Err(Error::Cancelled);
            }
            let lock = match self.lock_for_work(&dir, root) {
                Ok(lock) => lock,
                Err(Error::Busy(_)) if self.other_process_syncs(root) => {
                    return self.layer_plan(root, &plan, started);
                }
                Err(e) => return Err(e),
            };
            // Another process may have published between the comparison and the lock: the
            // plan must describe the generation it is applied to.
            if let Some((now_dir, now_m)) = dir.current()
                && now_dir != gen_dir
            {
                m = now_m;
                plan = Plan::of(root, &m, &opts, &self.policy)?;
            }
            if plan.has_work() {
                // An index built under other policy rules may hold files the rules now keep
                // out by their content (or lack ones they now let in), and one built under
                // other chunking rules holds chunks that unchanged files no longer give; a
                // derive, reading only changed files, would never notice: it is rebuilt in
                // full.
                let full = st.index_status == Some(IndexStatus::LimitReached) || plan.rules_changed;
                let derived = if full {
                    None
                } else {
                    match self.derive(root, &dir, &m, &opts, &plan, ctl) {
                        Ok(d) => d,
                        Err(
                            e @ (Error::Cancelled
                            | Error::ScanIncomplete { .. }
                            | Error::RootVanished(_)
                            | Error::DiskFull { .. }),
                        ) => return Err(e),
                        // Anything else (a damaged previous generation, an I/O error in
                        // the copy) is repaired by building from scratch.
                        Err(_) => None,
                    }
                };
                match derived {
                    Some(d) => {
                        summary.derived = true;
                        summary.reused_vectors = d.reused_vectors;
                        summary.embedded_chunks = d.embedded_chunks;
                    }
                    None => {
                        drop(lock);
                        let mut job = self.start_index(root, opts.clone())?;
                        // Still a sync: other processes keep searching and syncing as
                        // during a derive, rather than waiting for a requested rebuild.
                        let _ = self.store.modify(root, |c| c.syncing = true);
                        if let Some(c) = &ctl.cancel {
                            job.set_cancel_flag(Arc::clone(c));
                        }
                        job.run(|p| ctl.progress(p))?;
                        summary.rebuilt = true;
                    }
                }
            }
        }
        summary.added = plan.added;
        summary.removed = plan.removed;
        summary.modified = plan.modified;
        summary.ignore_rules_changed = plan.ignore_changed;
        let unreadable = if plan.has_work() {
            self.manifest(root)
                .map(|m| m.file_list.iter().filter(|f| f.unreadable).count() as u64)
                .unwrap_or(0)
        } else {
            m.file_list.iter().filter(|f| f.unreadable).count() as u64
        };
        self.record_sync(root, summary, started, unreadable)
    }

    /// Finishes a sync's summary and records it in the codebase's state.
    fn record_sync(
        &self,
        root: &Path,
        mut summary: SyncSummary,
        started: Instant,
        unreadable: u64,
    ) -> Result<SyncSummary> {
        summary.duration_ms = started.elapsed().as_millis() as u64;
        summary.unreadable_files = unreadable;
        let now = now_ms();
        let idle = summary.added + summary.removed + summary.modified == 0
            && !summary.derived
            && !summary.rebuilt;
        if idle {
            let settled = self.store.load()?.codebases.get(root).is_some_and(|c| {
                c.state == IndexState::SyncCompleted
                    && c.added + c.removed + c.modified == 0
                    && c.last_sync_ms
                        .is_some_and(|t| now.saturating_sub(t) < RECORD_CHECK_EVERY_MS)
            });
            if settled {
                // Only the time of the check is new: a durable write of the state file (an
                // fsync, ~10 ms on a slow disk) would cost more than the check itself. This
                // process remembers it (see `Engine::state`); another process (each
                // `satori-cli` call is one) sees the last written time, which is rewritten
                // once it is [`RECORD_CHECK_EVERY_MS`] old, so that their searches do not
                // all check the tree again.
                *lock(&self.codebases.of(root).checked) = Some(now);
                return Ok(summary);
            }
        }
        self.store.modify(root, |c| {
            c.state = IndexState::SyncCompleted;
            c.added = summary.added;
            c.removed = summary.removed;
            c.modified = summary.modified;
            c.last_sync_ms = Some(now);
        })?;
        Ok(summary)
    }

    /// `Some(unreadable files)` when the stamp the last idle sync of `root` left still holds
    /// for the generation published now under the same options: the tree is as that sync
    /// saw it and nothing needs doing, known from a `stat` of every directory and file
    /// instead of a walk.
    fn unchanged_since_stamp(
        &self,
        root: &Path,
        dir: &CodebaseDir,
        opts: &IndexOptions,
    ) -> Option<u64> {
        let current = dir.current_dir()?;
        let codebase = self.codebases.of(root);
        let kept = lock(&codebase.stamp)
            .clone()
            .filter(|s| s.gen_dir == current);
        // Another process may have left one for this generation.
        let stamped = match kept {
            Some(s) => s,
            None => {
                let bytes = std::fs::read(dir.path().join(STAMP_FILE)).ok()?;
                let s = Arc::new(self.decode_stamp(root, dir, &bytes)?);
                if s.gen_dir != current {
                    return None;
                }
                *lock(&codebase.stamp) = Some(Arc::clone(&s));
                s
            }
        };
        (stamped.opts == *opts && stamped.stamp.holds()).then_some(stamped.unreadable)
    }

    /// Whether the index of `root` is being written by another process's sync (a derive,
    /// or the rebuild a sync fell back to) rather than by a requested build.
    fn other_process_syncs(&self, root: &Path) -> bool {
        self.store.load().is_ok_and(|f| {
            f.codebases
                .get(root)
                .is_some_and(|c| c.state == IndexState::Indexing && c.syncing)
        })
    }

    /// Makes the changes `plan` found searchable in this process by layering them over the
    /// published generation, while another process's sync holds the index; `Busy` when
    /// they are more than a layer holds or only a walk can apply them.
    fn layer_plan(&self, root: &Path, plan: &Plan, started: Instant) -> Result<SyncSummary> {
        let busy = || Error::Busy(root.to_path_buf());
        if plan.ignore_changed || plan.rules_changed || plan.oversized_changed {
            return Err(busy());
        }
        let mut rels: Vec<&str> = plan.dropped.iter().map(String::as_str).collect();
        rels.extend(plan.changed.iter().map(|f| f.rel_path.as_str()));
        rels.sort_unstable();
        rels.dedup();
        if rels.len() > super::LAYER_MAX_FILES {
            return Err(busy());
        }
        // The set of changes is named by what the walk saw of them, so that an unchanged
        // set reuses its layer and any further edit makes a new one.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for rel in &rels {
            rel.hash(&mut hasher);
        }
        for f in &plan.changed {
            (f.size, f.mtime_ms).hash(&mut hasher);
        }
        let paths: Vec<std::path::PathBuf> = rels.iter().map(|r| root.join(r)).collect();
        let s = self
            .layer_changes(root, &paths, hasher.finish())
            .map_err(|_| busy())?;
        Ok(SyncSummary {
            added: s.added,
            removed: s.removed,
            modified: s.modified,
            layered: true,
            duration_ms: started.elapsed().as_millis() as u64,
            ..SyncSummary::default()
        })
    }

    /// Records that this process saw the whole tree of `root` at `at` (a sync or build that
    /// succeeded, started then).
    pub(super) fn saw_whole_tree(&self, root: &Path, at: u64) {
        *lock(&self.codebases.of(root).own_check) = Some(at);
    }

    /// When this process last saw the whole tree of `root` itself: the start of its latest
    /// sync or build that succeeded. The state file's `last_sync_ms` may come from another
    /// process, which cannot vouch for edits made since while no watcher of this one saw
    /// them.
    pub fn checked_here(&self, root: &Path) -> Option<u64> {
        *lock(&self.codebases.of(root).own_check)
    }

    /// The stamp in `bytes` (read from [`STAMP_FILE`]) when it was taken under this
    /// engine's policy and chunking rules.
    fn decode_stamp(&self, root: &Path, dir: &CodebaseDir, bytes: &[u8]) -> Option<Stamped> {
        let mut input = bytes.strip_prefix(STAMP_MAGIC)?;
        let text = |input: &mut &[u8]| -> Option<String> {
            String::from_utf8(walk::take_bytes(input)?.to_vec()).ok()
        };
        let list = |input: &mut &[u8]| -> Option<Vec<String>> {
            let n = walk::take_u64(input)?;
            (0..n).map(|_| text(input)).collect()
        };
        let gen_name = text(&mut input)?;
        if text(&mut input)? != self.policy.signature() || text(&mut input)? != chunking_signature()
        {
            return None;
        }
        let opts = IndexOptions {
            custom_extensions: list(&mut input)?,
            ignore_patterns: list(&mut input)?,
        };
        let stamp = TreeStamp::decode(root, &mut input)?;
        input.is_empty().then(|| Stamped {
            gen_dir: dir.path().join(gen_name),
            opts,
            stamp,
            unreadable: 0,
        })
    }

    /// Writes `stamped` to [`STAMP_FILE`] for other processes. Not durable: a stamp lost in
    /// a crash only costs the next sync a walk.
    fn store_stamp(&self, dir: &CodebaseDir, stamped: &Stamped) {
        let Some(gen_name) = stamped.gen_dir.file_name().and_then(|n| n.to_str()) else {
            return;
        };
        let mut out = STAMP_MAGIC.to_vec();
        walk::put_bytes(&mut out, gen_name.as_bytes());
        walk::put_bytes(&mut out, self.policy.signature().as_bytes());
        walk::put_bytes(&mut out, chunking_signature().as_bytes());
        for list in [
            &stamped.opts.custom_extensions,
            &stamped.opts.ignore_patterns,
        ] {
            walk::put_u64(&mut out, list.len() as u64);
            for item in list {
                walk::put_bytes(&mut out, item.as_bytes());
            }
        }
        if stamped.stamp.encode(&mut out).is_none() {
            return;
        }
        let path = dir.path().join(STAMP_FILE);
        let tmp = dir
            .path()
            .join(format!(".{STAMP_FILE}.tmp-{}", std::process::id()));
        if std::fs::write(&tmp, &out).is_err() || std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    /// Remembers what an idle sync of `root` saw against the generation in `gen_dir`
    /// (manifest `m`), so the next one can stat instead of walking. Not when files were
    /// unreadable: making a file readable changes no time a stat shows, and every sync must
    /// retry them.
    fn keep_stamp(
        &self,
        root: &Path,
        gen_dir: &Path,
        m: &Manifest,
        opts: &IndexOptions,
        stamp: Option<TreeStamp>,
    ) {
        let dir = self.home.codebase(root);
        match stamp {
            Some(stamp) if !m.file_list.iter().any(|f| f.unreadable) => {
                let stamped = Arc::new(Stamped {
                    gen_dir: gen_dir.to_path_buf(),
                    opts: opts.clone(),
                    stamp,
                    unreadable: 0,
                });
                self.store_stamp(&dir, &stamped);
                *lock(&self.codebases.of(root).stamp) = Some(stamped);
            }
            _ => {
                *lock(&self.codebases.of(root).stamp) = None;
                let _ = std::fs::remove_file(dir.path().join(STAMP_FILE));
            }
        }
    }

    /// The walker's rules for `root` as its last build used them, for telling which changed
    /// paths a sync would notice (see [`PathFilter`]).
    pub fn path_filter(&self, root: &Path) -> Result<PathFilter> {
        let st = self
            .state(root)?
            .ok_or_else(|| Error::IndexMissing(root.to_path_buf()))?;
        let opts = IndexOptions {
            custom_extensions: st.custom_extensions,
            ignore_patterns: st.ignore_patterns,
        };
        PathFilter::new(root, &walk_options(&opts, &self.policy))
    }

    /// Records that the index was just checked against the tree (nothing to do).
    pub fn touch_sync(&self, root: &Path) -> Result<()> {
        let now = now_ms();
        self.store.modify(root, |c| c.last_sync_ms = Some(now))?;
        Ok(())
    }

    /// Derives and publishes a new generation applying `plan` to the published one (whose
    /// manifest is `m`); call with the writer lock held. `Ok(None)` when a full build
    /// would do better.
    fn derive(
        self: &Arc<Self>,
        root: &Path,
        dir: &CodebaseDir,
        m: &Manifest,
        opts: &IndexOptions,
        plan: &Plan,
        ctl: &SyncControl,
    ) -> Result<Option<Derived>> {
        let index = self.generation(root)?;
        let prev = index.generation();
        let chunks = prev.chunks();
        let dropped_chunks = (0..chunks.len())
            .filter(|&i| {
                plan.dropped
                    .contains(&prev.files()[chunks.file(i) as usize].path)
            })
            .count() as u64;
        let live = prev.chunks().len() as u64 - dropped_chunks;
        // Deleted documents cost search time and disk until tantivy merges them away; past
        // this point a fresh build is the cheaper index.
        if prev.deleted_docs() + dropped_chunks > live.max(1) {
            return Ok(None);
        }
        let embedder = self.embedder()?;
        // While it works the codebase says `indexing` (and stays searchable), as during a
        // build: `status` shows a long sync's progress, and anyone who waits for the work
        // to end can see when it did. A derive that does not publish restores the record.
        let before = self.state(root)?;
        self.store.modify(root, |c| {
            c.state = IndexState::Indexing;
            c.phase = Some(Phase::Chunking);
            c.searchable_during_indexing = true;
            c.syncing = true;
            c.percentage = 0.0;
            c.files_done = 0;
            c.files_total = plan.changed.len() as u64;
        })?;
        // Reported only now, so that a caller who sees progress also sees `indexing`.
        ctl.progress(&Progress::starting());
        let restore = || {
            if let Some(b) = &before {
                let _ = self.store.set(root, b.clone());
            }
        };
        let gen_dir = match dir.new_generation() {
            Ok(d) => d,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        let result = self.derive_into(&gen_dir, root, m, opts, plan, prev, embedder, live, ctl);
        match result {
            Ok(Some((manifest, mut derived))) => {
                if let Some(table) = derived.table.take() {
                    self.adopt(root, &gen_dir, table);
                }
                let published = dir.publish(&gen_dir, &manifest);
                self.settle_open(root);
                if let Err(e) = published {
                    let _ = std::fs::remove_dir_all(&gen_dir);
                    restore();
                    return Err(e);
                }
                self.store.modify(root, |c| {
                    *c = published_state(&manifest, c);
                })?;
                Ok(Some(derived))
            }
            other => {
                // Checked before the unfinished generation goes and frees its space.
                let other = other.map_err(|e| crate::util::or_disk_full(e, dir.path()));
                let _ = std::fs::remove_dir_all(&gen_dir);
                restore();
                other.map(|_| None)
            }
        }
    }

    /// Writes the derived generation into `gen_dir`; `Ok(None)` when it reached the chunk
    /// limit (a full build decides which files fit).
    #[allow(clippy::too_many_arguments)]
    fn derive_into(
        &self,
        gen_dir: &Path,
        root: &Path,
        m: &Manifest,
        opts: &IndexOptions,
        plan: &Plan,
        prev: &crate::store::Generation,
        embedder: Option<Arc<dyn crate::embed::Embedder>>,
        live: u64,
        ctl: &SyncControl,
    ) -> Result<Option<(Manifest, Derived)>> {
        let dim = embedder.as_ref().map(|e| e.dim());
        let keep = |f: &crate::store::table::FileEntry| !plan.dropped.contains(&f.path);
        let mut writer =
            GenerationWriter::derive(prev, gen_dir, dim, &keep, self.vectors.as_ref())?;
        // Vectors of the modified files' chunks, by path and content hash: a chunk whose
        // text is unchanged embeds the same text (path + content) and keeps its vector,
        // named by its chunk key.
        let mut reusable: HashMap<&str, HashMap<&str, u64>> = HashMap::new();
        let chunks = prev.chunks();
        for ordinal in 0..chunks.len() {
            let path = prev.files()[chunks.file(ordinal) as usize].path.as_str();
            if plan.modified_paths.contains(path) {
                let c = chunks.get(ordinal);
                reusable
                    .entry(path)
                    .or_default()
                    .insert(c.content_hash.as_str(), chunks.key(ordinal));
            }
        }
        let reuse = |path: &str, hash: &str| reusable.get(path).and_then(|h| h.get(hash)).copied();
        let mut indexer = FileIndexer::new(
            embedder,
            self.chunk_options,
            &self.policy,
            live,
            self.chunk_limit,
        );
        let mut progress = Progress {
            phase: Phase::Chunking,
            files_done: 0,
            files_total: plan.changed.len() as u64,
            chunks: live,
            percentage: 0.0,
        };
        ctl.progress(&progress);
        let mut fresh: HashMap<String, ManifestFile> = HashMap::new();
        for batch in plan.changed.chunks(BATCH_FILES) {
            if ctl.cancelled() {
                return Err(Error::Cancelled);
            }
            for entry in indexer.batch(batch, &mut writer, &reuse)? {
                fresh.insert(entry.path.clone(), entry);
            }
            if indexer.limit_reached {
                return Ok(None);
            }
            progress.files_done += batch.len() as u64;
            progress.chunks = indexer.chunks;
            progress.percentage = 90.0 * progress.files_done as f32 / plan.changed.len() as f32;
            ctl.progress(&progress);
            let _ = self.store.modify(root, |c| {
                c.files_done = progress.files_done;
                c.percentage = progress.percentage;
            });
        }
        progress.phase = Phase::Writing;
        progress.percentage = 90.0;
        ctl.progress(&progress);
        let crate::store::Finished {
            stats,
            table,
            vectors,
        } = writer.finish_all()?;
        if !root.is_dir() {
            return Err(Error::RootVanished(root.to_path_buf()));
        }
        if ctl.cancelled() {
            return Err(Error::Cancelled);
        }
        debug_assert!(indexer.chunks <= self.chunk_limit);
        let file_list = plan
            .walked
            .iter()
            .filter_map(|f| match plan.kept.get(&f.rel_path) {
                Some(old) => Some(old.clone()),
                None => fresh.remove(&f.rel_path),
            })
            .collect();
        progress.phase = Phase::Publishing;
        progress.percentage = 99.0;
        ctl.progress(&progress);
        let manifest = Manifest {
            root: root.to_path_buf(),
            fingerprint: self.fingerprint.clone(),
            created_at_ms: indexer.indexed_at,
            duration_ms: m.duration_ms,
            files: stats.files,
            chunks: stats.chunks,
            custom_extensions: opts.custom_extensions.clone(),
            ignore_patterns: opts.ignore_patterns.clone(),
            ignore_signature: plan.ignore_signature.clone(),
            policy: m.policy.clone(),
            // A derive chunks only the changed files: the rest keep the rules they were
            // chunked under.
            chunking: m.chunking.clone(),
            oversized: plan.oversized,
            non_utf8_names: plan.non_utf8_names.len() as u64,
            non_utf8_sample: crate::state::non_utf8_sample(&plan.non_utf8_names),
            vectors,
            file_list,
        };
        let derived = Derived {
            reused_vectors: indexer.reused_vectors,
            embedded_chunks: indexer.embedded_chunks,
            table: Some(table),
        };
        Ok(Some((manifest, derived)))
    }
}

/// The stamp of a sync that found the tree as the generation in `gen_dir` describes it.
pub(super) struct Stamped {
    gen_dir: std::path::PathBuf,
    opts: IndexOptions,
    stamp: TreeStamp,
    unreadable: u64,
}

/// What a derive did.
struct Derived {
    reused_vectors: u64,
    embedded_chunks: u64,
    /// The chunk table written, until the published generation is opened with it.
    table: Option<crate::store::table::ChunkTable>,
}

/// A sync's comparison of the tree with a manifest.
struct Plan {
    /// The walk, sorted by path.
    walked: Vec<SourceFile>,
    /// Files to read and index: added, modified, and unreadable ones that became readable.
    changed: Vec<SourceFile>,
    /// Paths whose chunks leave the index: removed, modified and retried files.
    dropped: HashSet<String>,
    /// Modified paths (their unchanged chunks keep their vectors).
    modified_paths: HashSet<String>,
    /// Manifest entries of walked files that stay as they are (a touched file with the
    /// same content gets its new size and mtime).
    kept: HashMap<String, ManifestFile>,
    /// Files whose mtime changed but whose content did not: nothing to index, but the
    /// manifest must learn the new mtime or every sync would hash them again.
    touched: u64,
    added: u64,
    removed: u64,
    modified: u64,
    ignore_signature: String,
    ignore_changed: bool,
    /// The index was built under other policy rules (see [`Policy::signature`]) or other
    /// chunking rules (see [`crate::chunk::CHUNKING_VERSION`]).
    rules_changed: bool,
    /// What the walk saw, for the next sync to confirm by `stat` (see [`TreeStamp`]).
    stamp: Option<TreeStamp>,
    /// Files the walk passed over for their size, and whether the manifest says otherwise.
    oversized: u64,
    oversized_changed: bool,
    /// Names the walk passed over for not being UTF-8, and whether the manifest counts
    /// other ones.
    non_utf8_names: Vec<String>,
    non_utf8_changed: bool,
}

impl Plan {
    /// Walks `root` and compares it with `m`. Fails when the walk could not see the whole
    /// tree: an unread directory's files are unknown, not removed.
    fn of(root: &Path, m: &Manifest, opts: &IndexOptions, policy: &Policy) -> Result<Plan> {
        let report = walk::walk(root, &walk_options(opts, policy))?;
        report.ensure_complete(root)?;
        let ignore_signature = ignore_signature(root, opts);
        let mut old: HashMap<&str, &ManifestFile> =
            m.file_list.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut plan = Plan {
            walked: Vec::new(),
            changed: Vec::new(),
            dropped: HashSet::new(),
            modified_paths: HashSet::new(),
            kept: HashMap::new(),
            touched: 0,
            added: 0,
            removed: 0,
            modified: 0,
            ignore_changed: ignore_signature != m.ignore_signature,
            ignore_signature,
            rules_changed: m.policy != policy.signature() || m.chunking != chunking_signature(),
            stamp: None,
            oversized: 0,
            oversized_changed: false,
            non_utf8_names: Vec::new(),
            non_utf8_changed: false,
        };
        for f in &report.files {
            let Some(o) = old.remove(f.rel_path.as_str()) else {
                plan.added += 1;
                plan.changed.push(f.clone());
                continue;
            };
            if o.unreadable {
                // Retried on every sync; only a file that opens now is worth a new generation.
                if std::fs::File::open(&f.abs_path).is_ok() {
                    plan.dropped.insert(f.rel_path.clone());
                    plan.changed.push(f.clone());
                } else {
                    plan.kept.insert(f.rel_path.clone(), o.clone());
                }
                continue;
            }
            if o.size == f.size && o.mtime_ms == f.mtime_ms {
                plan.kept.insert(f.rel_path.clone(), o.clone());
                continue;
            }
            match std::fs::read(&f.abs_path) {
                Ok(bytes) if hash16(&bytes) == o.hash => {
                    plan.touched += 1;
                    let mut entry = o.clone();
                    entry.size = f.size;
                    entry.mtime_ms = f.mtime_ms;
                    plan.kept.insert(f.rel_path.clone(), entry);
                }
                // Changed, or unreadable now: the indexer reads it again and records which.
                _ => {
                    plan.modified += 1;
                    plan.dropped.insert(f.rel_path.clone());
                    plan.modified_paths.insert(f.rel_path.clone());
                    plan.changed.push(f.clone());
                }
            }
        }
        plan.removed = old.len() as u64;
        plan.dropped.extend(old.keys().map(|p| p.to_string()));
        plan.oversized = report.oversized.len() as u64;
        plan.oversized_changed = plan.oversized != m.oversized;
        plan.non_utf8_changed = report.non_utf8_names.len() as u64 != m.non_utf8_names
            || crate::state::non_utf8_sample(&report.non_utf8_names) != m.non_utf8_sample;
        plan.non_utf8_names = report.non_utf8_names.clone();
        if !plan.has_work() {
            plan.stamp = TreeStamp::of(root, &report);
        }
        plan.walked = report.files;
        Ok(plan)
    }

    /// True when the published generation no longer describes the tree.
    fn has_work(&self) -> bool {
        !self.changed.is_empty()
            || self.removed > 0
            || self.touched > 0
            || self.oversized_changed
            || self.non_utf8_changed
            || self.ignore_changed
            || self.rules_changed
    }
}
