//! What this process keeps of one codebase between calls: the generations it has open,
//! their call graphs, the changes layered over the published one, and what its syncs saw.
//! One entry per codebase, each behind its own locks, so that opening (and verifying) one
//! codebase's generation never holds up a search of another.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::util::lock;

use super::layer::Layer;
use super::sync::Stamped;
use crate::graph::CallGraph;
use crate::search;

/// One codebase's state in this process.
#[derive(Default)]
pub(super) struct Codebase {
    /// The generations open for search, by directory: the published one, and one written
    /// by this process and adopted before its publication. Also the lock under which a
    /// generation is opened and verified, once per generation.
    pub open: Mutex<HashMap<PathBuf, Arc<search::Index>>>,
    /// Resolved call graphs by generation directory (built on first use).
    pub graphs: Mutex<HashMap<PathBuf, Arc<CallGraph>>>,
    /// The changes layered in memory over the published generation.
    pub layer: Mutex<Option<Layer>>,
    /// What the last sync that found nothing to do saw (see `sync`).
    pub stamp: Mutex<Option<Arc<Stamped>>>,
    /// When a sync of this process last found nothing to do (newer than the state file's
    /// `last_sync_ms` when the check was not worth a durable write).
    pub checked: Mutex<Option<u64>>,
    /// When this process last saw the whole tree (see `Engine::checked_here`).
    pub own_check: Mutex<Option<u64>>,
}

/// The codebases this process has state for, by root. The map's lock is held only to find
/// or add an entry.
#[derive(Default)]
pub(super) struct Codebases(Mutex<HashMap<PathBuf, Arc<Codebase>>>);

impl Codebases {
    /// The entry of `root`, made on first use.
    pub fn of(&self, root: &Path) -> Arc<Codebase> {
        let mut map = lock(&self.0);
        if let Some(c) = map.get(root) {
            return Arc::clone(c);
        }
        let c = Arc::new(Codebase::default());
        map.insert(root.to_path_buf(), Arc::clone(&c));
        c
    }
}
