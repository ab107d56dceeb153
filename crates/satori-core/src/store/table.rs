//! The chunk table: per-chunk and per-file metadata kept in memory, so a reader (search, for
//! its candidates) never reads the document store for it.
//!
//! On disk it is one JSON document (`<gen>/chunks.json`). Chunk `i` of the table has ordinal
//! `i`, which is also the row of the dense matrix under `<gen>/vectors/`, so per-ordinal
//! scores from any retriever can be combined by indexing into plain vectors.
//!
//! Every chunk also has a *key*: a number given once and never reused, carried by its
//! document in the lexical index. Keys let a derived generation keep the previous one's
//! tantivy segments (and delete documents by key) while the table is rewritten compact:
//! the table is sorted by key, so a reader maps a document to its ordinal by key.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chunk::Symbol;
use crate::lang::Language;
use crate::{Error, Result};

/// File name of the table inside a generation directory.
pub const TABLE_FILE: &str = "chunks.json";

/// Bumped whenever the on-disk layout changes incompatibly.
pub const TABLE_VERSION: u32 = 2;

/// One file of the generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub language: Language,
    pub size: u64,
    pub mtime_ms: u64,
    pub indexed_at_ms: u64,
}

/// One chunk of the generation, without its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkEntry {
    /// The chunk's key: unique in this generation and every generation derived from it.
    pub key: u64,
    /// Index into the file table.
    pub file: u32,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<Symbol>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defines: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breadcrumbs: Vec<String>,
    pub content_hash: String,
}

/// The whole table: files, then chunks in ordinal order (which is ascending key order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkTable {
    pub version: u32,
    /// The key the next new chunk gets; above every key this generation or any generation
    /// it was derived from ever used.
    pub next_key: u64,
    pub files: Vec<FileEntry>,
    pub chunks: Vec<ChunkEntry>,
}

impl ChunkTable {
    /// Writes the table durably (temporary file, fsync, rename).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self).map_err(|e| Error::Corrupt {
            what: "chunk table",
            path: dir.join(TABLE_FILE),
            reason: e.to_string(),
        })?;
        crate::util::write_atomic(&dir.join(TABLE_FILE), &bytes)
    }

    /// Reads and checks the table of a generation.
    pub fn load(dir: &Path) -> Result<ChunkTable> {
        let path = dir.join(TABLE_FILE);
        let bytes = std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?;
        let corrupt = |reason: String| Error::Corrupt {
            what: "chunk table",
            path: path.clone(),
            reason,
        };
        let table: ChunkTable =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if table.version != TABLE_VERSION {
            return Err(corrupt(format!(
                "version {} (expected {TABLE_VERSION})",
                table.version
            )));
        }
        let files = table.files.len();
        if let Some(bad) = table.chunks.iter().position(|c| c.file as usize >= files) {
            return Err(corrupt(format!("chunk {bad} points to a missing file")));
        }
        let ascending = table.chunks.windows(2).all(|w| w[0].key < w[1].key);
        if !ascending || table.chunks.last().is_some_and(|c| c.key >= table.next_key) {
            return Err(corrupt(
                "chunk keys are not ascending below the next key".into(),
            ));
        }
        Ok(table)
    }
}
