//! Where things live on disk, and how an index is published.
//!
//! ```text
//! $SATORI_HOME/                       default ~/.satori
//!   state.json, state.lock            index states of every tracked codebase (see `state`)
//!   indexes/<key>/                    one codebase; key = hash of its canonical root path
//!     root                            the canonical root path, for recovery
//!     writer.lock                     held by the one process building (or clearing) it
//!     CURRENT                         name of the published generation, replaced atomically
//!     gen-<ms>-<pid>/                 one generation: written once, then read-only
//!       lexical/, chunks.*            the lexical index and chunk table (`lexical`)
//!       vectors/                      reserved for the dense matrix
//!       manifest.json                 fingerprint, options, per-file stats
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
//! engine re-reads `CURRENT` and opens the newer generation. Leases or reference counts would
//! need every reader to write (and a crashed reader to be detected); a grace period costs
//! readers nothing. On Windows an open generation cannot be deleted: the deletion fails and is
//! retried by the next sweep.
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
pub const INDEX_SCHEMA_VERSION: &str = "hybrid_v2";

/// The root of Satori's on-disk state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// `~/.satori` (`$HOME`, `%USERPROFILE%`), else `./.satori`: where state lives when the
    /// caller names no other place.
    pub fn default_location() -> Home {
        let user_home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        Home::new(user_home.join(".satori"))
    }

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

/// How long a retired generation stays on disk for readers that read `CURRENT` before it
/// was replaced (see the module documentation).
pub const RETIRED_GRACE_MS: u64 = 60_000;

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

    /// The name `CURRENT` holds.
    fn current_name(&self) -> Option<String> {
        let name = std::fs::read_to_string(self.dir.join("CURRENT")).ok()?;
        Some(name.trim().to_owned())
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
        manifest.write(gen_dir)?;
        write_atomic(
            &gen_dir.join(COMPLETE),
            manifest.completion_line().as_bytes(),
        )?;
        let name = gen_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let previous = self.current_name();
        write_atomic(&self.dir.join("CURRENT"), name.as_bytes())?;
        if let Some(previous) = previous.filter(|p| *p != name) {
            retire(&self.dir.join(previous));
        }
        self.sweep(now_ms());
        Ok(())
    }

    /// Removes what no reader can need any more (only call with the writer lock held):
    /// generations without `COMPLETE` (killed or failed builds), generations retired more
    /// than [`RETIRED_GRACE_MS`] before `now`. A complete generation that is neither current
    /// nor retired (a crash between its completion and the switch of `CURRENT`) is retired
    /// now. Best effort: what cannot be removed (a file still open on Windows) is retried by
    /// the next sweep.
    pub fn sweep(&self, now: u64) {
        let current = self.current_name();
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
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
                Some(_) => {}
                None => retire(&path),
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

/// Marks a generation retired now (best effort: an unmarked complete generation is retired
/// by the next sweep).
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
    pub vector_backend: String,
    pub schema_version: String,
}

impl Fingerprint {
    /// The fingerprint of indexes built with the model `info` by this version.
    pub fn of(info: &crate::embed::ModelInfo) -> Fingerprint {
        Fingerprint {
            embedding_provider: info.provider.clone(),
            embedding_model: info.fingerprint_model(),
            embedding_dimension: info.dim as u32,
            vector_backend: if info.dim > 0 { "embedded" } else { "none" }.into(),
            schema_version: INDEX_SCHEMA_VERSION.into(),
        }
    }

    /// The fingerprint of this build's embedded default (the bundled model).
    pub fn embedded_default() -> Fingerprint {
        Fingerprint::of(&crate::embed::bundled::info())
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
    pub file_list: Vec<ManifestFile>,
}

impl Manifest {
    fn path(gen_dir: &Path) -> PathBuf {
        gen_dir.join("manifest.json")
    }

    pub fn read(gen_dir: &Path) -> Result<Manifest> {
        let path = Self::path(gen_dir);
        let bytes = std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            what: "manifest",
            path,
            reason: e.to_string(),
        })
    }

    /// Checks that the manifest is there and is well-formed JSON, without building it: a
    /// search does not need its per-file records, which run to megabytes on a large
    /// codebase, and every process that opens the index would pay for them.
    pub fn check(gen_dir: &Path) -> Result<()> {
        let path = Self::path(gen_dir);
        let bytes = std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?;
        serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
            .map(|_| ())
            .map_err(|e| Error::Corrupt {
                what: "manifest",
                path,
                reason: e.to_string(),
            })
    }

    fn write(&self, gen_dir: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self).map_err(|e| Error::Corrupt {
            what: "manifest",
            path: Self::path(gen_dir),
            reason: e.to_string(),
        })?;
        write_atomic(&Self::path(gen_dir), &bytes)
    }

    fn completion_line(&self) -> String {
        format!(
            "files={} chunks={} created_at_ms={} schema={}\n",
            self.files, self.chunks, self.created_at_ms, self.fingerprint.schema_version
        )
    }
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
            file_list: vec![],
        }
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
        manifest(Path::new("/r")).write(&g).unwrap();
        write_atomic(
            &cb.dir.join("CURRENT"),
            g.file_name().unwrap().to_string_lossy().as_bytes(),
        )
        .unwrap();
        assert!(cb.current().is_none());
    }
}
