//! What every session and the process's background work use: the engine, the
//! configuration, index builds, syncs in flight, the changed-files cache, the process's
//! diagnostics and the advertised tools. The [`Service`](crate::service::Service) holds one
//! per process; each session's handlers reach it through their `Ctx`, the watcher directly.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use satori_core::Engine;

use crate::changed::ChangedCache;
use crate::config::Config;
use crate::jobs::Jobs;
use crate::logging::Log;
use crate::syncs::Syncs;

/// The state every session of the process shares.
pub struct Shared {
    pub(crate) engine: Arc<Engine>,
    pub(crate) config: Config,
    pub(crate) jobs: Jobs,
    /// Diagnostics the process raises on its own: stderr, and every session that asked.
    pub(crate) log: Log,
    /// Recent `git diff` answers per codebase root (see `changed`).
    pub(crate) changed_cache: ChangedCache,
    /// The syncs in flight in this process, and the roots the watcher saw edits in.
    pub(crate) syncs: Arc<Syncs>,
    /// Signalled when the set of indexed codebases may have changed (a build ended, an
    /// index was cleared), so the watcher revisits what it watches.
    pub(crate) roots_changed: Arc<tokio::sync::Notify>,
    /// The tools as advertised, built once.
    pub(crate) tools: Arc<Vec<Tool>>,
}

impl Shared {
    /// The shared state over the engine configured by `config`. Fails when the embedding
    /// model cannot be identified (an unreadable model directory, a hub model that cannot be
    /// downloaded or verified).
    pub(crate) fn new(config: Config) -> Result<Arc<Shared>, String> {
        let engine = config.engine()?;
        // Leftovers of killed builds and interrupted clears go now, not at the next publish.
        engine.tidy();
        let log = Log::default();
        let home = engine.home().clone();
        let roots_changed = Arc::new(tokio::sync::Notify::new());
        let shared = Arc::new(Shared {
            syncs: Arc::new(Syncs::new(Arc::clone(&engine))),
            engine,
            config,
            jobs: Jobs::new(log.clone(), Arc::clone(&roots_changed)),
            log,
            changed_cache: ChangedCache::with_store(move |root| {
                Some(home.codebase(root).git_changed_file())
            }),
            roots_changed,
            tools: Arc::new(advertised_tools()),
        });
        shared.prepare_search();
        Ok(shared)
    }

    /// With `SATORI_PREOPEN` (a `satori-cli` search), opens that codebase's index and asks
    /// git for its changed files on background threads, so that both are ready when the
    /// search arrives after the handshake instead of being paid after it. A search that
    /// comes first waits for the same open and reuses the same git answer.
    fn prepare_search(self: &Arc<Self>) {
        let Some(path) = self.config.preopen.clone() else {
            return;
        };
        let shared = Arc::clone(self);
        let _ = std::thread::Builder::new()
            .name("satori-preopen".into())
            .spawn(move || {
                let Some(root) = shared.engine.searchable_root(&path) else {
                    return;
                };
                shared.changed_cache.get(&root, Duration::ZERO);
                let _ = shared.engine.generation(&root);
            });
    }

    /// The engine every session searches with.
    pub fn engine(&self) -> Arc<Engine> {
        Arc::clone(&self.engine)
    }

    /// The process's diagnostics sink.
    pub fn log(&self) -> &Log {
        &self.log
    }

    /// Waits up to `grace` for the builds of this process to end.
    pub(crate) async fn settle_builds(&self, grace: Duration) {
        self.jobs.settle(grace).await;
    }

    /// Cancels every sync in flight, refuses new ones, and waits up to `grace` for the
    /// running ones to stop at a safe point.
    pub async fn shutdown(&self, grace: Duration) {
        let syncs = Arc::clone(&self.syncs);
        let _ = tokio::task::spawn_blocking(move || syncs.shutdown(grace)).await;
    }

    /// Cancels every sync in flight (a sync never holds a finished session for long).
    pub(crate) fn cancel_syncs(&self) {
        self.syncs.cancel_all();
    }

    /// The limits every read is held to (`READ_FILE_MAX_BYTES`, `SATORI_READ_ANY_FILE`).
    pub(crate) fn read_limits(&self) -> satori_core::ReadLimits {
        satori_core::ReadLimits {
            max_bytes: self.config.read_max_bytes,
            outside_codebases: self.config.read_any_file,
        }
    }

    /// How far the build of `root` has got: the live job's figure when this process runs it,
    /// else `recorded`, the figure in `state.json` (another process may be building).
    pub(crate) fn indexing_percentage(&self, root: &Path, recorded: f32) -> f32 {
        self.jobs
            .view(root)
            .map_or(recorded, |v| v.progress.percentage)
    }
}

/// The tools of `satori-protocol` as rmcp values. Input and output schemas both come from the
/// contract's types, so what is advertised is what the handlers parse and answer.
fn advertised_tools() -> Vec<Tool> {
    let object = |schema: &serde_json::Value| match schema {
        serde_json::Value::Object(m) => m.clone(),
        _ => JsonObject::new(),
    };
    satori_protocol::tools()
        .iter()
        .map(|d| {
            let tool = Tool::new(d.name, d.description, Arc::new(object(&d.input_schema)));
            let tool = match &d.output_schema {
                Some(schema) => tool.with_raw_output_schema(Arc::new(object(schema))),
                None => tool,
            };
            tool.with_title(d.title).with_annotations(
                ToolAnnotations::with_title(d.title)
                    .read_only(d.read_only)
                    .destructive(d.name == satori_protocol::MANAGE_INDEX)
                    .idempotent(d.idempotent)
                    .open_world(false),
            )
        })
        .collect()
}
