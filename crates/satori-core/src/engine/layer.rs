//! Changes made searchable at once: the files a watcher saw change are chunked and embedded
//! into a generation held in memory and layered over the published one (see
//! [`crate::search::Index`]), so a search finds an edit a few milliseconds after it is
//! reported, while the durable sync writes, fsyncs and publishes the next generation in the
//! background. The layer lives in this process only and goes away when a new generation is
//! published; it never changes what is on disk.
//!
//! Only changes the layer can express exactly are layered: files added, modified or
//! removed, and directories removed. A directory that appeared (a checkout, a move) or an
//! edit of the ignore rules needs a walk, and the caller waits for the sync instead.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Engine;
use super::build::FileIndexer;
use crate::search;
use crate::store::GenerationWriter;
use crate::util::lock;
use crate::walk::{SourceFile, to_slash};
use crate::{Error, Result};

/// Most files one layer holds: past this, the sync is the better way to catch up.
pub const LAYER_MAX_FILES: usize = 64;

/// A layer over a codebase's published generation.
pub(super) struct Layer {
    /// The generation it lies over.
    gen_dir: PathBuf,
    /// The caller's name for the set of changes it holds.
    version: u64,
    index: Arc<search::Index>,
    summary: LayerSummary,
}

/// What a layer changed against the published generation, in files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LayerSummary {
    pub added: u64,
    pub modified: u64,
    pub removed: u64,
    /// Chunks in the layer.
    pub chunks: u64,
}

impl Engine {
    /// Makes the changes at `paths` (absolute paths below `root`, as a watcher reported
    /// them) searchable at once by layering their current content over the published
    /// generation; searches of `root` use the layer until a new generation is published.
    /// `version` names the set of changes: a layer of the same version over the same
    /// generation is kept as it is. The paths must be every change since the published
    /// generation's tree was read, since the layer replaces any earlier one.
    ///
    /// Fails with [`Error::NotLayerable`] for changes only a walk can apply (a directory
    /// that appeared, ignore rules, more than [`LAYER_MAX_FILES`] files).
    pub fn layer_changes(
        &self,
        root: &Path,
        paths: &[PathBuf],
        version: u64,
    ) -> Result<LayerSummary> {
        if paths.len() > LAYER_MAX_FILES {
            return Err(Error::NotLayerable(format!(
                "{} changed paths (at most {LAYER_MAX_FILES})",
                paths.len()
            )));
        }
        let (gen_dir, stored) = self.open_current(root)?;
        let codebase = self.codebases.of(root);
        if let Some(l) = lock(&codebase.layer).as_ref()
            && l.gen_dir == gen_dir
            && l.version == version
        {
            return Ok(l.summary);
        }
        let filter = self.path_filter(root)?;
        let g = stored.generation();
        let known: BTreeSet<&str> = g.files().iter().map(|f| f.path.as_str()).collect();
        let mut files: Vec<SourceFile> = Vec::new();
        let mut replaced: BTreeSet<String> = BTreeSet::new();
        let mut dirs_gone: Vec<String> = Vec::new();
        let mut summary = LayerSummary::default();
        for path in paths {
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            if filter.is_ignore_control(path) {
                return Err(Error::NotLayerable("the ignore rules changed".into()));
            }
            let rel = to_slash(rel);
            let meta = path.symlink_metadata().ok();
            if meta.as_ref().is_some_and(|m| m.is_dir()) {
                return Err(Error::NotLayerable(format!("'{rel}' is a new directory")));
            }
            let was = known.contains(rel.as_str());
            match filter.source_file(path) {
                Some(f) => {
                    if was {
                        summary.modified += 1;
                    } else {
                        summary.added += 1;
                    }
                    files.push(f);
                }
                None if was => summary.removed += 1,
                // Gone and never a file here: it may have been a directory.
                None if meta.is_none() => dirs_gone.push(format!("{rel}/")),
                None => {}
            }
            replaced.insert(rel);
        }
        let embedder = match g.dense_dim() {
            Some(dim) => {
                let embedder = self.embedder()?.ok_or_else(|| {
                    Error::NotLayerable("the index has vectors but no model is loaded".into())
                })?;
                if embedder.dim() != dim {
                    return Err(Error::NotLayerable(format!(
                        "the model gives vectors of {} values, the index holds {dim}",
                        embedder.dim()
                    )));
                }
                Some(embedder)
            }
            None => None,
        };
        let mut writer = GenerationWriter::in_memory(g.dense_dim())?;
        let mut indexer = FileIndexer::new(embedder, self.chunk_options, &self.policy, 0, u64::MAX);
        files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        indexer.batch(&files, &mut writer, &|_, _| None)?;
        let delta = writer.finish_in_memory()?;
        summary.chunks = delta.chunks().len() as u64;
        summary.removed += g
            .files()
            .iter()
            .filter(|f| dirs_gone.iter().any(|d| f.path.starts_with(d.as_str())))
            .count() as u64;
        let index = stored.layered(delta, &|path| {
            replaced.contains(path) || dirs_gone.iter().any(|d| path.starts_with(d.as_str()))
        });
        *lock(&codebase.layer) = Some(Layer {
            gen_dir,
            version,
            index: Arc::new(index),
            summary,
        });
        Ok(summary)
    }

    /// The layered index of `root` when it lies over the generation in `gen_dir`.
    pub(super) fn layer_over(&self, root: &Path, gen_dir: &Path) -> Option<Arc<search::Index>> {
        let codebase = self.codebases.of(root);
        let layer = lock(&codebase.layer);
        layer
            .as_ref()
            .filter(|l| l.gen_dir == gen_dir)
            .map(|l| Arc::clone(&l.index))
    }

    /// Drops the layer of `root` (a new generation was published, or the index went away).
    pub(super) fn drop_layer(&self, root: &Path) {
        *lock(&self.codebases.of(root).layer) = None;
    }
}
