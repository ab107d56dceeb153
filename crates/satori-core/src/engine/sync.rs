//! Keeping an index in line with its working tree: the sync (compare, rebuild when anything
//! changed) and the reindex preflight (would a rebuild do real work?).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::Engine;
use super::build::{IndexOptions, Progress, ignore_signature, walk_options};
use crate::layout::ManifestFile;
use crate::state::IndexState;
use crate::util::{hash16, now_ms};
use crate::walk::{self, PathFilter, SourceFile};
use crate::{Error, Result};

/// What a sync found and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncSummary {
    pub added: u64,
    pub removed: u64,
    pub modified: u64,
    /// True when the index was rebuilt because something changed.
    pub rebuilt: bool,
    /// True when the root's ignore rules (`.gitignore`, `.satoriignore`) had changed since
    /// the last build, so the sync reconciled the set of indexed files with them.
    pub ignore_rules_changed: bool,
    pub duration_ms: u64,
}

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
    /// Called with the progress of the rebuild, when the sync rebuilds.
    pub on_progress: Option<ProgressFn>,
}

impl SyncControl {
    /// True once the caller asked the sync to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }
}

/// Outcome of the reindex preflight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preflight {
    /// Files changed (or no earlier index to compare with): a reindex does real work.
    ReindexRequired,
    /// Only ignore rules changed since the last index: a sync reconciles that for free.
    IgnoreOnly,
}

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
    /// as a new generation. `ctl` can cancel the sync (the published generation then stays
    /// as it was and the result is [`Error::Cancelled`]) and watch the rebuild's progress.
    pub fn sync(self: &Arc<Self>, root: &Path, ctl: &SyncControl) -> Result<SyncSummary> {
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
        summary.ignore_rules_changed = ignore_changed;
        if ctl.cancelled() {
            return Err(Error::Cancelled);
        }
        if summary.added + summary.removed + summary.modified > 0 || ignore_changed {
            let mut job = self.start_index(root, opts)?;
            if let Some(cancel) = &ctl.cancel {
                job.set_cancel_flag(Arc::clone(cancel));
            }
            job.run(|p| {
                if let Some(f) = &ctl.on_progress {
                    f(p);
                }
            })?;
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
        PathFilter::new(root, &walk_options(&opts))
    }

    /// Records that the index was just checked against the tree (nothing to do).
    pub fn touch_sync(&self, root: &Path) -> Result<()> {
        let now = now_ms();
        self.store.modify(root, |c| c.last_sync_ms = Some(now))?;
        Ok(())
    }
}

/// Compares a manifest's file list with a fresh walk. Files whose size and mtime match are
/// unchanged; others are hashed to tell a real modification from a touch.
fn diff_files(old: &[ManifestFile], now: &[SourceFile]) -> SyncSummary {
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
