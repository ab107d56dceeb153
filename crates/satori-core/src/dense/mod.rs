//! The vector seam: how a generation's chunk vectors are written and searched, whatever holds
//! them.
//!
//! A [`VectorBackend`] is what the engine is given by its caller (the `satori` binary picks
//! one; tests pick one too). For each new generation it gives a [`VectorSink`], which takes
//! vectors by *stable chunk key* — a new vector, or the vector an earlier generation holds
//! for a chunk carried over — and, once finished, says where the vectors are
//! ([`VectorStore`], recorded in the manifest). For each opened generation it gives a
//! [`VectorIndex`], which search asks for the top k chunks of an f32 query vector and for
//! the cosines of given chunks, once or twice per query (never per candidate). The index is
//! addressed by the generation's chunk *ordinals*, the positions search works with; a
//! backend that stores vectors by key maps the two through the [`ChunkKeys`] it is opened
//! with.
//!
//! The embedded backend ([`EmbeddedVectors`]) keeps each generation's vectors in the
//! generation directory as the int8 matrix of `matrix` (quantisation, the sketches of `sketch` and the
//! SIMD scan stay inside it). A remote backend (Milvus, say) implements the same traits in a
//! crate of its own, so its client never enters this one.

mod embedded;
mod matrix;
mod sketch;

use std::cmp::Ordering;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Result;

pub use self::embedded::{EmbeddedVectors, VECTORS_DIR};
pub use self::matrix::{DELTA_MATRIX_FILE, DenseIndex, DenseWriter, MATRIX_FILE, quantize};

/// Which backend an index's vectors live in: part of its fingerprint, so that an index built
/// for one backend is rebuilt, not misread, by a process configured with another. Written as
/// a plain string (`"embedded"`, `"none"`, or another backend's name), as fingerprints always
/// held it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum BackendId {
    /// No vectors: lexical search only.
    None,
    /// The int8 matrix in the generation directory ([`EmbeddedVectors`]).
    Embedded,
    /// Another backend, by its name.
    Named(String),
}

impl BackendId {
    pub fn as_str(&self) -> &str {
        match self {
            BackendId::None => "none",
            BackendId::Embedded => "embedded",
            BackendId::Named(name) => name,
        }
    }
}

impl std::fmt::Display for BackendId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for BackendId {
    fn from(s: String) -> BackendId {
        match s.as_str() {
            "none" => BackendId::None,
            "embedded" => BackendId::Embedded,
            _ => BackendId::Named(s),
        }
    }
}

impl From<BackendId> for String {
    fn from(id: BackendId) -> String {
        id.as_str().to_string()
    }
}

/// Where one generation's vectors are, as its manifest records them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "backend")]
pub enum VectorStore {
    /// The int8 matrix in the generation's `vectors/` directory.
    Embedded,
    /// Another backend's: the collection holding them and the generation within it.
    #[serde(rename_all = "camelCase")]
    External {
        name: String,
        collection: String,
        generation: String,
    },
}

/// One scored chunk: its ordinal in the generation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbor {
    pub score: f32,
    pub row: u32,
}

/// Heap order: the worst kept neighbour on top (lower score, then higher row, is worse), so
/// equal scores keep the lower row and results are deterministic.
impl Eq for Neighbor {}
impl Ord for Neighbor {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.row.cmp(&other.row))
    }
}
impl PartialOrd for Neighbor {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A query vector as the embedder gave it (unit length, or zero).
#[derive(Debug, Clone)]
pub struct QueryVector {
    values: Vec<f32>,
}

impl QueryVector {
    pub fn new(v: &[f32]) -> QueryVector {
        QueryVector { values: v.to_vec() }
    }

    /// True for the zero vector (a query without known tokens).
    pub fn is_zero(&self) -> bool {
        self.values.iter().all(|&x| x == 0.0)
    }

    /// The vector as given.
    pub fn values(&self) -> &[f32] {
        &self.values
    }
}

/// What search asks of the vectors of a generation, whose rows are its chunk ordinals.
///
/// Search calls it once or twice per query, never per candidate: a remote store answers
/// each call in one trip.
pub trait VectorIndex: Send + Sync + std::fmt::Debug {
    /// Length of the vectors.
    fn dim(&self) -> usize;
    /// Number of rows (= chunks of the generation).
    fn len(&self) -> usize;
    /// True when there are no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `k` rows most similar to `query`, best first (ties: lower row first).
    fn top_k(&self, query: &QueryVector, k: usize) -> Result<Vec<Neighbor>>;
    /// The cosine of `query` with each of `rows`, in order, appended to `out` (0 for a row
    /// that does not exist).
    fn cosines(&self, query: &QueryVector, rows: &[u32], out: &mut Vec<f32>) -> Result<()>;
    /// The index itself, for the backend that opened it to read it back when it derives the
    /// next generation from it (`None` for a view that no backend derives from).
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// The chunk keys of a generation by ordinal (ascending: ordinal order is key order).
pub trait ChunkKeys: Sync {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The key of the chunk with `ordinal` (below [`ChunkKeys::len`]).
    fn key(&self, ordinal: usize) -> u64;
    /// The ordinal of the chunk with `key`, if the generation has it.
    fn ordinal(&self, key: u64) -> Option<usize>;
}

/// Takes the vectors of a new generation, chunk by chunk in ascending key order, every chunk
/// of the generation once.
pub trait VectorSink: Send {
    /// Stores `vector` (of the sink's dimension) as the vector of the chunk `key`.
    fn put(&mut self, key: u64, vector: &[f32]) -> Result<()>;
    /// Gives the chunk `key` the vector the base generation holds for its chunk `from`: the
    /// same chunk carried over (`from == key`), or a chunk whose embedded text is unchanged.
    fn carry(&mut self, key: u64, from: u64) -> Result<()>;
    /// Makes the vectors durable and says where they are. The generation is published
    /// only after this returns.
    fn finish(self: Box<Self>) -> Result<VectorStore>;
}

/// The generation a sink derives from.
pub struct SinkBase<'a> {
    /// Its directory.
    pub gen_dir: &'a Path,
    /// Its vectors, as this backend opened them.
    pub vectors: &'a dyn VectorIndex,
    /// Its chunk keys.
    pub keys: &'a dyn ChunkKeys,
    /// When the new generation shares the base files of this one (see `store::overlay`):
    /// how many of this one's first ordinals are rows of that shared base. A backend that
    /// writes every generation whole ignores it.
    pub shared: Option<usize>,
}

/// What a backend opens a generation's vectors with.
pub struct OpenSpec<'a> {
    /// The generation's directory.
    pub gen_dir: &'a Path,
    /// Its chunk keys.
    pub keys: &'a dyn ChunkKeys,
    /// When it shares its predecessor's base files: the base rows no longer part of it
    /// (ascending; see `store::overlay`).
    pub dropped: Option<&'a [u32]>,
}

/// A place to keep vectors: the engine's for every generation it writes and opens.
pub trait VectorBackend: Send + Sync + std::fmt::Debug {
    /// The name recorded in the fingerprint.
    fn id(&self) -> BackendId;
    /// A sink for the vectors of `dim` values of the new generation in `gen_dir` (empty but
    /// for what the store writes), derived from `base` when given.
    fn sink<'a>(
        &self,
        gen_dir: &Path,
        dim: usize,
        base: Option<SinkBase<'a>>,
    ) -> Result<Box<dyn VectorSink + 'a>>;
    /// The vectors of a published generation; `None` when it was built without them.
    fn open(&self, spec: OpenSpec<'_>) -> Result<Option<Box<dyn VectorIndex>>>;
    /// The codebase whose generations live in `codebase_dir` is being cleared: drop what the
    /// backend keeps of it outside that directory. Called with the codebase's writer lock
    /// held, before the directory goes; a failure keeps the index, so the clear can be
    /// tried again.
    fn forget(&self, codebase_dir: &Path) -> Result<()> {
        let _ = codebase_dir;
        Ok(())
    }
}
