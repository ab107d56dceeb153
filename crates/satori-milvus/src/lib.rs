//! Milvus (and Zilliz Cloud) as the engine's vector store, behind `satori-core`'s
//! [`VectorBackend`](satori_core::dense::VectorBackend) seam.
//!
//! Each codebase's vectors live in one collection, `<prefix>satori_<codebase id>` (the id is
//! the one naming the codebase's directory under `SATORI_HOME/indexes`, a hash of its
//! canonical path). A row is one chunk's vector: `id` (`<lineage>/<key>`), `lineage`, `key`
//! and `vector`. Chunk keys only grow along a *lineage* (a full build and the syncs derived
//! from it), so a generation's vectors are the rows of its lineage with a key it holds: a
//! search filters by lineage and key range on the server and keeps the keys the generation
//! has, so it never sees half a sync, and a sync that crashed leaves rows no published
//! generation names. The next sync deletes those, the rows of keys its base generation
//! dropped, and every other lineage (older builds).
//!
//! The chunk table, the lexical index and the call graph stay in the generation directory:
//! Milvus holds only what is expensive to recompute, the vectors. With a remote embedding
//! provider, [`SharedVectors`] also keeps every vector the provider gave in a collection per
//! model, by the digest of the text, so that another home (a teammate's machine) indexing the
//! same code embeds only what nobody embedded before.

mod backend;
mod grpc;
mod proto;
mod shared;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use backend::{MilvusBackend, VECTORS_FILE};
pub use grpc::Endpoint;
pub use shared::SharedVectors;

/// What keeps Milvus from serving the backend.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot be used.
    #[error("{0}")]
    Config(String),
    /// The server cannot be reached or stopped answering.
    #[error("{0}")]
    Unavailable(String),
    /// The credentials were refused.
    #[error("{0}")]
    Auth(String),
    /// No collection can be created: the server's or the plan's limit is reached.
    #[error("{0}")]
    CollectionLimit(String),
    /// The codebase's collection holds vectors of another dimension.
    #[error("{0}")]
    Dimension(String),
    /// The server answered something this client cannot use, or refused a request.
    #[error("{0}")]
    Protocol(String),
}

impl From<Error> for satori_core::Error {
    fn from(e: Error) -> satori_core::Error {
        satori_core::Error::Vectors(e.to_string())
    }
}
