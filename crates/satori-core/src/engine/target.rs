//! The gate in front of every search and read: which tracked codebase a path belongs to, and
//! whether it can be used now — answered from one read of the state file.

use std::path::{Path, PathBuf};

use super::Engine;
use crate::Error;
use crate::layout::Fingerprint;
use crate::policy::RootRefusal;
use crate::state::{CodebaseState, IndexState, Phase, ReindexReason};
use crate::walk::to_slash;

/// What the caller means to do with the path: the two differ in what they require.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Search the index: the codebase must have a usable index built with this engine's
    /// fingerprint (a mismatch found here is persisted as `requires_reindex`).
    Search,
    /// Read a file inside the codebase: only a first build still running refuses; a failed
    /// or outdated index does not stop reading files.
    Read,
}

/// A path that can be used for the requested [`Purpose`], with what it is used with.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The tracked codebase root that contains the path (the nearest one).
    pub root: PathBuf,
    /// The path relative to `root`, `/`-separated; `None` when the path is the root itself.
    pub prefix: Option<String>,
    /// The codebase's state as read (and repaired) for this call.
    pub state: CodebaseState,
    /// A rebuild is running and the previous complete index answers meanwhile.
    pub searchable_while_indexing: bool,
}

/// Why a path cannot be used for the requested [`Purpose`].
#[derive(Debug)]
pub enum Refusal {
    /// No tracked codebase contains the path.
    NotTracked,
    /// The codebase is being indexed for the first time: there is nothing to use yet.
    Indexing {
        root: PathBuf,
        /// Progress recorded in the state file, 0..=100.
        percentage: f32,
        phase: Option<Phase>,
    },
    /// The last build failed and there is no earlier index (search only).
    Failed {
        root: PathBuf,
        message: Option<String>,
    },
    /// The index was built with another configuration and must be rebuilt (search only).
    RequiresReindex {
        root: PathBuf,
        reason: ReindexReason,
        /// The fingerprint the index was built with, if recorded (boxed: it is rare and
        /// large, and every refusal is moved around by value).
        indexed: Option<Box<Fingerprint>>,
        /// What is wrong, when the index is damaged (the damaged file and why).
        detail: Option<String>,
    },
    /// The codebase is tracked at a root that may not be tracked (it was indexed before
    /// the policy refused such roots): nothing inside it is searched or read.
    Blocked { root: PathBuf, refusal: RootRefusal },
    /// The state file could not be read.
    State(Error),
}

impl Engine {
    /// Answers "can `path` be used for `purpose`, and with what?". `path` is absolute and
    /// canonical (or normalized when it no longer exists). The state file is read once;
    /// a stale `indexing` record is repaired and, for a search, a fingerprint mismatch is
    /// recorded, as [`Engine::states`] and [`Engine::check_fingerprint`] do.
    pub fn target(&self, path: &Path, purpose: Purpose) -> Result<Target, Refusal> {
        let file = self.store.load().map_err(Refusal::State)?;
        let mut best: Option<(PathBuf, CodebaseState)> = None;
        for (root, st) in file.codebases {
            if path.starts_with(&root)
                && best
                    .as_ref()
                    .is_none_or(|(b, _)| root.as_os_str().len() > b.as_os_str().len())
            {
                best = Some((root, st));
            }
        }
        let Some((root, st)) = best else {
            return Err(Refusal::NotTracked);
        };
        if let Some(refusal) = self.refuse_root(&root) {
            return Err(Refusal::Blocked { root, refusal });
        }
        let mut st = self.repair_if_stale(&root, st).map_err(Refusal::State)?;
        let searchable_while_indexing =
            st.state == IndexState::Indexing && st.searchable_during_indexing;
        if st.state == IndexState::Indexing && !searchable_while_indexing {
            return Err(Refusal::Indexing {
                root,
                percentage: st.percentage,
                phase: st.phase,
            });
        }
        if purpose == Purpose::Search {
            if st.state == IndexState::IndexFailed {
                return Err(Refusal::Failed {
                    root,
                    message: st.error_message,
                });
            }
            // A `CURRENT` that names no complete generation is found here, before any tool
            // trusts the record (it is recorded as damaged, and answered as below).
            if st.state.is_searchable()
                && let Err(Error::Damaged { .. }) = self.published_dir(&root)
                && let Ok(Some(recorded)) = self.state(&root)
            {
                st = recorded;
            }
            // A state file that cannot be updated does not stop a search; the verdict is
            // found again by the next check.
            if let Ok(Some(reason)) = self.settle_fingerprint(&root, &st) {
                let detail = (reason == ReindexReason::IndexDamaged)
                    .then_some(st.error_message)
                    .flatten();
                return Err(Refusal::RequiresReindex {
                    root,
                    reason,
                    indexed: st.fingerprint.map(Box::new),
                    detail,
                });
            }
        }
        let prefix = path
            .strip_prefix(&root)
            .ok()
            .map(to_slash)
            .filter(|s| !s.is_empty());
        Ok(Target {
            root,
            prefix,
            state: st,
            searchable_while_indexing,
        })
    }
}
