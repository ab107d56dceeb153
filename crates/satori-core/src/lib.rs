//! Satori's engine: discover the files of a codebase, cut them into syntax-aware chunks,
//! index them for lexical and dense retrieval, and answer ranked searches.
//!
//! This crate knows nothing of MCP, JSON-RPC, command lines, terminals or Node. It never
//! prints: progress is reported through callbacks and partial failures come back as data.
//!
//! The façade is [`Engine`]: callers index, gate, search, sync and outline through it. The
//! types they exchange with it are re-exported here; four modules are public because their
//! callers compose with more than a few of their items: `embed` (the `Embedder` seam, model
//! sources, the bundled model, the hub), `search` (requests, results, tuning), `graph` (the
//! call graph) and `dense` (the vector backend seam and the embedded matrix, which its
//! benchmark reads directly). Everything else is private to the crate.

mod chunk;
pub mod dense;
pub mod embed;
mod engine;
mod error;
pub mod graph;
mod lang;
mod layout;
mod policy;
pub mod search;
mod state;
mod store;
mod symbol;
mod util;
mod walk;

pub use chunk::{CHUNKING_VERSION, Chunk, ChunkOptions, ChunkedFile, chunk_file};
pub use engine::{
    Backends, Engine, FileKind, HandOff, IndexJob, IndexOptions, IndexSummary, LAYER_MAX_FILES,
    LayerSummary, Preflight, Progress, ProgressFn, Purpose, READ_HEAD_BYTES, ReadLimits,
    ReadPurpose, ReadRefusal, Readable, Refusal, SyncControl, SyncSummary, Target,
};
pub use error::{Error, Result};
pub use lang::Language;
pub use layout::{Fingerprint, Home, fuzz_loaders};
pub use policy::{Policy, RootRefusal, Rule, SecretKind};
pub use state::{
    CodebaseState, IndexState, IndexStatus, Phase, ReindexReason, SkippedFiles, StateFile,
    StateStore,
};
pub use store::{FileRecord, Generation, GenerationStats, GenerationWriter};
pub use symbol::{Symbol, SymbolKind};
pub use util::{hash_parts, hash16, iso8601, now_ms};
pub use walk::{IGNORE_CONTROL_FILES, PathFilter, TreeStamp, looks_binary, to_slash};
