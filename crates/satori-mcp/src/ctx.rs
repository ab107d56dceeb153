//! The shared state every request reaches: the engine, the configuration, background jobs,
//! syncs in flight, diagnostics, the changed-files cache and the client's roots. Its own
//! module so that the router (`server`) and the handlers (`tools`) both depend on it and not
//! on each other.

use std::path::Path;
use std::sync::Arc;

use satori_core::Engine;

use crate::changed::ChangedCache;
use crate::config::Config;
use crate::jobs::Jobs;
use crate::logging::Log;
use crate::roots::ClientRoots;
use crate::syncs::Syncs;

/// Shared state of every request.
pub(crate) struct Ctx {
    pub engine: Arc<Engine>,
    pub config: Config,
    pub jobs: Jobs,
    /// Diagnostics: stderr, and the client once it sets a level.
    pub log: Log,
    /// Recent `git diff` answers per codebase root (see `changed`).
    pub changed_cache: ChangedCache,
    /// The syncs in flight in this process, and the roots the watcher saw edits in.
    pub syncs: Arc<Syncs>,
    /// Signalled when the set of indexed codebases may have changed (a build ended, an
    /// index was cleared), so the watcher revisits what it watches.
    pub roots_changed: Arc<tokio::sync::Notify>,
    /// The directories the client allows, when it declares the `roots` capability.
    pub client_roots: ClientRoots,
}

impl Ctx {
    /// The limits every read is held to (`READ_FILE_MAX_BYTES`, `SATORI_READ_ANY_FILE`).
    pub fn read_limits(&self) -> satori_core::ReadLimits {
        satori_core::ReadLimits {
            max_bytes: self.config.read_max_bytes,
            outside_codebases: self.config.read_any_file,
        }
    }

    /// How far the build of `root` has got: the live job's figure when this process runs it,
    /// else `recorded`, the figure in `state.json` (another process may be building).
    pub fn indexing_percentage(&self, root: &Path, recorded: f32) -> f32 {
        self.jobs
            .view(root)
            .map_or(recorded, |v| v.progress.percentage)
    }
}
