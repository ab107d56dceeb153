//! The state file (`$SATORI_HOME/state.json`): the index state of every tracked codebase.
//!
//! Several processes (agents' servers, CLI calls) share it, so every change is a locked
//! read-modify-write (`state.lock`) followed by an atomic replace; readers never need the lock.
//! A corrupt file is moved aside (never deleted) and the states are rebuilt from the
//! published indexes, so no index is lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::layout::{Fingerprint, Home, Manifest, SkipReason};
use crate::util::{now_ms, write_atomic};
use crate::{Error, Result};

/// The state of one tracked codebase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexState {
    Indexing,
    Indexed,
    #[serde(rename = "indexfailed")]
    IndexFailed,
    SyncCompleted,
    RequiresReindex,
}

impl IndexState {
    /// The id persisted in `state.json` and shown to users.
    pub fn id(self) -> &'static str {
        match self {
            IndexState::Indexing => "indexing",
            IndexState::Indexed => "indexed",
            IndexState::IndexFailed => "indexfailed",
            IndexState::SyncCompleted => "sync_completed",
            IndexState::RequiresReindex => "requires_reindex",
        }
    }

    /// Searchable states.
    pub fn is_searchable(self) -> bool {
        matches!(self, IndexState::Indexed | IndexState::SyncCompleted)
    }
}

/// The step an index build is in, in the order a build goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Walking the tree for the files to index.
    Scanning,
    /// Chunking and embedding files, batch by batch.
    Chunking,
    /// Committing the lexical index and the vector matrix.
    Writing,
    /// Writing the manifest and switching `CURRENT`.
    Publishing,
}

impl Phase {
    /// The id persisted in `state.json` and shown to users.
    pub fn id(self) -> &'static str {
        match self {
            Phase::Scanning => "scanning",
            Phase::Chunking => "chunking",
            Phase::Writing => "writing",
            Phase::Publishing => "publishing",
        }
    }
}

/// How the last build of a published index ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexStatus {
    /// Every indexable file is in the index.
    Completed,
    /// The build stopped adding files at the chunk limit.
    LimitReached,
}

impl IndexStatus {
    /// The id persisted in `state.json` and shown to users.
    pub fn id(self) -> &'static str {
        match self {
            IndexStatus::Completed => "completed",
            IndexStatus::LimitReached => "limit_reached",
        }
    }
}

/// Why a codebase must be reindexed before it can be used again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReindexReason {
    /// The index was built with another embedding model, dimension or backend.
    FingerprintMismatch,
    /// The state records no fingerprint, so nothing proves the index matches.
    MissingFingerprint,
    /// Same model, older on-disk schema: the index predates the current layout.
    LegacyUnverifiedFingerprint,
    /// A file of the published generation is damaged or missing (found by verification or
    /// by a read that failed).
    IndexDamaged,
}

impl ReindexReason {
    /// The id persisted in `state.json` and shown to users.
    pub fn id(self) -> &'static str {
        match self {
            ReindexReason::FingerprintMismatch => "fingerprint_mismatch",
            ReindexReason::MissingFingerprint => "missing_fingerprint",
            ReindexReason::LegacyUnverifiedFingerprint => "legacy_unverified_fingerprint",
            ReindexReason::IndexDamaged => "index_damaged",
        }
    }
}

/// Everything recorded about one codebase. Fields that do not apply to the current state
/// are left at their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodebaseState {
    pub state: IndexState,
    /// While indexing: 0..=100, the phase, and file counts.
    #[serde(default)]
    pub percentage: f32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(default)]
    pub files_done: u64,
    #[serde(default)]
    pub files_total: u64,
    /// True when a complete earlier generation stays searchable during a rebuild.
    #[serde(default)]
    pub searchable_during_indexing: bool,
    /// True while the indexing is a sync's (a derive of the changed files, or the rebuild
    /// a sync fell back to) rather than a requested build: other processes keep their
    /// searches fresh meanwhile instead of reporting a reindex in progress.
    #[serde(default, skip_serializing_if = "is_false")]
    pub syncing: bool,
    /// Counts of the published index.
    #[serde(default)]
    pub files: u64,
    #[serde(default)]
    pub chunks: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_status: Option<IndexStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Last sync: changes found and when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_ms: Option<u64>,
    #[serde(default)]
    pub added: u64,
    #[serde(default)]
    pub removed: u64,
    #[serde(default)]
    pub modified: u64,
    /// Files of the published index that could not be read (every sync retries them), and
    /// the first few of their paths.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreadable_files: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable_sample: Vec<String>,
    /// Files and directories of the tree left out because their name is not UTF-8, and the
    /// first few of their paths (shown lossily).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub non_utf8_names: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub non_utf8_sample: Vec<String>,
    /// Files the walk found but the index does not hold, by reason.
    #[serde(default, skip_serializing_if = "SkippedFiles::is_empty")]
    pub skipped: SkippedFiles,
    /// Files indexed with definitions nested past the depth cap, which are chunked by size
    /// alone and left out of the outline.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub too_deep_files: u64,
    /// Failures and reindex requirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ReindexReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// Options given at creation, reused by reindex and sync.
    #[serde(default)]
    pub custom_extensions: Vec<String>,
    #[serde(default)]
    pub ignore_patterns: Vec<String>,
    pub last_updated_ms: u64,
}

impl CodebaseState {
    /// A fresh record in `state`.
    pub fn new(state: IndexState) -> CodebaseState {
        CodebaseState {
            state,
            percentage: 0.0,
            phase: None,
            files_done: 0,
            files_total: 0,
            searchable_during_indexing: false,
            syncing: false,
            files: 0,
            chunks: 0,
            index_status: None,
            indexed_at_ms: None,
            duration_ms: None,
            last_sync_ms: None,
            added: 0,
            removed: 0,
            modified: 0,
            unreadable_files: 0,
            unreadable_sample: Vec::new(),
            non_utf8_names: 0,
            non_utf8_sample: Vec::new(),
            skipped: SkippedFiles::default(),
            too_deep_files: 0,
            error_message: None,
            reason: None,
            fingerprint: None,
            custom_extensions: Vec::new(),
            ignore_patterns: Vec::new(),
            last_updated_ms: now_ms(),
        }
    }

    /// The record of a complete published generation, as its manifest describes it.
    pub fn published(m: &Manifest) -> CodebaseState {
        let mut c = CodebaseState::new(IndexState::Indexed);
        c.files = m.files;
        c.chunks = m.chunks;
        c.index_status = Some(IndexStatus::Completed);
        c.indexed_at_ms = Some(m.created_at_ms);
        c.duration_ms = Some(m.duration_ms);
        c.fingerprint = Some(m.fingerprint.clone());
        c.custom_extensions = m.custom_extensions.clone();
        c.ignore_patterns = m.ignore_patterns.clone();
        c.percentage = 100.0;
        let unreadable = m.file_list.iter().filter(|f| f.unreadable);
        c.unreadable_files = unreadable.clone().count() as u64;
        c.unreadable_sample = unreadable
            .take(UNREADABLE_SAMPLE)
            .map(|f| f.path.clone())
            .collect();
        c.non_utf8_names = m.non_utf8_names;
        c.non_utf8_sample = m.non_utf8_sample.clone();
        c.skipped = SkippedFiles::of(m);
        c.too_deep_files = m.file_list.iter().filter(|f| f.too_deep).count() as u64;
        c
    }
}

/// Files a published index leaves out, counted by why (unreadable files are counted apart:
/// they are retried).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFiles {
    /// Binary content (a NUL byte in the first 8 KiB).
    #[serde(default)]
    pub binary: u64,
    /// Minified code.
    #[serde(default)]
    pub minified: u64,
    /// Text holding a secret the policy keeps out.
    #[serde(default)]
    pub secrets: u64,
    /// Larger than the size cap.
    #[serde(default)]
    pub oversized: u64,
}

impl SkippedFiles {
    /// The counts a manifest records.
    pub fn of(m: &Manifest) -> SkippedFiles {
        let mut s = SkippedFiles {
            oversized: m.oversized,
            ..SkippedFiles::default()
        };
        for f in &m.file_list {
            match f.reason {
                Some(SkipReason::Binary) => s.binary += 1,
                Some(SkipReason::Minified) => s.minified += 1,
                Some(SkipReason::Secret) => s.secrets += 1,
                None => {}
            }
        }
        s
    }

    pub fn is_empty(&self) -> bool {
        *self == SkippedFiles::default()
    }
}

/// How many unreadable paths a state names (the count covers them all).
const UNREADABLE_SAMPLE: usize = 5;

/// The paths of names that are not UTF-8 a manifest and a state name (the count covers them
/// all), from the sorted list of a walk.
pub(crate) fn non_utf8_sample(names: &[String]) -> Vec<String> {
    names.iter().take(UNREADABLE_SAMPLE).cloned().collect()
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateFile {
    pub format_version: u32,
    pub codebases: BTreeMap<PathBuf, CodebaseState>,
}

const FORMAT_VERSION: u32 = 1;

/// Access to the state file of a [`Home`].
#[derive(Debug, Clone)]
pub struct StateStore {
    home: Home,
}

impl StateStore {
    pub fn new(home: Home) -> StateStore {
        StateStore { home }
    }

    /// Reads the current states without locking. A missing file is an empty state; a corrupt
    /// one is recovered (see the module docs).
    pub fn load(&self) -> Result<StateFile> {
        let path = self.home.state_file();
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<StateFile>(&bytes) {
                Ok(s) => Ok(s),
                Err(_) => self.update(|s| Ok(s.clone())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StateFile {
                format_version: FORMAT_VERSION,
                codebases: BTreeMap::new(),
            }),
            Err(e) => Err(Error::io("read", &path, e)),
        }
    }

    /// Locked read-modify-write. `f` sees the latest states; its changes are written atomically.
    pub fn update<T>(&self, f: impl FnOnce(&mut StateFile) -> Result<T>) -> Result<T> {
        let root = self.home.root();
        std::fs::create_dir_all(root).map_err(|e| Error::io("create directory", root, e))?;
        let lock_path = self.home.state_lock();
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io("open", &lock_path, e))?;
        lock.lock().map_err(|e| Error::io("lock", &lock_path, e))?;
        let mut state = self.read_or_recover()?;
        let before = state.clone();
        let out = f(&mut state)?;
        if state != before || !self.home.state_file().exists() {
            state.format_version = FORMAT_VERSION;
            let bytes = serde_json::to_vec_pretty(&state).map_err(|e| Error::Corrupt {
                what: "state",
                path: self.home.state_file(),
                reason: e.to_string(),
            })?;
            write_atomic(&self.home.state_file(), &bytes)?;
        }
        drop(lock);
        Ok(out)
    }

    /// Sets (or replaces) one codebase's record.
    pub fn set(&self, root: &Path, state: CodebaseState) -> Result<()> {
        self.update(|s| {
            s.codebases.insert(root.to_path_buf(), state);
            Ok(())
        })
    }

    /// Changes one codebase's record in place, if it exists.
    pub fn modify(&self, root: &Path, f: impl FnOnce(&mut CodebaseState)) -> Result<bool> {
        self.update(|s| match s.codebases.get_mut(root) {
            Some(c) => {
                f(c);
                c.last_updated_ms = now_ms();
                Ok(true)
            }
            None => Ok(false),
        })
    }

    /// Forgets one codebase. Returns whether it was tracked.
    pub fn remove(&self, root: &Path) -> Result<bool> {
        self.update(|s| Ok(s.codebases.remove(root).is_some()))
    }

    /// Reads under the lock; a corrupt file is quarantined and rebuilt from the indexes.
    fn read_or_recover(&self) -> Result<StateFile> {
        let path = self.home.state_file();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(StateFile {
                    format_version: FORMAT_VERSION,
                    codebases: BTreeMap::new(),
                });
            }
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        match serde_json::from_slice::<StateFile>(&bytes) {
            Ok(s) => Ok(s),
            Err(_) => {
                let aside = path.with_file_name(format!(
                    "state.json.corrupt-{}-{}",
                    std::process::id(),
                    now_ms()
                ));
                std::fs::rename(&path, &aside).map_err(|e| Error::io("rename", &path, e))?;
                Ok(self.rebuild_from_indexes())
            }
        }
    }

    /// Reconstructs states from the published generations on disk.
    pub fn rebuild_from_indexes(&self) -> StateFile {
        let mut codebases = BTreeMap::new();
        for (root, dir) in self.home.codebases() {
            if let Some((_, m)) = dir.current() {
                codebases.insert(root, CodebaseState::published(&m));
            }
        }
        StateFile {
            format_version: FORMAT_VERSION,
            codebases,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_updates_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(Home::new(dir.path().to_path_buf()));
        std::thread::scope(|s| {
            for t in 0..4 {
                let store = store.clone();
                s.spawn(move || {
                    for i in 0..25 {
                        let root = PathBuf::from(format!("/r/{t}/{i}"));
                        store
                            .set(&root, CodebaseState::new(IndexState::Indexed))
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(store.load().unwrap().codebases.len(), 100);
    }

    #[test]
    fn corrupt_file_is_quarantined_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        std::fs::write(home.state_file(), b"{ not json").unwrap();
        let store = StateStore::new(home.clone());
        let s = store.load().unwrap();
        assert!(s.codebases.is_empty());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().any(|n| n.starts_with("state.json.corrupt-")),
            "{names:?}"
        );
        assert!(home.state_file().exists());
    }

    #[test]
    fn states_round_trip_with_ids() {
        let mut c = CodebaseState::new(IndexState::IndexFailed);
        c.error_message = Some("boom".into());
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains("\"state\":\"indexfailed\""), "{json}");
        let back: CodebaseState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }
}
