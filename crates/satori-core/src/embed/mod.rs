//! Embeddings: which model turns chunks and queries into vectors, how it is obtained, and
//! the identity (id, hash, dimension) that binds an index to it.
//!
//! The default is a static model distilled from all-MiniLM-L6-v2 and compiled into the
//! binary, so indexing needs no network and no download. Any model2vec-format model can be
//! used instead from a directory, or fetched from the Hugging Face hub at a pinned revision
//! with sha256 verification (`hub`). Whatever the source, the index job and search embed
//! through the [`Embedder`] trait ([`Embeddings::embedder`]); a caller can hand over an
//! embedder of its own (a remote provider) with [`Embeddings::provided`].

pub mod bundled;
mod cache;
mod embedder;
pub mod hub;
mod piece_table;
mod safetensors;
mod static_model;
mod wordpiece;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use self::cache::CachedEmbedder;
pub use self::embedder::{EmbedError, Embedder, LocalEmbedder};
pub use self::static_model::{ModelError, ModelFiles, Scratch, StaticModel};
pub use self::wordpiece::split_camel;

/// Where the embedding model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// The static model compiled into the binary.
    Bundled,
    /// A model2vec-format directory.
    Dir(PathBuf),
    /// A model on the Hugging Face hub, pinned to a commit (downloaded once into the cache).
    Hub(hub::HubRef),
    /// No dense retrieval: lexical search only.
    Disabled,
    /// An embedder its caller constructed (see [`Embeddings::provided`]); never parsed.
    Provided,
}

impl ModelSource {
    /// Parses `SATORI_EMBEDDING_MODEL`: empty or `bundled`, `none`, `hf:<org>/<name>@<commit>`,
    /// or a directory path.
    pub fn parse(value: &str) -> Result<ModelSource, ModelError> {
        let v = value.trim();
        match v {
            "" | "bundled" | "default" => Ok(ModelSource::Bundled),
            "none" | "off" => Ok(ModelSource::Disabled),
            _ if v.starts_with("hf:") => Ok(ModelSource::Hub(hub::HubRef::parse(v)?)),
            _ => {
                let p = PathBuf::from(v);
                if !p.is_dir() {
                    return Err(ModelError(format!(
                        "'{v}' is not a directory; expected a model2vec model directory \
                         (model.safetensors, tokenizer.json, config.json), 'hf:<org>/<name>@<commit>', \
                         'bundled' or 'none'"
                    )));
                }
                Ok(ModelSource::Dir(p))
            }
        }
    }
}

/// The identity of a model, recorded in every index built with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// `embedded` (bundled), `local` (a directory), `huggingface`, or `none`.
    pub provider: String,
    /// A readable id, e.g. `satori-static-minilm-l6`.
    pub id: String,
    /// sha256 (hex) of the model's files (embeddings, then tokenizer).
    pub sha256: String,
    pub dim: usize,
}

impl ModelInfo {
    /// `id@sha256:<first 16 hex>`: what the index fingerprint stores as the model.
    pub fn fingerprint_model(&self) -> String {
        if self.provider == "none" {
            return "none".into();
        }
        format!(
            "{}@sha256:{}",
            self.id,
            &self.sha256[..self.sha256.len().min(16)]
        )
    }
}

/// The text embedded for a chunk: its path (file names carry meaning: `retry.rs`,
/// `auth/refresh.py`) then its content.
pub fn chunk_text(path: &str, content: &str, out: &mut String) {
    out.clear();
    out.push_str(path);
    out.push('\n');
    out.push_str(content);
}

/// The factory of the engine's [`Embedder`]: a model source with the model loaded on first
/// use (starting the server must not wait for a model that a `tools/list` never needs), or
/// an embedder handed over ready.
#[derive(Debug)]
pub struct Embeddings {
    source: ModelSource,
    hub: hub::HubOptions,
    info: ModelInfo,
    loaded: OnceLock<Result<Arc<dyn Embedder>, ModelError>>,
    remote: Option<Remote>,
}

/// How a remote embedder is reached: called on first use, and again after a failure (the
/// network may be back).
pub type Connect = Box<dyn Fn() -> Result<Arc<dyn Embedder>, ModelError> + Send + Sync>;

/// What a caller lays over a connected embedder (a shared store of vectors, say) before the
/// disk cache.
pub type Layer = Box<dyn Fn(Arc<dyn Embedder>) -> Arc<dyn Embedder> + Send + Sync>;

/// An embedder connected on first use, its answers kept in a [`CachedEmbedder`].
struct Remote {
    connect: Connect,
    cache_dir: PathBuf,
    connected: Mutex<Option<Arc<dyn Embedder>>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("cache_dir", &self.cache_dir)
            .finish_non_exhaustive()
    }
}

impl Remote {
    fn get(&self, info: &ModelInfo) -> Result<Arc<dyn Embedder>, ModelError> {
        let mut connected = self.connected.lock().unwrap();
        if let Some(e) = connected.as_ref() {
            return Ok(Arc::clone(e));
        }
        let inner = (self.connect)()?;
        if inner.info().sha256 != info.sha256 || inner.dim() != info.dim {
            return Err(ModelError(format!(
                "the model answers vectors of {} values as {}, but indexes here are built for {} values as {}",
                inner.dim(),
                inner.info().id,
                info.dim,
                info.id
            )));
        }
        // The cache is a saving: without it the embedder still embeds.
        let embedder: Arc<dyn Embedder> =
            match CachedEmbedder::open(Arc::clone(&inner), &self.cache_dir) {
                Ok(cached) => Arc::new(cached),
                Err(_) => inner,
            };
        *connected = Some(Arc::clone(&embedder));
        Ok(embedder)
    }
}

impl Embeddings {
    /// Resolves the identity of the model of `source` (cheap for the bundled model; hashes
    /// the files of a directory; reads the pin of a hub model and, when it is not cached yet,
    /// downloads it).
    pub fn new(
        source: ModelSource,
        cache_dir: &Path,
        hub: hub::HubOptions,
    ) -> Result<Embeddings, ModelError> {
        let info = match &source {
            ModelSource::Bundled => bundled::info(),
            ModelSource::Disabled => disabled_info(),
            ModelSource::Dir(dir) => dir_info(dir, "local")?,
            ModelSource::Hub(r) => {
                let dir = hub::ensure(r, cache_dir, &hub)?;
                let mut info = dir_info(&dir, "huggingface")?;
                info.id = r.id();
                info
            }
            ModelSource::Provided => {
                return Err(ModelError(
                    "a provided embedder is handed over with Embeddings::provided".into(),
                ));
            }
        };
        Ok(Embeddings {
            source,
            hub,
            info,
            loaded: OnceLock::new(),
            remote: None,
        })
    }

    /// The factory of an embedder its caller constructed (a remote provider); its
    /// [`Embedder::info`] is the identity recorded in the fingerprint.
    pub fn provided(embedder: Arc<dyn Embedder>) -> Embeddings {
        let info = embedder.info().clone();
        Embeddings {
            source: ModelSource::Provided,
            hub: hub::HubOptions::default(),
            info,
            loaded: OnceLock::from(Ok(embedder)),
            remote: None,
        }
    }

    /// The factory of a remote embedder whose identity `info` is known before it is reached
    /// (so that starting a server needs no network): `connect` is called on first use, and
    /// again after it failed; what it connects to must answer as `info` says. Its vectors
    /// are cached by text in `cache_dir` (see [`CachedEmbedder`]).
    pub fn remote(info: ModelInfo, cache_dir: PathBuf, connect: Connect) -> Embeddings {
        Embeddings {
            source: ModelSource::Provided,
            hub: hub::HubOptions::default(),
            info,
            loaded: OnceLock::new(),
            remote: Some(Remote {
                connect,
                cache_dir,
                connected: Mutex::new(None),
            }),
        }
    }

    /// Lexical-only configuration.
    pub fn disabled() -> Embeddings {
        Embeddings {
            source: ModelSource::Disabled,
            hub: hub::HubOptions::default(),
            info: disabled_info(),
            loaded: OnceLock::new(),
            remote: None,
        }
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn source(&self) -> &ModelSource {
        &self.source
    }

    /// False when dense retrieval is switched off.
    pub fn enabled(&self) -> bool {
        self.source != ModelSource::Disabled
    }

    /// The embedder, loading its model on first use.
    pub fn embedder(&self, cache_dir: &Path) -> Result<Arc<dyn Embedder>, ModelError> {
        if let Some(remote) = &self.remote {
            return remote.get(&self.info);
        }
        self.loaded
            .get_or_init(|| {
                let model = match &self.source {
                    ModelSource::Bundled => bundled::load()?,
                    ModelSource::Dir(dir) => load_dir(dir)?,
                    ModelSource::Hub(r) => load_dir(&hub::ensure(r, cache_dir, &self.hub)?)?,
                    ModelSource::Disabled => {
                        return Err(ModelError("dense retrieval is disabled".into()));
                    }
                    // Set when it was constructed.
                    ModelSource::Provided => {
                        return Err(ModelError("no embedder was provided".into()));
                    }
                };
                if model.dim() != self.info.dim {
                    return Err(ModelError(format!(
                        "the model changed on disk: dimension {} instead of {}",
                        model.dim(),
                        self.info.dim
                    )));
                }
                let embedder: Arc<dyn Embedder> =
                    Arc::new(LocalEmbedder::new(model, self.info.clone()));
                Ok(embedder)
            })
            .clone()
    }
}

fn disabled_info() -> ModelInfo {
    ModelInfo {
        provider: "none".into(),
        id: "none".into(),
        sha256: String::new(),
        dim: 0,
    }
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, ModelError> {
    let p = dir.join(name);
    std::fs::read(&p).map_err(|e| ModelError(format!("cannot read '{}': {e}", p.display())))
}

/// Loads a model2vec directory.
pub fn load_dir(dir: &Path) -> Result<StaticModel, ModelError> {
    let st = read(dir, "model.safetensors")?;
    let tok = read(dir, "tokenizer.json")?;
    let config = read(dir, "config.json").ok();
    StaticModel::load(ModelFiles {
        safetensors: &st,
        tokenizer: &tok,
        config: config.as_deref(),
    })
    .map_err(|e| ModelError(format!("model in '{}': {e}", dir.display())))
}

/// The identity of a model directory: its files' hash and, from the safetensors header,
/// its dimension (the weights themselves are read only when the model is loaded).
fn dir_info(dir: &Path, provider: &str) -> Result<ModelInfo, ModelError> {
    let st = read(dir, "model.safetensors")?;
    let tok = read(dir, "tokenizer.json")?;
    let config = std::fs::read(dir.join("config.json")).unwrap_or_default();
    let dim = safetensors::SafeTensors::parse(&st)
        .ok()
        .and_then(|s| s.get("embeddings").and_then(|t| t.shape.get(1).copied()))
        .ok_or_else(|| {
            ModelError(format!(
                "'{}' has no readable 'embeddings' matrix",
                dir.join("model.safetensors").display()
            ))
        })?;
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    Ok(ModelInfo {
        provider: provider.into(),
        id,
        sha256: files_sha256(&st, &tok, &config),
        dim,
    })
}

/// sha256 over the embeddings file, the tokenizer and the config (which can change the
/// preprocessing), each prefixed by its length; a missing config counts as empty.
pub fn files_sha256(safetensors: &[u8], tokenizer: &[u8], config: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [safetensors, tokenizer, config] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    crate::util::hex(&h.finalize())
}
