//! What the state file says about tracked codebases, corrected by what is on disk: stale
//! `indexing` records of dead builds are repaired, and an index built with another
//! configuration, or whose files are damaged, is moved to `requires_reindex`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Engine;
use crate::layout::Manifest;
use crate::state::{CodebaseState, IndexState, ReindexReason};
use crate::util::lock;
use crate::{Error, Result};

impl Engine {
    /// Every tracked codebase with its state (stale `indexing` records repaired).
    pub fn states(&self) -> Result<BTreeMap<PathBuf, CodebaseState>> {
        let file = self.store.load()?;
        let mut out = BTreeMap::new();
        for (root, st) in file.codebases {
            let st = self.with_last_check(&root, self.repair_if_stale(&root, st)?);
            out.insert(root, st);
        }
        Ok(out)
    }

    /// `st` with the time of this process's last idle sync of `root`, when that is newer.
    fn with_last_check(&self, root: &Path, mut st: CodebaseState) -> CodebaseState {
        let checked = *lock(&self.codebases.of(root).checked);
        if let Some(t) = checked
            && st.last_sync_ms.is_some_and(|last| last < t)
        {
            st.last_sync_ms = Some(t);
        }
        st
    }

    /// The state of one tracked codebase (`None` when untracked).
    pub fn state(&self, root: &Path) -> Result<Option<CodebaseState>> {
        let file = self.store.load()?;
        match file.codebases.get(root).cloned() {
            Some(st) => Ok(Some(
                self.with_last_check(root, self.repair_if_stale(root, st)?),
            )),
            None => Ok(None),
        }
    }

    /// A record that says `indexing` while nobody holds the writer lock belongs to a build
    /// that died (killed process, crash). Report what is really on disk instead.
    pub(super) fn repair_if_stale(&self, root: &Path, st: CodebaseState) -> Result<CodebaseState> {
        if st.state != IndexState::Indexing {
            return Ok(st);
        }
        let dir = self.home.codebase(root);
        if dir.writer_busy() || dir.handoff_pending() {
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
    /// the codebase moves to `requires_reindex` (persisted) and the reason is returned. A
    /// `CURRENT` that names no complete generation is found here too (`index_damaged`).
    pub fn check_fingerprint(&self, root: &Path) -> Result<Option<ReindexReason>> {
        let Some(st) = self.state(root)? else {
            return Ok(None);
        };
        if st.state.is_searchable()
            && let Err(Error::Damaged { .. }) = self.published_dir(root)
        {
            return Ok(Some(ReindexReason::IndexDamaged));
        }
        self.settle_fingerprint(root, &st)
    }

    /// [`Engine::check_fingerprint`] for a state already in hand (`st` is `root`'s record).
    pub(super) fn settle_fingerprint(
        &self,
        root: &Path,
        st: &CodebaseState,
    ) -> Result<Option<ReindexReason>> {
        if st.state == IndexState::RequiresReindex {
            return Ok(Some(
                st.reason.unwrap_or(ReindexReason::FingerprintMismatch),
            ));
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
        // A running build keeps its record; it publishes with the runtime fingerprint.
        if let Some(r) = reason
            && st.state != IndexState::Indexing
        {
            self.store.modify(root, |c| {
                c.state = IndexState::RequiresReindex;
                c.reason = Some(r);
            })?;
            self.forget_open(root);
        }
        Ok(reason)
    }
}

impl Engine {
    /// The directory of `root`'s published generation. When `CURRENT` names no complete
    /// generation although the codebase's record says it has an index, the pointer is
    /// damaged: the codebase moves to `requires_reindex` (`index_damaged`, with `CURRENT` and
    /// what is wrong with it as the message) and [`Error::Damaged`] is returned, so every
    /// caller says the same thing and none mistakes it for a cleared index. Without a record
    /// or a directory the index is gone (a `clear` removes the record first, then the
    /// directory): [`Error::IndexMissing`].
    pub(super) fn published_dir(&self, root: &Path) -> Result<PathBuf> {
        let dir = self.home.codebase(root);
        if let Some(gen_dir) = dir.current_dir() {
            return Ok(gen_dir);
        }
        let missing = || Error::IndexMissing(root.to_path_buf());
        let record = self.store.load()?.codebases.get(root).cloned();
        let has_index = record.as_ref().is_some_and(|c| {
            c.searchable_during_indexing
                || matches!(
                    c.state,
                    IndexState::Indexed | IndexState::SyncCompleted | IndexState::RequiresReindex
                )
        });
        if !has_index || !dir.path().is_dir() {
            return Err(missing());
        }
        let reason = match dir.current_damage() {
            Some(reason) => reason,
            None if dir.current_file().exists() => {
                // Published meanwhile.
                return dir.current_dir().ok_or_else(missing);
            }
            None => "it is missing".to_owned(),
        };
        let damaged = Error::Damaged {
            file: dir.current_file(),
            reason,
        };
        let message = damaged.to_string();
        self.store.modify(root, |c| {
            if matches!(c.state, IndexState::Indexed | IndexState::SyncCompleted) {
                c.state = IndexState::RequiresReindex;
                c.reason = Some(ReindexReason::IndexDamaged);
                c.error_message = Some(message);
            }
        })?;
        self.forget_open(root);
        Err(damaged)
    }

    /// Verifies the published generation of a searchable codebase (checksums, manifest,
    /// chunk table and vectors; see `verify`). Each generation is verified once per process:
    /// the verdict stays with the open generation, which searches then reuse. A damaged one
    /// moves the codebase to `requires_reindex` (persisted, with the damaged file in its
    /// message), which is returned.
    pub fn check_index(&self, root: &Path) -> Result<Option<String>> {
        let Some(st) = self.state(root)? else {
            return Ok(None);
        };
        if !st.state.is_searchable() {
            return Ok(None);
        }
        match self.generation(root) {
            Err(e @ Error::Damaged { .. }) => Ok(Some(e.to_string())),
            _ => Ok(None),
        }
    }
}

/// The state record of a published generation, keeping the sync info of `prev`.
pub(super) fn published_state(m: &Manifest, prev: &CodebaseState) -> CodebaseState {
    let mut c = CodebaseState::published(m);
    c.last_sync_ms = prev.last_sync_ms.or(Some(m.created_at_ms));
    c
}
