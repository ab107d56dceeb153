//! The embedding seam: what turns chunk and query texts into vectors. The index job and
//! search reach a model only through [`Embedder`]; the static model compiled in (or read
//! from a directory or the hub) is one implementation ([`LocalEmbedder`]), and a remote
//! provider (an HTTP embedding API) is another, constructed by its caller and handed to
//! [`Embeddings::provided`](super::Embeddings::provided).
//!
//! An embedder only embeds: batching the texts of a build, running batches concurrently
//! (up to [`Embedder::concurrency`]) and retrying a rate-limited batch are the index job's.

use super::{ModelInfo, Scratch, StaticModel};
pub use crate::error::EmbedError;

/// A model that turns texts into vectors of one dimension.
///
/// Vectors are unit length (cosine = dot product), or zero for a text without anything the
/// model knows. Implementations are shared between threads: `embed` may be called
/// concurrently, up to [`Embedder::concurrency`] calls at once.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// The model's identity, recorded in the fingerprint of every index built with it.
    fn info(&self) -> &ModelInfo;

    /// Length of the vectors.
    fn dim(&self) -> usize {
        self.info().dim
    }

    /// The most texts one [`Embedder::embed`] call takes.
    fn max_batch(&self) -> usize;

    /// How many `embed` calls the index job may run at once.
    fn concurrency(&self) -> usize;

    /// One vector of [`Embedder::dim`] values per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Texts per batch of the local model: enough to amortise a batch's setup, few enough that
/// the batches of one build step spread over every core.
const LOCAL_BATCH: usize = 64;

/// The static model, embedding in-process on the calling thread.
#[derive(Debug)]
pub struct LocalEmbedder {
    model: StaticModel,
    info: ModelInfo,
}

impl LocalEmbedder {
    /// The embedder of `model`, whose identity is `info` (its dimension must be the model's).
    pub fn new(model: StaticModel, info: ModelInfo) -> LocalEmbedder {
        debug_assert_eq!(model.dim(), info.dim);
        LocalEmbedder { model, info }
    }

    /// The model itself (its tokenizer, for callers that look at tokens).
    pub fn model(&self) -> &StaticModel {
        &self.model
    }
}

impl Embedder for LocalEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn max_batch(&self) -> usize {
        LOCAL_BATCH
    }

    /// Embedding is CPU-bound: one batch per core, as many as the build's thread pool has.
    fn concurrency(&self) -> usize {
        rayon::current_num_threads()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() > 1 {
            self.model.prepare_bulk();
        }
        let mut scratch = Scratch::default();
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0.0f32; self.model.dim()];
                self.model.embed_into(text, &mut scratch, &mut v);
                v
            })
            .collect())
    }
}
