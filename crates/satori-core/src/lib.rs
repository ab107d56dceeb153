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
pub use layout::{Fingerprint, Home};
pub use policy::{Policy, RootRefusal, Rule, SecretKind};
pub use state::{
    CodebaseState, IndexState, IndexStatus, Phase, ReindexReason, SkippedFiles, StateFile,
    StateStore,
};
pub use store::{FileRecord, Generation, GenerationStats, GenerationWriter};
pub use symbol::{Symbol, SymbolKind};
pub use util::{hash_parts, hash16, iso8601, now_ms};
pub use walk::{IGNORE_CONTROL_FILES, PathFilter, TreeStamp, looks_binary, to_slash};

/// The loaders of the files an index keeps, on the given bytes (the fuzz target
/// `state_loaders`, crates/satori-fuzz): `state` as the home's state file, `manifest`,
/// `files` and `delta` as a generation's manifest, file list and file-list delta, written
/// under `dir` (an empty slice leaves its file out). Each loader answers with its value or an
/// error; a corrupt state file is set aside and recovered, so reading it again succeeds.
#[doc(hidden)]
pub fn fuzz_loaders(
    dir: &std::path::Path,
    state: &[u8],
    manifest: &[u8],
    files: &[u8],
    delta: &[u8],
) {
    let home = Home::new(dir.join("home"));
    let state_file = home.state_file();
    let _ = std::fs::remove_file(&state_file);
    if !state.is_empty() {
        std::fs::create_dir_all(home.root()).expect("the fuzz folder is writable");
        std::fs::write(&state_file, state).expect("the fuzz folder is writable");
    }
    let store = StateStore::new(home);
    if store.load().is_ok() {
        store
            .load()
            .expect("a state file recovered once reads again");
    }
    layout::fuzz_manifest(&dir.join("generation"), manifest, files, delta);
}
