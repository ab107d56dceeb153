//! Where things live on disk, and how an index is published.
//!
//! ```text
//! $SATORI_HOME/                       default ~/.satori
//!   state.json, state.lock            index states of every tracked codebase (see `state`)
//!   indexes/<key>/                    one codebase; key = hash of its canonical root path
//!     root                            the canonical root path, for recovery
//!     writer.lock                     held by the one process building (or clearing) it
//!     HANDOFF                         a build being handed to another process (see below)
//!     CURRENT                         name of the published generation, replaced atomically
//!     gen-<ms>-<pid>/                 one generation: written once, then read-only
//!       lexical/, chunks.*            the lexical index and chunk table (`store`)
//!       vectors/                      the dense matrix (the embedded vector backend's)
//!       graph*.json                   the call graph
//!       overlay.bin                   in a derived generation that shares the base files
//!                                     (hard links) of an earlier one: the base rows gone
//!       manifest.json                 fingerprint, options, where the vectors are
//!       files.json, files.delta.json  per-file stats: the list of the generation written
//!                                     whole last (a hard link), and the changes since
//!       COMPLETE                      written last: a generation without it never existed
//!       RETIRED                       written when a newer generation was published
//!   indexes/.cleared-<key>-<pid>-<ms>/  a cleared codebase on its way out
//! ```
//!
//! Readers open the generation named by `CURRENT`; a builder writes a new generation beside it
//! and switches `CURRENT` only once the new one is complete, so readers never see a half-built
//! index and a crash at any point leaves the old index or the new one.
//!
//! **Readers keep their generation (a grace period, not leases).** Publishing does not delete
//! the generation it replaces: it marks it `RETIRED`, and a retired generation is deleted only
//! once it has been retired for [`RETIRED_GRACE_MS`], by a later publish, build start or
//! process start holding the writer lock. A reader that has read `CURRENT` therefore finds the
//! generation it names for at least that long — opening takes milliseconds, and an opened
//! generation needs no path any more (its files are mapped or loaded; on Unix a deleted file
//! stays readable while open). Should a reader be slower than the grace period anyway, the
//! engine re-reads `CURRENT` and opens the newer generation. Retirement is bounded by size
//! too: retired generations in their grace period are kept, newest first, only while the
//! bytes they hold of their own (a file hard-linked from a kept generation costs nothing)
//! add up to at most the published generation's size ([`RETIRED_FLOOR_BYTES`] at least);
//! older ones go early, but the generation retired last is always kept for its grace, so
//! that a burst of syncs cannot multiply the index on disk. Leases or reference counts would
//! need every reader to write (and a crashed reader to be detected); a grace period costs
//! readers nothing. On Windows an open generation cannot be deleted: the deletion fails and is
//! retried by the next sweep.
//!
//! **Handoff.** A server whose session ends while it builds hands the build to a detached
//! process: it writes `HANDOFF`, stops its own build and releases the lock, and the new
//! process takes the lock and starts the build again. For [`HANDOFF_WAIT_MS`] after it was
//! written, a free lock with an `indexing` record is a build changing hands, not a dead one.
//!
//! A generation without `COMPLETE` that nobody is writing (the writer lock is free) is the
//! leftover of a killed build; sweeps remove it too.
//!
//! **Writer lock.** `writer.lock` serialises builds and `clear`. Because `clear` removes the
//! directory holding the lock file, a lock taken on a file that was removed meanwhile would
//! protect nothing: [`CodebaseDir::lock`] checks after locking that the file it locked is
//! still the one at the path, and starts over otherwise. `clear` renames the directory to
//! `.cleared-*` before deleting it, so readers and builders see the codebase or nothing, and a
//! deletion interrupted by a crash is finished by the next process start.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::util::{hash16, now_ms, write_atomic};
use crate::{Error, Result};

/// Version of the on-disk index layout described above. It is part of every index's
/// [`Fingerprint`]: bumping it makes older indexes `requires_reindex`.
pub const INDEX_SCHEMA_VERSION: &str = "hybrid_v3";

/// The root of Satori's on-disk state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    pub fn new(root: PathBuf) -> Home {
        Home { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn state_file(&self) -> PathBuf {
        self.root.join("state.json")
    }

    pub fn state_lock(&self) -> PathBuf {
        self.root.join("state.lock")
    }

    pub fn indexes_dir(&self) -> PathBuf {
        self.root.join("indexes")
    }

    /// Downloaded embedding models.
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// Where vectors of remote models are cached by text (`embed::CachedEmbedder`).
    pub fn embed_cache_dir(&self) -> PathBuf {
        self.root.join("embed-cache")
    }

    /// The directory of one codebase (not created).
    pub fn codebase(&self, canonical_root: &Path) -> CodebaseDir {
        let key = hash16(canonical_root.to_string_lossy().as_bytes());
        CodebaseDir {
            dir: self.indexes_dir().join(key),
        }
    }

    /// Every codebase directory that exists, with the root it records.
    pub fn codebases(&self) -> Vec<(PathBuf, CodebaseDir)> {
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir(self.indexes_dir()) else {
            return out;
        };
        for entry in rd.flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let dir = CodebaseDir { dir: entry.path() };
            if let Ok(root) = std::fs::read_to_string(dir.dir.join("root")) {
                out.push((PathBuf::from(root.trim_end_matches('\n')), dir));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Finishes deletions of cleared codebases that a crash (or an open file on Windows)
    /// interrupted. Their directories were renamed aside while locked, so nobody uses them.
    pub fn sweep_cleared(&self) {
        let Ok(rd) = std::fs::read_dir(self.indexes_dir()) else {
            return;
        };
        for entry in rd.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(CLEARED_PREFIX)
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// One codebase's index directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodebaseDir {
    dir: PathBuf,
}

/// An exclusive lock on a codebase's writer slot; released on drop.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

/// How long a `HANDOFF` marker vouches for an `indexing` record whose writer lock is free:
/// the process taking the build over has this long to take the lock.
pub const HANDOFF_WAIT_MS: u64 = 30_000;

/// How long a retired generation stays on disk for readers that read `CURRENT` before it
/// was replaced (see the module documentation).
pub const RETIRED_GRACE_MS: u64 = 60_000;

/// The least room retired generations in their grace period get, whatever the size of the
/// published one (see [`CodebaseDir::sweep`]).
pub const RETIRED_FLOOR_BYTES: u64 = 16 << 20;

/// Marker of a generation that a newer one replaced; its modification time is the time of
/// retirement.
const RETIRED: &str = "RETIRED";

/// Marker written last into a finished generation.
const COMPLETE: &str = "COMPLETE";

/// Prefix of a cleared codebase directory that is being deleted.
const CLEARED_PREFIX: &str = ".cleared-";

/// Attempts at taking a writer lock whose file a concurrent `clear` keeps removing.
const LOCK_ATTEMPTS: usize = 20;

impl CodebaseDir {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Where the last list of files git reported as changed is kept between processes
    /// (a hint for ranking, never part of an index generation).
    pub fn git_changed_file(&self) -> PathBuf {
        self.dir.join("git-changed")
    }

    /// Creates the directory and records the root it belongs to.
    pub fn ensure(&self, canonical_root: &Path) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::io("create directory", &self.dir, e))?;
        let root_file = self.dir.join("root");
        if !root_file.exists() {
            write_atomic(&root_file, canonical_root.to_string_lossy().as_bytes())?;
        }
        Ok(())
    }

    /// Creates the directory if needed and takes the writer lock without waiting: `None` when
    /// another process or task holds it. A `clear` that removes the directory meanwhile is
    /// waited out: the lock is always taken on the directory that exists afterwards.
    pub fn lock_for_build(&self, canonical_root: &Path) -> Result<Option<WriterLock>> {
        for _ in 0..LOCK_ATTEMPTS {
            let attempt = self.ensure(canonical_root).and_then(|()| self.try_lock());
            match attempt {
                Ok(Locked::Yes(lock)) => return Ok(Some(lock)),
                Ok(Locked::Busy) => return Ok(None),
                Ok(Locked::Gone) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Removed again at every attempt: a `clear` (or several) is busy with the directory,
        // which the caller reports like any other holder of the lock.
        Ok(None)
    }

    /// Takes the writer lock of an existing directory without waiting: `Busy` when another
    /// process or task holds it, `Gone` when there is no directory (nothing to lock).
    pub fn try_writer_lock(&self) -> Result<ExistingLock> {
        for _ in 0..LOCK_ATTEMPTS {
            if !self.dir.exists() {
                return Ok(ExistingLock::Gone);
            }
            match self.try_lock() {
                Ok(Locked::Yes(lock)) => return Ok(ExistingLock::Held(lock)),
                Ok(Locked::Busy) => return Ok(ExistingLock::Busy),
                Ok(Locked::Gone) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        // Removed and recreated over and over: someone is busy with it.
        Ok(ExistingLock::Busy)
    }

    /// One attempt: lock the file at `writer.lock`, then make sure it is still the file at
    /// that path (a `clear` may have removed the directory between our open and our lock).
    fn try_lock(&self) -> Result<Locked> {
        let path = self.dir.join("writer.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("open", &path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(Locked::Busy),
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &path, e)),
        }
        if same_file(&file, &path) {
            Ok(Locked::Yes(WriterLock { _file: file }))
        } else {
            Ok(Locked::Gone)
        }
    }

    /// The marker of a build being handed to another process.
    pub fn handoff_file(&self) -> PathBuf {
        self.dir.join("HANDOFF")
    }

    /// Whether a build of this codebase is changing hands: its `HANDOFF` marker is younger
    /// than [`HANDOFF_WAIT_MS`].
    pub fn handoff_pending(&self) -> bool {
        std::fs::metadata(self.handoff_file())
            .and_then(|m| m.modified())
            .is_ok_and(|t| {
                now_ms().saturating_sub(crate::util::system_time_ms(t)) < HANDOFF_WAIT_MS
            })
    }

    /// True when some process holds the writer lock right now.
    pub fn writer_busy(&self) -> bool {
        matches!(self.try_writer_lock(), Ok(ExistingLock::Busy))
    }

    /// The published generation, if any, with its manifest. A generation named by `CURRENT`
    /// but lacking its `COMPLETE` marker is treated as absent.
    pub fn current(&self) -> Option<(PathBuf, Manifest)> {
        let gen_dir = self.current_dir()?;
        let manifest = Manifest::read(&gen_dir).ok()?;
        Some((gen_dir, manifest))
    }

    /// The published generation's directory, without reading its manifest: what a search
    /// needs, and cheap (the manifest lists every file).
    pub fn current_dir(&self) -> Option<PathBuf> {
        let name = self.current_name()?;
        let gen_dir = self.dir.join(name);
        gen_dir.join(COMPLETE).is_file().then_some(gen_dir)
    }

    /// The name `CURRENT` holds, when it is the name of a generation (never a path: a
    /// damaged pointer must not make a publish retire some other directory).
    fn current_name(&self) -> Option<String> {
        let name = std::fs::read_to_string(self.dir.join("CURRENT")).ok()?;
        let name = name.trim();
        is_generation_name(name).then(|| name.to_owned())
    }

    /// The `CURRENT` file.
    pub fn current_file(&self) -> PathBuf {
        self.dir.join("CURRENT")
    }

    /// What is wrong with `CURRENT` when it names no complete generation: `None` when it
    /// does, or when there is no `CURRENT` at all (nothing was ever published, or the
    /// codebase is gone); otherwise why it cannot be followed.
    pub fn current_damage(&self) -> Option<String> {
        let path = self.current_file();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return Some(format!("it cannot be read: {e}")),
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return Some("it is not text".to_owned());
        };
        let name = text.trim();
        if name.is_empty() {
            return Some("it is empty".to_owned());
        }
        let shown: String = name.chars().take(80).collect();
        if !is_generation_name(name) {
            return Some(format!("it names no generation ('{shown}')"));
        }
        let gen_dir = self.dir.join(name);
        if !gen_dir.is_dir() {
            return Some(format!(
                "it names generation '{shown}', which does not exist"
            ));
        }
        if !gen_dir.join(COMPLETE).is_file() {
            return Some(format!(
                "it names generation '{shown}', which is incomplete"
            ));
        }
        None
    }

    /// Creates a fresh, empty generation directory (only call with the writer lock held).
    pub fn new_generation(&self) -> Result<PathBuf> {
        let name = format!("gen-{}-{}", now_ms(), std::process::id());
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
        Ok(dir)
    }

    /// Marks `gen_dir` complete, points `CURRENT` at it, retires the generation it replaces
    /// and sweeps (only call with the writer lock held). The replaced generation stays
    /// readable for [`RETIRED_GRACE_MS`].
    pub fn publish(&self, gen_dir: &Path, manifest: &Manifest) -> Result<()> {
        let name = gen_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let previous = self.current_name();
        let shared = previous
            .as_ref()
            .filter(|p| **p != name)
            .map(|p| self.dir.join(p));
        manifest.write(gen_dir, shared.as_deref())?;
        write_atomic(
            &gen_dir.join(COMPLETE),
            manifest.completion_line().as_bytes(),
        )?;
        write_atomic(&self.dir.join("CURRENT"), name.as_bytes())?;
        if let Some(previous) = previous.filter(|p| *p != name) {
            retire(&self.dir.join(previous));
        }
        self.sweep(now_ms());
        Ok(())
    }

    /// Removes what no reader can need any more (only call with the writer lock held):
    /// generations without `COMPLETE` (killed or failed builds), generations retired more
    /// than [`RETIRED_GRACE_MS`] before `now`, and the oldest retired generations beyond
    /// the size bound (see the module documentation). A complete generation that is neither
    /// current nor retired (a crash between its completion and the switch of `CURRENT`) is
    /// retired now. Best effort: what cannot be removed (a file still open on Windows) is
    /// retried by the next sweep.
    pub fn sweep(&self, now: u64) {
        let current = self.current_name();
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut in_grace: Vec<(u64, String, PathBuf)> = Vec::new();
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("gen-") || Some(&name) == current.as_ref() {
                continue;
            }
            let path = entry.path();
            if !path.join(COMPLETE).is_file() {
                let _ = std::fs::remove_dir_all(&path);
                continue;
            }
            match retired_at(&path) {
                Some(at) if now.saturating_sub(at) >= RETIRED_GRACE_MS => {
                    let _ = std::fs::remove_dir_all(&path);
                }
                Some(at) => in_grace.push((at, name, path)),
                None => {
                    retire(&path);
                    in_grace.push((retired_at(&path).unwrap_or(now), name, path));
                }
            }
        }
        let Some(current) = current else {
            return;
        };
        // Newest first: the generation retired last is the one readers most likely hold.
        in_grace.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        let mut seen = std::collections::HashSet::new();
        let budget = own_bytes(&self.dir.join(current), &mut seen).max(RETIRED_FLOOR_BYTES);
        let mut held = 0u64;
        for (i, (_, _, path)) in in_grace.iter().enumerate() {
            held = held.saturating_add(own_bytes(path, &mut seen));
            if i > 0 && held > budget {
                let _ = std::fs::remove_dir_all(path);
            }
        }
    }

    /// The names of the generation directories present, sorted.
    pub fn generations(&self) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("gen-"))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// Removes the whole codebase directory (only call with the writer lock held): renamed
    /// aside first, so that it disappears at once for everyone, then deleted. What cannot be
    /// deleted now is finished by [`Home::sweep_cleared`].
    pub fn remove(&self) -> Result<()> {
        if !self.dir.exists() {
            return Ok(());
        }
        let key = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let aside = self.dir.with_file_name(format!(
            "{CLEARED_PREFIX}{key}-{}-{}",
            std::process::id(),
            now_ms()
        ));
        // Renaming a directory with open files fails on Windows: delete it in place there.
        let target = match std::fs::rename(&self.dir, &aside) {
            Ok(()) => aside,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) => self.dir.clone(),
        };
        match std::fs::remove_dir_all(&target) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            // Out of sight already: the next process start finishes the deletion.
            Err(_) if target != self.dir => Ok(()),
            Err(e) => Err(Error::io("remove", &self.dir, e)),
        }
    }
}

/// The outcome of [`CodebaseDir::try_writer_lock`].
#[derive(Debug)]
pub enum ExistingLock {
    /// The lock is ours until dropped.
    Held(WriterLock),
    /// Another process or task holds it.
    Busy,
    /// The codebase directory does not exist.
    Gone,
}

/// One attempt at the lock file.
enum Locked {
    Yes(WriterLock),
    Busy,
    /// The file locked is no longer the one at the path (its directory was removed).
    Gone,
}

fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// Whether the open `file` is the file at `path` now.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether the open `file` is the file at `path` now. Windows cannot delete a file that is
/// open (the lock file is opened without delete sharing), so it is always the same file.
#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.is_file()
}

/// Bytes of the files under `dir` that are not among `seen` (files already counted, by
/// device and inode, so that a file hard-linked into several generations counts once);
/// adds them to `seen`.
fn own_bytes(dir: &Path, seen: &mut std::collections::HashSet<(u64, u64)>) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() && seen.insert(file_id(&meta, &entry.path())) {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
}

/// What tells a file from another: device and inode on Unix.
#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata, _path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// What tells a file from another where inodes are not at hand: its path (hard links then
/// count once per name, which overstates and so only removes earlier).
#[cfg(not(unix))]
fn file_id(_meta: &std::fs::Metadata, path: &Path) -> (u64, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    (u64::MAX, h.finish())
}

fn not_found() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::NotFound)
}

/// Marks a generation retired now (best effort: an unmarked complete generation is retired
/// by the next sweep).
/// Whether `name` is a generation's directory name (`gen-<ms>-<pid>`), one plain component.
fn is_generation_name(name: &str) -> bool {
    name.strip_prefix("gen-").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit() || b == b'-')
    })
}

fn retire(gen_dir: &Path) {
    if gen_dir.is_dir() && !gen_dir.join(RETIRED).exists() {
        let _ = std::fs::write(gen_dir.join(RETIRED), now_ms().to_string());
    }
}

/// When a generation was retired, if it was.
fn retired_at(gen_dir: &Path) -> Option<u64> {
    let modified = std::fs::metadata(gen_dir.join(RETIRED))
        .and_then(|m| m.modified())
        .ok()?;
    Some(crate::util::system_time_ms(modified))
}

/// The identity of what an index was built with. Searching an index with another identity
/// would silently return wrong results, so a mismatch forces a reindex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fingerprint {
    pub embedding_provider: String,
    pub embedding_model: String,
    pub embedding_dimension: u32,
    /// Serialised as the plain string it always was (`"embedded"`, `"none"`, or another
    /// backend's name).
    pub vector_backend: crate::dense::BackendId,
    pub schema_version: String,
}

impl Fingerprint {
    /// The fingerprint of indexes built by this version with the model `info`, their
    /// vectors in `backend`.
    pub fn of(info: &crate::embed::ModelInfo, backend: crate::dense::BackendId) -> Fingerprint {
        Fingerprint {
            embedding_provider: info.provider.clone(),
            embedding_model: info.fingerprint_model(),
            embedding_dimension: info.dim as u32,
            vector_backend: if info.dim > 0 {
                backend
            } else {
                crate::dense::BackendId::None
            },
            schema_version: INDEX_SCHEMA_VERSION.into(),
        }
    }

    /// The fingerprint of this build's embedded default (the bundled model).
    pub fn embedded_default() -> Fingerprint {
        Fingerprint::of(
            &crate::embed::bundled::info(),
            crate::dense::BackendId::Embedded,
        )
    }
}

/// One walked file as recorded in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    pub path: String,
    pub size: u64,
    pub mtime_ms: u64,
    pub hash: String,
    /// The file was seen but not indexed (binary, minified, unreadable, or over the chunk
    /// limit). It is still recorded so that a sync does not mistake it for a new file and
    /// rebuild the index every time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// The file could not be read (permissions): every later sync tries it again, so it is
    /// indexed as soon as it becomes readable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreadable: bool,
    /// Why a `skipped` file was not indexed (absent in manifests written before reasons
    /// were recorded, and for files over the chunk limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SkipReason>,
    /// Indexed, but some of its definitions nest deeper than the depth cap allows: they are
    /// not in its outline, and their lines are chunked by size alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_deep: bool,
}

/// Why a file the walk found is not in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SkipReason {
    /// Its first 8 KiB hold a NUL byte.
    Binary,
    /// Minified code: very long lines, unreadable as source.
    Minified,
    /// Its text holds a secret (a private key, a token) the policy keeps out.
    Secret,
}

/// What a generation contains and how it was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub root: PathBuf,
    pub fingerprint: Fingerprint,
    pub created_at_ms: u64,
    pub duration_ms: u64,
    pub files: u64,
    pub chunks: u64,
    pub custom_extensions: Vec<String>,
    pub ignore_patterns: Vec<String>,
    /// Hash of the ignore rules in force (`.gitignore`, `.satoriignore`, patterns).
    pub ignore_signature: String,
    /// The policy the index was built under ([`crate::Policy::signature`]); empty in indexes
    /// built before the policy existed, which therefore never match it.
    #[serde(default)]
    pub policy: String,
    /// The chunking rules the index was built under (`v` and
    /// [`crate::chunk::CHUNKING_VERSION`]); empty in indexes built before they were
    /// recorded, which therefore never match them.
    #[serde(default)]
    pub chunking: String,
    /// Files the walk passed over for their size (they are not in `file_list`).
    #[serde(default)]
    pub oversized: u64,
    /// Files and directories the walk passed over because their name is not UTF-8, and the
    /// first few of their paths (shown lossily).
    #[serde(default)]
    pub non_utf8_names: u64,
    #[serde(default)]
    pub non_utf8_sample: Vec<String>,
    /// Where the generation's vectors are (absent without vectors, and in manifests written
    /// before it was recorded, whose vectors are all embedded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<crate::dense::VectorStore>,
    pub file_list: Vec<ManifestFile>,
}

/// The file list of a manifest, beside it: written whole by a build, then shared by the
/// generations derived from it (a hard link) while the changes since stay small.
const FILES: &str = "files.json";

/// The changes to the shared [`FILES`] of a derived generation.
const FILES_DELTA: &str = "files.delta.json";

/// The file list of a derived generation stores only this share of the shared list's
/// length in changes; past it, the list is written whole again.
const FILES_DELTA_MAX_SHARE: usize = 8;

/// What changed since the shared file list: the paths gone, and the entries new or changed.
#[derive(Debug, Default, Serialize, Deserialize)]
struct FilesDelta {
    removed: Vec<String>,
    files: Vec<ManifestFile>,
}

/// Reads one JSON file of a manifest; `Ok(None)` when it does not exist.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::Corrupt {
            what: "manifest",
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

fn to_json<T: Serialize>(value: &T, path: &Path) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Corrupt {
        what: "manifest",
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

impl Manifest {
    fn path(gen_dir: &Path) -> PathBuf {
        gen_dir.join("manifest.json")
    }

    /// Reads the manifest of a generation, with its file list (stored inside it by older
    /// generations, beside it since).
    pub fn read(gen_dir: &Path) -> Result<Manifest> {
        let path = Self::path(gen_dir);
        let mut m: Manifest =
            read_json(&path)?.ok_or_else(|| Error::io("read", &path, not_found()))?;
        let Some(mut list) = read_json::<Vec<ManifestFile>>(&gen_dir.join(FILES))? else {
            return Ok(m);
        };
        if let Some(delta) = read_json::<FilesDelta>(&gen_dir.join(FILES_DELTA))? {
            crate::util::apply_file_delta(&mut list, &delta.removed, delta.files, |f| {
                f.path.as_str()
            });
        }
        m.file_list = list;
        Ok(m)
    }

    /// Checks that the manifest and its file list are there and are well-formed JSON,
    /// without building them: a search does not need the per-file records, which run to
    /// megabytes on a large codebase, and every process that opens the index would pay for
    /// them.
    pub fn check(gen_dir: &Path) -> Result<()> {
        let path = Self::path(gen_dir);
        read_json::<serde::de::IgnoredAny>(&path)?
            .ok_or_else(|| Error::io("read", &path, not_found()))?;
        read_json::<serde::de::IgnoredAny>(&gen_dir.join(FILES))?;
        read_json::<serde::de::IgnoredAny>(&gen_dir.join(FILES_DELTA))?;
        Ok(())
    }

    /// Writes the manifest into `gen_dir`, its file list beside it: the list of `shared`
    /// (the generation this one replaces) linked with the changes since it, when they are
    /// few, else the list whole.
    fn write(&self, gen_dir: &Path, shared: Option<&Path>) -> Result<()> {
        self.write_files(gen_dir, shared)?;
        let head = Manifest {
            file_list: Vec::new(),
            root: self.root.clone(),
            fingerprint: self.fingerprint.clone(),
            custom_extensions: self.custom_extensions.clone(),
            ignore_patterns: self.ignore_patterns.clone(),
            ignore_signature: self.ignore_signature.clone(),
            policy: self.policy.clone(),
            chunking: self.chunking.clone(),
            non_utf8_sample: self.non_utf8_sample.clone(),
            vectors: self.vectors.clone(),
            ..*self
        };
        write_atomic(&Self::path(gen_dir), &to_json(&head, &Self::path(gen_dir))?)
    }

    fn write_files(&self, gen_dir: &Path, shared: Option<&Path>) -> Result<()> {
        let files = gen_dir.join(FILES);
        let base = shared
            .map(|p| p.join(FILES))
            .and_then(|p| Some((read_json::<Vec<ManifestFile>>(&p).ok()??, p)));
        if let Some((base, base_path)) = base {
            let by_path: std::collections::HashMap<&str, &ManifestFile> =
                base.iter().map(|f| (f.path.as_str(), f)).collect();
            let now: std::collections::HashSet<&str> =
                self.file_list.iter().map(|f| f.path.as_str()).collect();
            let delta = FilesDelta {
                removed: base
                    .iter()
                    .filter(|f| !now.contains(f.path.as_str()))
                    .map(|f| f.path.clone())
                    .collect(),
                files: self
                    .file_list
                    .iter()
                    .filter(|f| by_path.get(f.path.as_str()) != Some(f))
                    .cloned()
                    .collect(),
            };
            let changes = delta.removed.len() + delta.files.len();
            if changes * FILES_DELTA_MAX_SHARE <= base.len()
                && (std::fs::hard_link(&base_path, &files).is_ok()
                    || std::fs::copy(&base_path, &files).is_ok())
            {
                let path = gen_dir.join(FILES_DELTA);
                return write_atomic(&path, &to_json(&delta, &path)?);
            }
            let _ = std::fs::remove_file(&files);
        }
        write_atomic(&files, &to_json(&self.file_list, &files)?)
    }

    fn completion_line(&self) -> String {
        format!(
            "files={} chunks={} created_at_ms={} schema={}\n",
            self.files, self.chunks, self.created_at_ms, self.fingerprint.schema_version
        )
    }
}

/// A generation's manifest, file list and file-list delta made of the given bytes (an empty
/// slice leaves its file out) and read back (the fuzz target `state_loaders`, through
/// [`crate::fuzz_loaders`]): each read answers with its value or an error.
pub(crate) fn fuzz_manifest(gen_dir: &Path, manifest: &[u8], files: &[u8], delta: &[u8]) {
    for (path, bytes) in [
        (Manifest::path(gen_dir), manifest),
        (gen_dir.join(FILES), files),
        (gen_dir.join(FILES_DELTA), delta),
    ] {
        let _ = std::fs::remove_file(&path);
        if !bytes.is_empty() {
            std::fs::create_dir_all(gen_dir).expect("the fuzz folder is writable");
            std::fs::write(&path, bytes).expect("the fuzz folder is writable");
        }
    }
    let _ = Manifest::check(gen_dir);
    let _ = Manifest::read(gen_dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(root: &Path) -> Manifest {
        Manifest {
            root: root.to_path_buf(),
            fingerprint: Fingerprint::embedded_default(),
            created_at_ms: 1,
            duration_ms: 2,
            files: 0,
            chunks: 0,
            custom_extensions: vec![],
            ignore_patterns: vec![],
            ignore_signature: String::new(),
            policy: String::new(),
            chunking: String::new(),
            oversized: 0,
            non_utf8_names: 0,
            non_utf8_sample: vec![],
            vectors: None,
            file_list: vec![],
        }
    }

    /// A manifest records where its vectors are; one written before that was recorded
    /// (no `vectors` key) still loads.
    #[test]
    fn the_vector_store_is_optional_in_a_manifest() {
        use crate::dense::VectorStore;
        let check = |vectors: Option<VectorStore>, form: Option<&str>| {
            let mut m = manifest(Path::new("/repo"));
            m.vectors = vectors;
            let text = serde_json::to_string(&m).unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v.get("vectors").map(|v| v.to_string()).as_deref(), form);
            assert_eq!(serde_json::from_str::<Manifest>(&text).unwrap(), m);
        };
        check(None, None);
        check(
            Some(VectorStore::Embedded),
            Some(r#"{"backend":"embedded"}"#),
        );
        let external = VectorStore::External {
            name: "milvus".into(),
            collection: "satori_abc".into(),
            generation: "gen-1-2".into(),
        };
        let form = r#"{"backend":"external","name":"milvus","collection":"satori_abc","generation":"gen-1-2"}"#;
        check(Some(external), Some(form));
    }

    fn home() -> (tempfile::TempDir, Home, CodebaseDir) {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().to_path_buf());
        let cb = home.codebase(Path::new("/repo"));
        (tmp, home, cb)
    }

    /// A generation directory with its completion marker, as a finished build leaves it.
    fn generation(cb: &CodebaseDir, name: &str) -> PathBuf {
        let g = cb.dir.join(name);
        std::fs::create_dir_all(&g).unwrap();
        std::fs::write(g.join(COMPLETE), "").unwrap();
        g
    }

    #[test]
    fn publish_switches_and_retires_the_previous_generation() {
        let (_tmp, home, cb) = home();
        assert!(cb.current().is_none());
        let lock = cb.lock_for_build(Path::new("/repo")).unwrap().unwrap();
        assert!(
            matches!(cb.try_writer_lock().unwrap(), ExistingLock::Busy),
            "lock is exclusive"
        );
        let g1 = cb.new_generation().unwrap();
        cb.publish(&g1, &manifest(Path::new("/repo"))).unwrap();
        assert_eq!(cb.current().unwrap().0, g1);
        // A reader that read CURRENT just before the next publish still finds g1.
        let read_by_a_reader = cb.current_dir().unwrap();
        // An unfinished generation never becomes current, and is removed by the next publish.
        let unfinished = cb.dir.join("gen-0-0");
        std::fs::create_dir_all(&unfinished).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let g2 = cb.new_generation().unwrap();
        cb.publish(&g2, &manifest(Path::new("/repo"))).unwrap();
        assert_eq!(cb.current().unwrap().0, g2);
        assert!(!unfinished.exists());
        assert_eq!(read_by_a_reader, g1);
        assert!(g1.join(COMPLETE).is_file() && g1.join("manifest.json").is_file());
        assert!(g1.join(RETIRED).is_file());
        drop(lock);
        assert!(!cb.writer_busy());
        assert_eq!(home.codebases().len(), 1);
    }

    #[test]
    fn sweep_removes_what_no_reader_needs() {
        let (_tmp, _home, cb) = home();
        cb.ensure(Path::new("/repo")).unwrap();
        let current = generation(&cb, "gen-3-1");
        write_atomic(&cb.dir.join("CURRENT"), b"gen-3-1").unwrap();
        let retired_long_ago = generation(&cb, "gen-1-1");
        retire(&retired_long_ago);
        let retired_recently = generation(&cb, "gen-2-1");
        retire(&retired_recently);
        let complete_unpublished = generation(&cb, "gen-4-1");
        let unfinished = cb.dir.join("gen-5-1");
        std::fs::create_dir_all(&unfinished).unwrap();
        let at = retired_at(&retired_recently).unwrap();
        // "Now" is just past the grace of the first retirement, not of the second.
        std::fs::write(retired_long_ago.join(RETIRED), "").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(retired_long_ago.join(RETIRED))
            .unwrap()
            .set_modified(old)
            .unwrap();
        cb.sweep(at + 1);
        assert_eq!(cb.generations(), ["gen-2-1", "gen-3-1", "gen-4-1"]);
        assert!(current.join(COMPLETE).is_file() && !current.join(RETIRED).exists());
        assert!(complete_unpublished.join(RETIRED).is_file(), "retired now");
        cb.sweep(at + RETIRED_GRACE_MS + 1);
        let left = cb.generations();
        assert!(!left.contains(&"gen-2-1".to_owned()), "{left:?}");
        assert!(left.contains(&"gen-3-1".to_owned()), "{left:?}");
    }

    /// Retired generations in their grace period are bounded by the bytes they hold of their
    /// own, not by their number: generations written whole go early (all but the one retired
    /// last), generations that share their files through hard links stay.
    #[test]
    fn retired_generations_are_bounded_by_size() {
        let (_tmp, _home, cb) = home();
        let _lock = cb.lock_for_build(Path::new("/repo")).unwrap().unwrap();
        // Sparse files: sizes without the disk space.
        let big = |g: &Path, name: &str, len: u64| {
            let f = File::create(g.join(name)).unwrap();
            f.set_len(len).unwrap();
        };
        let whole = 3 * RETIRED_FLOOR_BYTES;
        let mut written = Vec::new();
        for _ in 0..4 {
            let g = cb.new_generation().unwrap();
            big(&g, "table", whole);
            cb.publish(&g, &manifest(Path::new("/repo"))).unwrap();
            written.push(g.file_name().unwrap().to_string_lossy().into_owned());
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        // All four within the grace period, but only the last retired one is kept.
        assert_eq!(cb.generations(), written[2..]);
        // Generations sharing their big file keep only their small files of their own.
        let base = cb.dir.join(&written[3]);
        let mut shared = vec![written[3].clone()];
        for _ in 0..5 {
            let g = cb.new_generation().unwrap();
            std::fs::hard_link(base.join("table"), g.join("table")).unwrap();
            big(&g, "changes", RETIRED_FLOOR_BYTES / 100);
            cb.publish(&g, &manifest(Path::new("/repo"))).unwrap();
            shared.push(g.file_name().unwrap().to_string_lossy().into_owned());
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        assert_eq!(cb.generations(), shared, "the whole one before them went");
        // One more written whole, smaller: every retired generation but the last now holds
        // more of its own than the published one, and goes.
        let g = cb.new_generation().unwrap();
        big(&g, "table", RETIRED_FLOOR_BYTES);
        cb.publish(&g, &manifest(Path::new("/repo"))).unwrap();
        let last = g.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(cb.generations(), [shared[5].clone(), last]);
    }

    /// A derived generation's manifest shares the file list of the one it replaces (a hard
    /// link) and stores the changes since, while they are few; it reads back as written.
    #[cfg(unix)]
    #[test]
    fn a_manifest_shares_its_file_list_while_the_changes_are_few() {
        use std::os::unix::fs::MetadataExt;
        let (_tmp, _home, cb) = home();
        let _lock = cb.lock_for_build(Path::new("/repo")).unwrap().unwrap();
        let entry = |i: usize, hash: &str| ManifestFile {
            path: format!("src/f{i:03}.rs"),
            size: i as u64,
            mtime_ms: 1,
            hash: hash.into(),
            skipped: false,
            unreadable: false,
            too_deep: false,
            reason: None,
        };
        let ino = |g: &Path| std::fs::metadata(g.join(FILES)).unwrap().ino();
        let mut m = manifest(Path::new("/repo"));
        m.file_list = (0..100).map(|i| entry(i, "a")).collect();
        let g1 = cb.new_generation().unwrap();
        cb.publish(&g1, &m).unwrap();
        assert_eq!(Manifest::read(&g1).unwrap(), m);
        // One file changed, one removed, one added: the list is shared.
        m.file_list[3].hash = "b".into();
        m.file_list.remove(7);
        m.file_list.push(entry(200, "a"));
        std::thread::sleep(std::time::Duration::from_millis(2));
        let g2 = cb.new_generation().unwrap();
        cb.publish(&g2, &m).unwrap();
        assert_eq!(Manifest::read(&g2).unwrap(), m);
        assert_eq!(cb.current().unwrap().1, m);
        assert_eq!(ino(&g1), ino(&g2));
        let size = |p: PathBuf| std::fs::metadata(p).unwrap().len();
        assert!(size(g2.join(FILES_DELTA)) * 10 < size(g2.join(FILES)));
        assert!(size(g2.join("manifest.json")) * 10 < size(g2.join(FILES)));
        // Half the files changed: the list is written whole.
        for f in &mut m.file_list[..50] {
            f.hash = "c".into();
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let g3 = cb.new_generation().unwrap();
        cb.publish(&g3, &m).unwrap();
        assert_eq!(Manifest::read(&g3).unwrap(), m);
        assert_ne!(ino(&g2), ino(&g3));
        assert!(!g3.join(FILES_DELTA).exists());
        // A damaged part is reported, by the check as well.
        std::fs::write(g2.join(FILES_DELTA), "{").unwrap();
        assert!(matches!(Manifest::read(&g2), Err(Error::Corrupt { .. })));
        assert!(matches!(Manifest::check(&g2), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn a_lock_on_a_cleared_directory_is_not_taken() {
        let (_tmp, home, cb) = home();
        cb.ensure(Path::new("/repo")).unwrap();
        // A builder opened the lock file, then a clear removed the directory.
        let stale = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(cb.dir.join("writer.lock"))
            .unwrap();
        let ExistingLock::Held(clear_lock) = cb.try_writer_lock().unwrap() else {
            panic!("the lock is free");
        };
        cb.remove().unwrap();
        drop(clear_lock);
        assert!(!cb.dir.exists());
        stale.try_lock().unwrap();
        assert!(
            !same_file(&stale, &cb.dir.join("writer.lock")),
            "the stale lock protects nothing"
        );
        // The builder starts over on a fresh directory and gets a real lock.
        let lock = cb.lock_for_build(Path::new("/repo")).unwrap().unwrap();
        assert!(cb.writer_busy());
        drop(lock);
        assert!(matches!(
            cb.try_writer_lock().unwrap(),
            ExistingLock::Held(_)
        ));
        home.sweep_cleared();
        let left: Vec<_> = std::fs::read_dir(home.indexes_dir()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the recreated codebase directory");
    }

    #[test]
    fn missing_marker_means_no_index() {
        let home = tempfile::tempdir().unwrap();
        let home = Home::new(home.path().to_path_buf());
        let cb = home.codebase(Path::new("/r"));
        cb.ensure(Path::new("/r")).unwrap();
        let g = cb.new_generation().unwrap();
        manifest(Path::new("/r")).write(&g, None).unwrap();
        write_atomic(
            &cb.dir.join("CURRENT"),
            g.file_name().unwrap().to_string_lossy().as_bytes(),
        )
        .unwrap();
        assert!(cb.current().is_none());
    }
}
