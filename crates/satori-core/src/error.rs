//! The one error type of the engine. Variants carry the context a user needs (usually a path).

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong inside the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A filesystem operation failed on `path`.
    #[error("{op} '{path}': {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path given as a codebase root does not exist.
    #[error("path '{0}' does not exist")]
    NotFound(PathBuf),
    /// The path given as a codebase root is not a directory.
    #[error("path '{0}' is not a directory")]
    NotADirectory(PathBuf),
    /// An on-disk file (state, manifest, index) could not be understood.
    #[error("corrupt {what} at '{path}': {reason}")]
    Corrupt {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// The codebase has no complete index.
    #[error("no complete index for '{0}'")]
    IndexMissing(PathBuf),
    /// The lexical index library failed.
    #[error("lexical index: {0}")]
    Lexical(String),
    /// An ignore pattern or path glob could not be parsed.
    #[error("invalid pattern '{pattern}': {reason}")]
    Pattern { pattern: String, reason: String },
    /// Another process or task is building this codebase's index right now.
    #[error("an index build for '{0}' is already running")]
    Busy(PathBuf),
    /// Changes that only a sync can apply were offered to be layered over a generation.
    #[error("the changes cannot be layered over the index: {0}")]
    NotLayerable(String),
    /// The embedding model could not be obtained or loaded.
    #[error("embedding model: {0}")]
    Model(String),
    /// The vector backend failed, or was handed vectors it cannot take.
    #[error("vector store: {0}")]
    Vectors(String),
    /// The embedder could not embed.
    #[error("{0}")]
    Embed(#[from] EmbedError),
    /// A published generation cannot be read: a file of it is damaged or missing (or the
    /// index library panicked reading it). Only a rebuild repairs it.
    #[error("damaged index file '{file}': {reason}")]
    Damaged { file: PathBuf, reason: String },
    /// The directory cannot be tracked as a codebase (see [`crate::Policy`]).
    #[error("'{root}' cannot be indexed: {refusal}")]
    RefusedRoot {
        root: PathBuf,
        refusal: crate::policy::RootRefusal,
    },
    /// Indexing was cancelled (the codebase was cleared or the process is shutting down).
    #[error("indexing was cancelled")]
    Cancelled,
    /// The scan of the tree could not read part of it. Indexing what was read would make
    /// every unread file look removed, so nothing is published.
    #[error(
        "could not scan all of '{root}' ({count} unreadable path(s), first '{first}': {reason}); \
         nothing was changed. Make them readable, or exclude them with ignorePatterns or \
         .satoriignore"
    )]
    ScanIncomplete {
        root: PathBuf,
        count: usize,
        first: String,
        reason: String,
    },
    /// Writing the index ran out of disk space (the index library reports this only as a
    /// failed writer, so the engine checks the free space itself).
    #[error(
        "no space left on the device holding '{dir}' ({free_bytes} bytes free); nothing was \
         published and the previous index is unchanged. Free some space (or point SATORI_HOME \
         elsewhere) and run the command again"
    )]
    DiskFull { dir: PathBuf, free_bytes: u64 },
    /// The codebase root disappeared or stopped being a directory while it was indexed.
    #[error(
        "'{0}' disappeared or stopped being a directory during indexing; nothing was published"
    )]
    RootVanished(PathBuf),
}

/// Why an embedder could not embed (see `embed::Embedder`). Here, beside [`Error`], which
/// carries it, so that the engine's errors depend on no module of the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The model or service cannot be reached or failed (a network error, a 5xx, a model
    /// that did not load).
    #[error("embedding service unavailable: {0}")]
    Unavailable(String),
    /// The service refuses more requests for now; `retry_after` is when it says to retry.
    #[error("embedding service rate-limited the request{}", retry_hint(.retry_after))]
    RateLimited { retry_after: Option<Duration> },
    /// The service refused the credentials.
    #[error("embedding service refused the credentials: {0}")]
    Auth(String),
    /// The service refused the input (too long, too many texts, malformed).
    #[error("embedding service refused the input: {0}")]
    InvalidInput(String),
}

fn retry_hint(after: &Option<Duration>) -> String {
    match after {
        Some(d) => format!(" (retry after {} ms)", d.as_millis()),
        None => String::new(),
    }
}

/// Engine result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the operation and the path it concerned.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

impl From<tantivy::TantivyError> for Error {
    fn from(e: tantivy::TantivyError) -> Self {
        Error::Lexical(e.to_string())
    }
}
