//! One `satori` process's service: everything the process holds once, for every session it
//! serves and for its own background work: the engine, the configuration, index builds,
//! syncs in flight, the changed-files cache, the process's diagnostics and the advertised
//! tools; and what only the process as a whole decides: the background work (watcher,
//! periodic re-check), started by the first session that attends and stopped when the last
//! one leaves, and the hand-off of builds still running when it does. A
//! [`Session`](crate::session::Session) is one client's view of it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use satori_core::Engine;

use crate::changed::ChangedCache;
use crate::config::Config;
use crate::jobs::Jobs;
use crate::logging::Log;
use crate::syncs::Syncs;
use crate::watch::{self, Background};

/// The process's service.
pub struct Service {
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
    /// The `satori` executable that finishes builds still running when the last session
    /// ends (see `handoff`); without it they end with the process's sessions.
    handoff: OnceLock<PathBuf>,
    /// The sessions being served and the background work they keep running.
    attending: Mutex<Attending>,
}

#[derive(Default)]
struct Attending {
    sessions: usize,
    background: Option<Background>,
}

/// A session's place in [`Service::attend`]: while any is held, the background work runs.
pub struct Attendance {
    service: Arc<Service>,
    left: bool,
}

/// What the last session to leave hands back: the background work, stopped when dropped.
pub struct LastToLeave {
    pub background: Option<Background>,
}

impl Service {
    /// A service over the engine configured by `config`. Fails when the embedding model
    /// cannot be identified (an unreadable model directory, a hub model that cannot be
    /// downloaded or verified).
    pub fn new(config: Config) -> Result<Arc<Service>, String> {
        let engine = config.engine()?;
        // Leftovers of killed builds and interrupted clears go now, not at the next publish.
        engine.tidy();
        let log = Log::default();
        let home = engine.home().clone();
        let roots_changed = Arc::new(tokio::sync::Notify::new());
        let service = Arc::new(Service {
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
            handoff: OnceLock::new(),
            attending: Mutex::new(Attending::default()),
        });
        service.prepare_search();
        Ok(service)
    }

    /// With `SATORI_PREOPEN` (a `satori-cli` search), opens that codebase's index and asks
    /// git for its changed files on background threads, so that both are ready when the
    /// search arrives after the handshake instead of being paid after it. A search that
    /// comes first waits for the same open and reuses the same git answer.
    fn prepare_search(self: &Arc<Self>) {
        let Some(path) = self.config.preopen.clone() else {
            return;
        };
        let service = Arc::clone(self);
        let _ = std::thread::Builder::new()
            .name("satori-preopen".into())
            .spawn(move || {
                let Some(root) = service.engine.searchable_root(&path) else {
                    return;
                };
                service.changed_cache.get(&root, Duration::ZERO);
                let _ = service.engine.generation(&root);
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

    /// Hands the builds still running when the last session ends to detached processes
    /// started from `exe` (the `satori` binary). The first call wins.
    pub fn hand_off_builds_to(&self, exe: PathBuf) {
        let _ = self.handoff.set(exe);
    }

    /// A session starts: the first one starts the background work (in `mcp` mode: the
    /// watcher and the periodic reconciliation; in `cli` mode nothing).
    pub fn attend(self: &Arc<Self>) -> Attendance {
        let mut a = self.attending.lock().unwrap_or_else(|p| p.into_inner());
        a.sessions += 1;
        if a.sessions == 1 && a.background.is_none() {
            a.background = watch::start(
                watch::Handles {
                    engine: Arc::clone(&self.engine),
                    jobs: self.jobs.clone(),
                    syncs: Arc::clone(&self.syncs),
                    log: self.log.clone(),
                    roots_changed: Arc::clone(&self.roots_changed),
                },
                self.config.watch,
                self.config.reconcile_every,
            );
        }
        Attendance {
            service: Arc::clone(self),
            left: false,
        }
    }

    /// How many sessions are being served.
    pub fn sessions(&self) -> usize {
        self.attending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sessions
    }

    /// Hands the builds still running to detached processes, when this service does (see
    /// [`Self::hand_off_builds_to`]); true when there were any.
    pub(crate) fn hand_off_builds(&self) -> bool {
        self.handoff
            .get()
            .is_some_and(|exe| !self.jobs.hand_off(exe).is_empty())
    }

    /// Whether a build or a sync runs in this process: work an idle exit must not cut short.
    pub(crate) fn busy(&self) -> bool {
        self.jobs.any_running() || self.syncs.any_in_flight()
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

    fn leave(&self) -> Option<LastToLeave> {
        let mut a = self.attending.lock().unwrap_or_else(|p| p.into_inner());
        a.sessions = a.sessions.saturating_sub(1);
        (a.sessions == 0).then(|| LastToLeave {
            background: a.background.take(),
        })
    }
}

impl Attendance {
    /// The session leaves. The last one to leave gets the background work back, to stop
    /// it in its own order (after handing builds off, before shutting syncs down).
    pub fn leave(mut self) -> Option<LastToLeave> {
        self.left = true;
        self.service.leave()
    }
}

impl Drop for Attendance {
    fn drop(&mut self) {
        if !self.left {
            drop(self.service.leave());
        }
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
