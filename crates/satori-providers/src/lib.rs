//! Remote embedding providers behind `satori-core`'s [`Embedder`] seam: OpenAI and any
//! OpenAI-compatible API, VoyageAI, Gemini and Ollama, configured by the environment
//! variables the original Satori's users already have in their MCP configurations
//! (`EMBEDDING_PROVIDER`, `EMBEDDING_MODEL`, `OPENAI_API_KEY`, ...; see [`Config::from_env`]);
//! and VoyageAI's rerank API behind its [`Reranker`](satori_core::search::rerank::Reranker)
//! seam ([`VoyageReranker`]).
//!
//! A provider only embeds. The index job batches a build's texts to
//! [`Embedder::max_batch`], runs up to [`Embedder::concurrency`] batches at once and waits
//! out a rate-limited batch; this crate turns each API's answers into typed
//! [`EmbedError`]s that name the provider and the fix. Keys are sent in headers only, never
//! in a URL, and never appear in an error or a `Debug` rendering.

mod config;
mod remote;
mod rerank;
mod wire;

pub use config::{Config, Provider};
pub use remote::{RemoteEmbedder, known_dimension};
pub use rerank::{VOYAGE_RERANK_MODELS, VoyageReranker};
pub use satori_core::embed::{EmbedError, Embedder};

/// What stops a provider from being configured or reached before any text is embedded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The environment names an unknown provider, or a value that cannot be used.
    #[error("{0}")]
    Config(String),
    /// The probe that learns the model's dimension failed.
    #[error("{provider}: {source}")]
    Probe {
        provider: Provider,
        #[source]
        source: EmbedError,
    },
}
