//! Where things live on disk, and how an index is published.
//!
//! ```text
//! $SATORI_HOME/                       default ~/.satori
//!   state.json, state.lock            index states of every tracked codebase (see `state`)
//!   indexes/<key>/                    one codebase; key = hash of its canonical root path
//!     root                            the canonical root path, for recovery
//!     writer.lock                     held by the one process building a generation
//!     CURRENT                         name of the published generation, replaced atomically
//!     gen-<ms>-<pid>/                 one generation: written once, then read-only
//!       lexical/, chunks.*            the lexical index and chunk table (`lexical`)
//!       vectors/                      reserved for the dense matrix
//!       manifest.json                 fingerprint, options, per-file stats
//!       COMPLETE                      written last: a generation without it never existed
//! ```
//!
//! Readers open the generation named by `CURRENT`; a builder writes a new generation beside it
//! and switches `CURRENT` only once the new one is complete, so readers never see a half-built
//! index and a crash at any point leaves the old index or the new one.

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
            let dir = CodebaseDir { dir: entry.path() };
            if let Ok(root) = std::fs::read_to_string(dir.dir.join("root")) {
                out.push((PathBuf::from(root.trim_end_matches('\n')), dir));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
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

impl CodebaseDir {
    pub fn path(&self) -> &Path {
        &self.dir
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

    /// Takes the writer lock without waiting; `None` when another process or task holds it.
    pub fn try_writer_lock(&self) -> Result<Option<WriterLock>> {
        let path = self.dir.join("writer.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("open", &path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(WriterLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io("lock", &path, e)),
        }
    }

    /// True when some process holds the writer lock right now.
    pub fn writer_busy(&self) -> bool {
        if !self.dir.exists() {
            return false;
        }
        matches!(self.try_writer_lock(), Ok(None))
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
        let name = std::fs::read_to_string(self.dir.join("CURRENT")).ok()?;
        let gen_dir = self.dir.join(name.trim());
        gen_dir.join("COMPLETE").is_file().then_some(gen_dir)
    }

    /// Creates a fresh, empty generation directory (only call with the writer lock held).
    pub fn new_generation(&self) -> Result<PathBuf> {
        let name = format!("gen-{}-{}", now_ms(), std::process::id());
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
        Ok(dir)
    }

    /// Marks `gen_dir` complete, points `CURRENT` at it, and removes every other generation
    /// (only call with the writer lock held). Old generations that a reader still has open
    /// stay readable until closed on Unix; elsewhere their removal is retried next time.
    pub fn publish(&self, gen_dir: &Path, manifest: &Manifest) -> Result<()> {
        manifest.write(gen_dir)?;
        write_atomic(
            &gen_dir.join("COMPLETE"),
            manifest.completion_line().as_bytes(),
        )?;
        let name = gen_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        write_atomic(&self.dir.join("CURRENT"), name.as_bytes())?;
        self.remove_generations_except(Some(&name));
        Ok(())
    }

    /// Deletes generations other than `keep` (unfinished ones included); best effort.
    pub fn remove_generations_except(&self, keep: Option<&str>) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("gen-") && Some(name.as_str()) != keep {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Removes the whole codebase directory.
    pub fn remove(&self) -> Result<()> {
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("remove", &self.dir, e)),
        }
    }
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
            file_list: vec![],
        }
    }

    #[test]
    fn publish_switches_and_cleans() {
        let home = tempfile::tempdir().unwrap();
        let home = Home::new(home.path().to_path_buf());
        let cb = home.codebase(Path::new("/repo"));
        cb.ensure(Path::new("/repo")).unwrap();
        assert!(cb.current().is_none());
        let lock = cb.try_writer_lock().unwrap().unwrap();
        assert!(cb.try_writer_lock().unwrap().is_none(), "lock is exclusive");
        let g1 = cb.new_generation().unwrap();
        cb.publish(&g1, &manifest(Path::new("/repo"))).unwrap();
        assert_eq!(cb.current().unwrap().0, g1);
        // An unfinished generation never becomes current, and is removed by the next publish.
        let unfinished = cb.dir.join("gen-0-0");
        std::fs::create_dir_all(&unfinished).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let g2 = cb.new_generation().unwrap();
        cb.publish(&g2, &manifest(Path::new("/repo"))).unwrap();
        assert_eq!(cb.current().unwrap().0, g2);
        assert!(!g1.exists() && !unfinished.exists());
        drop(lock);
        assert!(!cb.writer_busy());
        assert_eq!(home.codebases().len(), 1);
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
