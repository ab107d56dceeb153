//! The [`Embedder`] of a remote API: one HTTP request per batch, answers turned into typed
//! errors that name the provider and what to change.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use satori_core::embed::{Connect, EmbedError, Embedder, Embeddings, Layer, ModelInfo};
use sha2::{Digest, Sha256};

use crate::config::{Config, Provider};
use crate::{Error, wire};

/// Longest wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for one batch's answer (a local model on a CPU takes a while for a batch).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The text embedded once at connection, to learn the dimension and check key and model
/// before a build starts.
const PROBE: &str = "satori";

/// An embedding API, reached over HTTP(S).
pub struct RemoteEmbedder {
    cfg: Config,
    agent: ureq::Agent,
    info: ModelInfo,
}

impl std::fmt::Debug for RemoteEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEmbedder")
            .field("cfg", &self.cfg)
            .field("info", &self.info)
            .finish()
    }
}

impl RemoteEmbedder {
    /// Connects to the API of `cfg`: one probe request learns the model's dimension, so a
    /// wrong key, an unknown model or an unreachable address fails here, before any build.
    pub fn connect(cfg: Config) -> Result<RemoteEmbedder, Error> {
        let provider = cfg.provider;
        let mut embedder = RemoteEmbedder::unconnected(cfg);
        let probe = |source| Error::Probe { provider, source };
        let dim = embedder
            .call(&[PROBE])
            .map_err(probe)?
            .first()
            .map_or(0, Vec::len);
        if dim == 0 {
            return Err(probe(EmbedError::Unavailable(
                "the model answered an empty vector".into(),
            )));
        }
        if let Some(asked) = embedder.cfg.output_dimension
            && asked != dim
        {
            return Err(Error::Config(format!(
                "EMBEDDING_OUTPUT_DIMENSION={asked}, but {provider} model {} answers vectors of {dim}: set it to {dim} or unset it",
                embedder.cfg.model
            )));
        }
        embedder.info = identity(&embedder.cfg, dim);
        Ok(embedder)
    }

    /// The factory of the engine's embeddings for `cfg`, its vectors cached by text in
    /// `cache_dir`. When the model's dimension is known without asking (`EMBEDDING_OUTPUT_DIMENSION`,
    /// or a model of [`known_dimension`]) nothing is sent until the first text is embedded,
    /// so a server starts without the network; otherwise one probe learns it now.
    /// `layer`, when given, is laid over the connected embedder (a store of vectors shared
    /// with others, asked before the API).
    pub fn embeddings(
        cfg: Config,
        cache_dir: PathBuf,
        layer: Option<Layer>,
    ) -> Result<Embeddings, Error> {
        let declared = cfg
            .output_dimension
            .or_else(|| known_dimension(cfg.provider, &cfg.model));
        let (info, ready) = match declared {
            Some(dim) => (identity(&cfg, dim), None),
            None => {
                let e = RemoteEmbedder::connect(cfg.clone())?;
                (e.info.clone(), Some(Arc::new(e)))
            }
        };
        let dim = info.dim;
        let connect: Connect = Box::new(move || {
            let e: Arc<dyn Embedder> = match &ready {
                Some(e) => e.clone(),
                None => Arc::new(RemoteEmbedder::declared(cfg.clone(), dim)),
            };
            Ok(match &layer {
                Some(layer) => layer(e),
                None => e,
            })
        });
        Ok(Embeddings::remote(info, cache_dir, connect))
    }

    /// The embedder of `cfg`'s model, taken to answer vectors of `dim` values without asking;
    /// the first answer of another length is an error that names the fix.
    pub fn declared(cfg: Config, dim: usize) -> RemoteEmbedder {
        let mut e = RemoteEmbedder::unconnected(cfg);
        e.info = identity(&e.cfg, dim);
        e
    }

    /// The embedder of `cfg` before it knows its model's identity.
    fn unconnected(cfg: Config) -> RemoteEmbedder {
        let agent = agent(CONNECT_TIMEOUT, REQUEST_TIMEOUT);
        RemoteEmbedder {
            cfg,
            agent,
            info: ModelInfo {
                provider: String::new(),
                id: String::new(),
                sha256: String::new(),
                dim: 0,
            },
        }
    }

    /// The configuration this embedder runs with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The raw vectors of `texts`: one request, repeated after a pause that doubles (with
    /// jitter) while the failure is one that passes (the API unreachable or timing out, an
    /// HTTP 500, 502, 503 or 504), at most [`TRANSIENT_ATTEMPTS`] times in all.
    fn call(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut attempt = 1;
        loop {
            match self.request(texts) {
                Err((_, true)) if attempt < TRANSIENT_ATTEMPTS => {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                }
                Err((e, _)) => return Err(e),
                Ok(v) => return Ok(v),
            }
        }
    }

    /// One request: the raw vectors of `texts`, or the API's refusal as a typed error and
    /// whether trying again may help.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, (EmbedError, bool)> {
        let (provider, cfg) = (self.cfg.provider, &self.cfg);
        let req = wire::request(cfg, texts);
        let mut builder = self.agent.post(&req.url).content_type("application/json");
        for (name, value) in &req.headers {
            builder = builder.header(*name, value);
        }
        let mut response = builder.send(&req.body).map_err(|e| {
            let e = EmbedError::Unavailable(format!(
                "{provider} at {} cannot be reached ({e}); check the address and the network",
                cfg.base_url
            ));
            (e, true)
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response.body_mut().read_to_string().map_err(|e| {
            let e =
                EmbedError::Unavailable(format!("{provider}: the answer could not be read ({e})"));
            (e, true)
        })?;
        if status == 200 {
            return wire::vectors(provider, &body, texts.len())
                .map_err(|e| (EmbedError::Unavailable(format!("{provider}: {e}")), false));
        }
        let passes = matches!(status, 500 | 502 | 503 | 504);
        Err((
            refusal(cfg, status, retry_after, &wire::message(&body)),
            passes,
        ))
    }
}

/// The HTTP client of a provider: answers of every status are read (refusals are typed
/// from their bodies), with these limits on connecting and on a whole request.
pub(crate) fn agent(connect: Duration, request: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(connect))
        .timeout_global(Some(request))
        .user_agent(concat!("satori/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

/// Attempts at a request whose failure passes (see [`RemoteEmbedder::call`]).
const TRANSIENT_ATTEMPTS: u32 = 4;
/// The first pause before trying such a request again.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// The pause after failed attempt `n` (1-based): doubling from [`FIRST_BACKOFF`], with up to
/// half of it again as jitter, so that the concurrent batches of a build do not retry in
/// step.
fn backoff(n: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let base = FIRST_BACKOFF * 2u32.pow(n.saturating_sub(1).min(6));
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(n);
    let jitter = h.finish() % (base.as_millis() as u64 / 2 + 1);
    base + Duration::from_millis(jitter)
}

/// The identity recorded in the fingerprint of indexes built with `cfg`'s model answering
/// vectors of `dim` values.
fn identity(cfg: &Config, dim: usize) -> ModelInfo {
    let name = cfg.provider.name().to_ascii_lowercase();
    let key = format!("{name}\n{}\n{dim}", cfg.model);
    ModelInfo {
        id: format!("{name}/{}", cfg.model),
        provider: name,
        sha256: Sha256::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        dim,
    }
}

/// The dimension a provider's model answers by default, for the models users name most
/// (from each provider's model documentation); `None` for the others, whose dimension a
/// probe learns.
pub fn known_dimension(provider: Provider, model: &str) -> Option<usize> {
    let dim = match (provider, model) {
        (Provider::OpenAi, "text-embedding-3-small" | "text-embedding-ada-002") => 1536,
        (Provider::OpenAi, "text-embedding-3-large") => 3072,
        (
            Provider::VoyageAi,
            "voyage-code-3" | "voyage-4-large" | "voyage-4" | "voyage-4-lite" | "voyage-3-large"
            | "voyage-3.5" | "voyage-3.5-lite" | "voyage-3",
        ) => 1024,
        (Provider::VoyageAi, "voyage-code-2") => 1536,
        (Provider::VoyageAi, "voyage-3-lite") => 512,
        (Provider::Gemini, "gemini-embedding-001") => 3072,
        (Provider::Gemini, "text-embedding-004") => 768,
        (Provider::Ollama, "nomic-embed-text" | "nomic-embed-text:latest") => 768,
        (Provider::Ollama, "mxbai-embed-large" | "mxbai-embed-large:latest") => 1024,
        (Provider::Ollama, "all-minilm" | "all-minilm:latest") => 384,
        _ => return None,
    };
    Some(dim)
}

/// The typed error of a refused request.
fn refusal(cfg: &Config, status: u16, retry_after: Option<Duration>, msg: &str) -> EmbedError {
    let p = cfg.provider;
    let lower = msg.to_ascii_lowercase();
    let quota = lower.contains("quota") || lower.contains("billing") || lower.contains("credit");
    let unknown_model = status == 404 || (lower.contains("model") && matches!(status, 400 | 422));
    match status {
        401 | 403 => EmbedError::Auth(format!(
            "{p} refused the key in {} ({msg}); set it to a valid key",
            p.key_var().unwrap_or("the request")
        )),
        // OpenAI answers an exhausted quota with 429 too; waiting does not fix that.
        402 | 429 if quota => EmbedError::Unavailable(format!(
            "{p}: the account's quota is exhausted ({msg}); check its plan and billing"
        )),
        429 => EmbedError::RateLimited { retry_after },
        _ if unknown_model => {
            let fix = match p {
                Provider::Ollama => format!("run `ollama pull {}` or set OLLAMA_MODEL", cfg.model),
                _ => "set EMBEDDING_MODEL to an embedding model it serves".to_string(),
            };
            EmbedError::InvalidInput(format!(
                "{p} does not serve the model '{}' ({msg}); {fix}",
                cfg.model
            ))
        }
        400 | 413 | 422 => EmbedError::InvalidInput(format!("{p} refused the input ({msg})")),
        _ => EmbedError::Unavailable(format!("{p} answered HTTP {status} ({msg})")),
    }
}

impl Embedder for RemoteEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn max_batch(&self) -> usize {
        self.cfg.batch
    }

    fn concurrency(&self) -> usize {
        self.cfg.concurrency
    }

    /// The API's vectors, scaled to unit length (cosine = dot product, as the index
    /// assumes); a vector of another dimension than the probe's is an error.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = self.call(texts)?;
        for v in &mut out {
            if v.len() != self.info.dim {
                return Err(EmbedError::Unavailable(format!(
                    "{} model {} answered a vector of {} values where {} were expected: the model behind the address is another one; set EMBEDDING_OUTPUT_DIMENSION={} (or the model it was) and reindex",
                    self.cfg.provider,
                    self.cfg.model,
                    v.len(),
                    self.info.dim,
                    v.len()
                )));
            }
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|x| *x /= norm);
            }
        }
        Ok(out)
    }
}
