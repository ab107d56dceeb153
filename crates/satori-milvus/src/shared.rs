//! Vectors a remote model gave, shared through Milvus by everyone who embeds with that model:
//! one collection per model identity, `<prefix>satori_texts_<model sha16>`, rows keyed by the
//! digest of the text embedded. An [`Embedder`] layered over the provider's asks it first,
//! so a teammate (another machine, another `SATORI_HOME`) who indexes a codebase someone has
//! already indexed embeds only the chunks nobody has embedded yet.
//!
//! The layer is a saving, never a dependency: when Milvus cannot answer, the provider embeds
//! and the build goes on.

use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};

use satori_core::embed::{EmbedError, Embedder, ModelInfo};

use crate::grpc::Client;
use crate::proto::{self, FieldData, kv};
use crate::store::{self, Collection};

/// Digests per lookup.
const LOOKUP: usize = 512;

/// The provider's embedder, asking Milvus before it asks the provider.
pub struct SharedVectors {
    inner: Arc<dyn Embedder>,
    collection: Collection,
    ready: OnceLock<bool>,
}

impl std::fmt::Debug for SharedVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedVectors")
            .field("inner", &self.inner)
            .field("collection", &self.collection.name)
            .finish()
    }
}

/// The hex digest a text is stored under.
fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The collection shared by every index built with the model `info`.
pub fn collection_name(prefix: &str, info: &ModelInfo) -> String {
    let sha = &info.sha256[..info.sha256.len().min(16)];
    format!("{prefix}satori_texts_{sha}_{}", info.dim)
}

impl SharedVectors {
    pub(crate) fn new(inner: Arc<dyn Embedder>, client: Arc<Client>, prefix: &str) -> Self {
        let name = collection_name(prefix, inner.info());
        SharedVectors {
            inner,
            collection: Collection { client, name },
            ready: OnceLock::new(),
        }
    }

    /// Whether the collection is there (created on first use).
    fn ready(&self) -> bool {
        *self.ready.get_or_init(|| self.create().is_ok())
    }

    fn create(&self) -> Result<(), crate::Error> {
        self.collection.ensure_with(self.inner.dim(), |dim| {
            shared_schema(&self.collection.name, dim)
        })
    }

    /// The stored vectors of `digests`, by digest.
    fn lookup(&self, digests: &[String]) -> std::collections::HashMap<String, Vec<f32>> {
        let mut found = std::collections::HashMap::new();
        let dim = self.inner.dim();
        for batch in digests.chunks(LOOKUP) {
            let list: Vec<String> = batch.iter().map(|d| format!("\"{d}\"")).collect();
            let req = proto::QueryRequest {
                collection_name: self.collection.name.clone(),
                expr: format!("id in [{}]", list.join(",")),
                output_fields: vec!["id".into(), "vector".into()],
                query_params: vec![],
                // A vector stored a moment ago and not yet seen costs one embedding.
                consistency_level: proto::CONSISTENCY_BOUNDED,
            };
            let Ok(r) = self
                .collection
                .client
                .call::<_, proto::QueryResults>("Query", &req)
            else {
                return found;
            };
            if r.status.as_ref().is_some_and(|s| !s.ok()) {
                return found;
            }
            if let Ok(rows) = store::rows(&r.fields_data, "id", FieldData::as_strings, dim) {
                for (id, v) in rows {
                    found.insert(id.clone(), v.to_vec());
                }
            }
        }
        found
    }

    /// Stores new vectors; a failure loses the saving only.
    fn store(&self, digests: Vec<String>, vectors: &[Vec<f32>]) {
        let dim = self.inner.dim();
        let mut values = Vec::with_capacity(vectors.len() * dim);
        for v in vectors {
            values.extend_from_slice(v);
        }
        let req = proto::InsertRequest {
            collection_name: self.collection.name.clone(),
            num_rows: digests.len() as u32,
            fields_data: vec![
                FieldData::strings("id", digests),
                FieldData::floats("vector", dim, values),
            ],
        };
        let _ = self
            .collection
            .client
            .call::<_, proto::MutationResult>("Insert", &req);
    }
}

/// The schema of a shared collection: the text's digest and its vector.
fn shared_schema(name: &str, dim: usize) -> proto::CollectionSchema {
    let field = |n: &str, data_type: i32, params: Vec<proto::KeyValuePair>| {
        proto::FieldSchema::new(n, data_type, params, n == "id")
    };
    proto::CollectionSchema {
        name: name.into(),
        description:
            "Satori: vectors of embedded texts, by digest, shared by every index of one model"
                .into(),
        fields: vec![
            field(
                "id",
                proto::data_type::VARCHAR,
                vec![kv("max_length", "32")],
            ),
            field(
                "vector",
                proto::data_type::FLOAT_VECTOR,
                vec![kv("dim", dim.to_string())],
            ),
        ],
    }
}

impl Embedder for SharedVectors {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }

    fn concurrency(&self) -> usize {
        self.inner.concurrency()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if !self.ready() {
            return self.inner.embed(texts);
        }
        let digests: Vec<String> = texts.iter().map(|t| digest(t)).collect();
        let found = self.lookup(&digests);
        let missing: Vec<usize> = (0..texts.len())
            .filter(|&i| !found.contains_key(&digests[i]))
            .collect();
        let mut fresh: Vec<Vec<f32>> = Vec::new();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            fresh = self.inner.embed(&asked)?;
            // Each digest once, though a batch may hold a text twice.
            let mut seen = std::collections::HashSet::new();
            let (ids, vectors): (Vec<String>, Vec<Vec<f32>>) = missing
                .iter()
                .zip(&fresh)
                .filter(|(i, _)| seen.insert(digests[**i].clone()))
                .map(|(&i, v)| (digests[i].clone(), v.clone()))
                .unzip();
            self.store(ids, &vectors);
        }
        let mut fresh = fresh.into_iter();
        let mut out = Vec::with_capacity(texts.len());
        for (i, d) in digests.iter().enumerate() {
            match found.get(d) {
                Some(v) => out.push(v.clone()),
                None => {
                    debug_assert!(missing.binary_search(&i).is_ok());
                    out.push(fresh.next().unwrap_or_default());
                }
            }
        }
        Ok(out)
    }
}
