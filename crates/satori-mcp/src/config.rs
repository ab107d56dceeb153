//! Server configuration read once from the environment.

use std::path::PathBuf;
use std::sync::Arc;

use satori_core::dense::EmbeddedVectors;
use satori_core::embed::Embeddings;
use satori_core::{Backends, Engine, Home, Policy};

use satori_core::embed::ModelSource;
use satori_core::embed::hub::HubOptions;
use satori_core::search::{SearchTuning, Weights};
use satori_protocol::env;

use crate::guard::GuardMode;

/// `SATORI_RUN_MODE`: a long-running agent server, or the on-demand child of `satori-cli`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    Mcp,
    Cli,
}

/// Everything the server reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    pub run_mode: RunMode,
    pub guard: GuardMode,
    /// `SATORI_HOME` (default `~/.satori`).
    pub home: PathBuf,
    /// `READ_FILE_MAX_LINES` (default 1000).
    pub read_max_lines: usize,
    /// `READ_FILE_MAX_BYTES` (default 1 MiB): the most `read_file` returns in one call.
    pub read_max_bytes: usize,
    /// `SATORI_ALLOW_SECRETS=true` lifts the secrets rules of the indexer and `read_file`.
    pub allow_secrets: bool,
    /// The user's home directory (`HOME`, `USERPROFILE`), refused as a codebase root.
    pub user_home: Option<PathBuf>,
    /// `SATORI_READ_ANY_FILE=true` lifts the confinement of `read_file` to tracked roots.
    pub read_any_file: bool,
    /// `SATORI_SYNC_THRESHOLD_MS`: a search re-checks the tree when the last check is older
    /// (default 3 minutes).
    pub sync_threshold_ms: u64,
    /// `MCP_ENABLE_WATCHER` (default on) and `MCP_WATCH_DEBOUNCE_MS` (default 5 s):
    /// whether, and after how quiet a pause, the watcher syncs a codebase whose files
    /// changed. Only in `mcp` mode.
    pub watch: Option<std::time::Duration>,
    /// `SATORI_RECONCILE_INTERVAL_MS` (default 3 minutes, `0` = off): how often every indexed
    /// codebase is synced in the background, catching what the watcher missed. Only in
    /// `mcp` mode.
    pub reconcile_every: Option<std::time::Duration>,
    /// `SATORI_EMBEDDING_MODEL`: the bundled static model (default), a model2vec directory,
    /// a pinned hub model, or `none` for lexical search only.
    pub embedding: ModelSource,
    /// `EMBEDDING_PROVIDER` and its variables (`satori_providers::Config::from_env`): a
    /// remote embedding API instead of `embedding`.
    pub provider: Option<satori_providers::Config>,
    /// `SATORI_RERANKER` and `VOYAGEAI_API_KEY` (+ `VOYAGEAI_RERANKER_MODEL`,
    /// `VOYAGEAI_BASE_URL`): the reranker of searches, used by default (a request's
    /// `useReranker: false` turns it off): VoyageAI's rerank API when its key is set, the
    /// local late-interaction reranker with `SATORI_RERANKER=local`, none with `off`.
    pub reranker: Option<Arc<dyn satori_core::search::rerank::Reranker>>,
    /// `MILVUS_ADDRESS` (+ `MILVUS_TOKEN`, `SATORI_MILVUS_PREFIX`): vectors in Milvus or
    /// Zilliz Cloud instead of the generation directory.
    pub milvus: Option<(satori_milvus::Endpoint, String)>,
    /// `SATORI_MAX_CHUNKS`: the most chunks one codebase's index holds (default 450,000).
    pub max_chunks: Option<u64>,
    /// `SATORI_HF_ENDPOINT` (hub address) and `SATORI_OFFLINE` (never download), for hub
    /// models.
    pub hub: HubOptions,
    /// `SATORI_SEARCH_ABLATION`: switches that turn parts of the ranking pipeline off, for
    /// measuring what each contributes (default: everything on); `SATORI_SEARCH_WEIGHTS`:
    /// ranking weights to change (default: none).
    pub tuning: SearchTuning,
    /// `SATORI_PREOPEN`: a path about to be searched, whose index is opened at start.
    pub preopen: Option<PathBuf>,
    /// `SATORI_TELEMETRY=stderr` (default) or `off`: whether each search writes its
    /// `[TELEMETRY]` line to stderr. Off for a library that shares its caller's stderr.
    pub telemetry_stderr: bool,
}

/// A configuration value that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("invalid {name}='{value}': {expected}")]
pub struct ConfigError {
    pub name: &'static str,
    pub value: String,
    pub expected: String,
}

impl Config {
    /// The engine this configuration describes, with its model loading in the background.
    /// Fails when the embedding model cannot be identified (an unreadable model directory,
    /// a hub model that cannot be downloaded or verified).
    pub fn engine(&self) -> Result<Arc<Engine>, String> {
        let home = Home::new(self.home.clone());
        let milvus = match &self.milvus {
            Some((endpoint, prefix)) => Some(Arc::new(
                satori_milvus::MilvusBackend::new(endpoint.clone(), prefix)
                    .map_err(|e| format!("Milvus: {e}"))?,
            )),
            None => None,
        };
        let embeddings = match &self.provider {
            Some(cfg) => {
                // With Milvus, a provider's vectors are shared with every home that embeds
                // with the same model.
                let layer = milvus
                    .clone()
                    .map(|m| Box::new(move |e| m.share(e)) as satori_core::embed::Layer);
                satori_providers::RemoteEmbedder::embeddings(
                    cfg.clone(),
                    home.embed_cache_dir(),
                    layer,
                )
                .map_err(|e| format!("embedding provider: {e}"))?
            }
            None => Embeddings::new(self.embedding.clone(), &home.models_dir(), self.hub.clone())
                .map_err(|e| format!("embedding model: {e}"))?,
        };
        let policy = Policy::new(self.user_home.as_deref(), self.allow_secrets);
        // The vector backend is the binary's choice: the embedded matrix in each generation
        // directory, or Milvus when an address is configured.
        let vectors: Arc<dyn satori_core::dense::VectorBackend> = match milvus {
            Some(m) => m,
            None => Arc::new(EmbeddedVectors),
        };
        let backends = Backends {
            embeddings: Arc::new(embeddings),
            vectors,
        };
        let mut engine = Engine::new(home, backends, self.tuning).with_policy(policy);
        if let Some(reranker) = &self.reranker {
            engine = engine.with_reranker(reranker.clone(), true);
        }
        if let Some(limit) = self.max_chunks {
            engine = engine.with_chunk_limit(limit);
        }
        let engine = Arc::new(engine);
        engine.preload_model();
        Ok(engine)
    }

    /// Reads the configuration; unknown values are errors, not silent defaults.
    pub fn from_env() -> Result<Config, ConfigError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let run_mode = match var(env::RUN_MODE).as_deref().map(str::trim) {
            None | Some("mcp") => RunMode::Mcp,
            Some("cli") => RunMode::Cli,
            Some(other) => {
                return Err(ConfigError {
                    name: env::RUN_MODE,
                    value: other.into(),
                    expected: "expected 'mcp' or 'cli'".into(),
                });
            }
        };
        let guard = match run_mode {
            // A long-running server keeps stray output visible on stderr.
            RunMode::Mcp => GuardMode::Redirect,
            RunMode::Cli => match var(env::CLI_STDOUT_GUARD) {
                None => GuardMode::Drop,
                Some(v) => GuardMode::parse(&v).ok_or(ConfigError {
                    name: env::CLI_STDOUT_GUARD,
                    value: v,
                    expected: "expected 'drop', 'redirect' or 'off'".into(),
                })?,
            },
        };
        let positive = |name: &'static str, default: usize, expected: &str| match var(name) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(ConfigError {
                    name,
                    value: v,
                    expected: expected.into(),
                }),
        };
        let read_max_lines = positive(
            env::READ_FILE_MAX_LINES,
            1000,
            "expected a positive integer",
        )?;
        let read_max_bytes = positive(
            env::READ_FILE_MAX_BYTES,
            1024 * 1024,
            "expected a positive integer (bytes)",
        )?;
        // A switch is on when set to `true`, `1` or `yes` (any case).
        let flag = |name: &str| {
            var(name).is_some_and(|v| {
                matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes")
            })
        };
        let allow_secrets = flag(env::ALLOW_SECRETS);
        // The operating system's names for the user's home, not Satori settings.
        let user_home = ["HOME", "USERPROFILE"]
            .iter()
            .find_map(|n| std::env::var_os(n).filter(|v| !v.is_empty()))
            .map(PathBuf::from);
        let sync_threshold_ms = match var(env::SYNC_THRESHOLD_MS) {
            None => 180_000,
            Some(v) => v.trim().parse::<u64>().map_err(|_| ConfigError {
                name: env::SYNC_THRESHOLD_MS,
                value: v,
                expected: "expected a non-negative integer".into(),
            })?,
        };
        let millis = |name: &'static str, default: u64| match var(name) {
            None => Ok(default),
            Some(v) => v.trim().parse::<u64>().map_err(|_| ConfigError {
                name,
                value: v,
                expected: "expected a non-negative integer (milliseconds)".into(),
            }),
        };
        let watcher_on = match var(env::ENABLE_WATCHER) {
            None => true,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => true,
                "false" | "0" | "no" => false,
                _ => {
                    return Err(ConfigError {
                        name: env::ENABLE_WATCHER,
                        value: v,
                        expected: "expected 'true' or 'false'".into(),
                    });
                }
            },
        };
        let debounce = millis(env::WATCH_DEBOUNCE_MS, 5_000)?;
        let reconcile = millis(env::RECONCILE_INTERVAL_MS, 180_000)?;
        // A CLI's server lives for one call: it watches nothing and syncs only on demand.
        let long_running = run_mode == RunMode::Mcp;
        let watch =
            (long_running && watcher_on).then(|| std::time::Duration::from_millis(debounce));
        let reconcile_every =
            (long_running && reconcile > 0).then(|| std::time::Duration::from_millis(reconcile));
        let read_any_file = flag(env::READ_ANY_FILE);
        let embedding = match var(env::EMBEDDING_MODEL) {
            None => ModelSource::Bundled,
            Some(v) => ModelSource::parse(&v).map_err(|e| ConfigError {
                name: env::EMBEDDING_MODEL,
                value: v,
                expected: e.0,
            })?,
        };
        let provider = satori_providers::Config::from_env(|name| std::env::var(name).ok())
            .map_err(|e| ConfigError {
                name: "EMBEDDING_PROVIDER",
                value: var("EMBEDDING_PROVIDER").unwrap_or_default(),
                expected: e.to_string(),
            })?;
        if let Some(p) = &provider
            && embedding != ModelSource::Bundled
        {
            return Err(ConfigError {
                name: env::EMBEDDING_MODEL,
                value: var(env::EMBEDDING_MODEL).unwrap_or_default(),
                expected: format!(
                    "EMBEDDING_PROVIDER={} already chooses the model; unset one of the two",
                    p.provider
                ),
            });
        }
        let voyage = || {
            satori_providers::VoyageReranker::from_env(|name| std::env::var(name).ok()).map_err(
                |e| {
                    // The error names the variable it is about: the model or the address.
                    let name = if e.to_string().starts_with("VOYAGEAI_BASE_URL") {
                        "VOYAGEAI_BASE_URL"
                    } else {
                        "VOYAGEAI_RERANKER_MODEL"
                    };
                    ConfigError {
                        name,
                        value: var(name).unwrap_or_default(),
                        expected: e.to_string(),
                    }
                },
            )
        };
        let choice = var(env::RERANKER).map(|v| v.trim().to_ascii_lowercase());
        let reranker: Option<Arc<dyn satori_core::search::rerank::Reranker>> =
            match choice.as_deref() {
                None => voyage()?.map(|v| Arc::new(v) as _),
                Some("voyage") => match voyage()? {
                    Some(v) => Some(Arc::new(v)),
                    None => {
                        return Err(ConfigError {
                            name: env::RERANKER,
                            value: "voyage".to_owned(),
                            expected: "VOYAGEAI_API_KEY to be set as well".to_owned(),
                        });
                    }
                },
                Some("local") => Some(Arc::new(
                    satori_core::search::LateInteraction::bundled().map_err(|e| ConfigError {
                        name: env::RERANKER,
                        value: "local".to_owned(),
                        expected: format!("a loadable bundled model ({e})"),
                    })?,
                )),
                Some("off") => None,
                Some(other) => {
                    return Err(ConfigError {
                        name: env::RERANKER,
                        value: other.to_owned(),
                        expected: "'voyage', 'local' or 'off'".to_owned(),
                    });
                }
            };
        let milvus = match var("MILVUS_ADDRESS") {
            None => None,
            Some(address) => {
                let endpoint = satori_milvus::Endpoint::parse(&address, var("MILVUS_TOKEN"))
                    .map_err(|e| ConfigError {
                        name: "MILVUS_ADDRESS",
                        value: address.clone(),
                        expected: e.to_string(),
                    })?;
                Some((endpoint, var("SATORI_MILVUS_PREFIX").unwrap_or_default()))
            }
        };
        let max_chunks = match var(env::MAX_CHUNKS) {
            None => None,
            Some(v) => Some(
                v.trim()
                    .replace('_', "")
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (1..=100_000_000).contains(n))
                    .ok_or(ConfigError {
                        name: env::MAX_CHUNKS,
                        value: v,
                        expected: "expected a whole number of chunks from 1 to 100000000".into(),
                    })?,
            ),
        };
        let mut tuning = match var(env::SEARCH_ABLATION) {
            None => SearchTuning::default(),
            Some(v) => SearchTuning::parse(&v).map_err(|e| ConfigError {
                name: env::SEARCH_ABLATION,
                value: v,
                expected: e,
            })?,
        };
        if let Some(v) = var(env::SEARCH_WEIGHTS) {
            tuning.weights = Weights::with_overrides(&v).map_err(|e| ConfigError {
                name: env::SEARCH_WEIGHTS,
                value: v,
                expected: format!("expected a JSON object of ranking weights: {e}"),
            })?;
        }
        let mut hub = HubOptions::default();
        if let Some(v) = var(env::HF_ENDPOINT) {
            hub.endpoint = v.trim().to_string();
        }
        hub.offline = flag(env::OFFLINE);
        let telemetry_stderr = match var(env::TELEMETRY).as_deref().map(str::trim) {
            None | Some("stderr") => true,
            Some("off") => false,
            Some(other) => {
                return Err(ConfigError {
                    name: env::TELEMETRY,
                    value: other.into(),
                    expected: "expected 'stderr' or 'off'".into(),
                });
            }
        };
        Ok(Config {
            run_mode,
            guard,
            embedding,
            provider,
            reranker,
            milvus,
            max_chunks,
            hub,
            tuning,
            home: env::home_dir(|name| std::env::var_os(name)),
            read_max_lines,
            read_max_bytes,
            allow_secrets,
            user_home,
            read_any_file,
            sync_threshold_ms,
            watch,
            reconcile_every,
            preopen: std::env::var_os(env::PREOPEN)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            telemetry_stderr,
        })
    }
}
