//! The MCP face of the server: advertises the tools of `satori-protocol`, validates each call
//! against its published schema, and routes it to a handler in `tools`.
//!
//! Error channels follow MCP's rule: a call the server understood but could not satisfy (bad
//! arguments, missing index, unreadable file) is a tool result the caller reads; only an
//! unknown tool is a protocol error.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use satori_core::Progress;

use crate::changed::ChangedCache;
use crate::config::Config;
use crate::ctx::Ctx;
use crate::jobs::Jobs;
use crate::logging::{Log, RequestLog};
use crate::roots;
use crate::syncs::{Caller, Syncs};
use crate::tools;
use crate::watch::{self, Background};

/// The Satori MCP server.
#[derive(Clone)]
pub struct SatoriServer {
    ctx: Arc<Ctx>,
    tools: Arc<Vec<Tool>>,
    /// The `satori` executable that finishes builds still running when the session ends
    /// (see `handoff`); without it they end with the session.
    handoff: Option<Arc<std::path::PathBuf>>,
}

impl SatoriServer {
    /// A server over the engine configured by `config`. Fails when the embedding model
    /// cannot be identified (an unreadable model directory, a hub model that cannot be
    /// downloaded or verified).
    pub fn new(config: Config) -> Result<SatoriServer, String> {
        let engine = config.engine()?;
        // Leftovers of killed builds and interrupted clears go now, not at the next publish.
        engine.tidy();
        let log = Log::default();
        let home = engine.home().clone();
        let roots_changed = Arc::new(tokio::sync::Notify::new());
        let server = SatoriServer {
            ctx: Arc::new(Ctx {
                syncs: Arc::new(Syncs::new(Arc::clone(&engine))),
                engine,
                config,
                jobs: Jobs::new(log.clone(), Arc::clone(&roots_changed)),
                log,
                changed_cache: ChangedCache::with_store(move |root| {
                    Some(home.codebase(root).git_changed_file())
                }),
                roots_changed,
                client_roots: Default::default(),
            }),
            tools: Arc::new(advertised_tools()),
            handoff: None,
        };
        server.prepare_search();
        Ok(server)
    }

    /// With `SATORI_PREOPEN` (a `satori-cli` search), opens that codebase's index and asks
    /// git for its changed files on background threads, so that both are ready when the
    /// search arrives after the handshake instead of being paid after it. A search that
    /// comes first waits for the same open and reuses the same git answer.
    fn prepare_search(&self) {
        let Some(path) = self.ctx.config.preopen.clone() else {
            return;
        };
        let ctx = Arc::clone(&self.ctx);
        let _ = std::thread::Builder::new()
            .name("satori-preopen".into())
            .spawn(move || {
                let Some(root) = ctx.engine.searchable_root(&path) else {
                    return;
                };
                ctx.changed_cache.get(&root, std::time::Duration::ZERO);
                let _ = ctx.engine.generation(&root);
            });
    }

    /// The engine this server searches with.
    pub(crate) fn engine(&self) -> Arc<satori_core::Engine> {
        Arc::clone(&self.ctx.engine)
    }

    /// Asks the client for its roots when it declared the capability: once (`again` false),
    /// or again because the client said they changed. The answer arrives on its own task,
    /// so the notification that triggered it is not held up.
    fn learn_roots(&self, peer: &Peer<RoleServer>, again: bool) {
        if !roots::declared(peer) {
            return;
        }
        if again {
            self.ctx.client_roots.expect_again();
        } else if !self.ctx.client_roots.expect() {
            return;
        }
        let ctx = Arc::clone(&self.ctx);
        let peer = peer.clone();
        tokio::spawn(async move { roots::refresh(&ctx.client_roots, &peer).await });
    }

    /// The server's diagnostics sink.
    pub(crate) fn log(&self) -> &Log {
        &self.ctx.log
    }

    /// Runs one tool call (the body of `tools/call`), for in-process callers and tests.
    pub async fn call(
        &self,
        name: &str,
        args: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.call_logged(name, args, None, Caller::default()).await
    }

    /// Starts the work a long-running server does between requests (in `mcp` mode: the
    /// watcher and the periodic reconciliation); it stops when the returned guard drops.
    /// In `cli` mode nothing starts.
    pub fn start_background(&self) -> Option<Background> {
        watch::start(Arc::clone(&self.ctx))
    }

    /// Cancels the syncs in flight once the client has closed its input and `grace` has
    /// passed, so a sync never holds a finished session for long (a client that wrote its
    /// requests and closed stdin still gets answers that arrive within the grace).
    pub fn cancel_syncs_after(&self, grace: Duration) -> impl Future<Output = ()> + use<> {
        let syncs = Arc::clone(&self.ctx.syncs);
        async move {
            tokio::time::sleep(grace).await;
            syncs.cancel_all();
        }
    }

    /// The same server, handing the builds still running when its session ends to detached
    /// processes started from `exe` (the `satori` binary).
    pub fn handing_off_builds_to(mut self, exe: std::path::PathBuf) -> SatoriServer {
        self.handoff = Some(Arc::new(exe));
        self
    }

    /// Hands the builds still running to detached processes, when this server does (see
    /// [`Self::handing_off_builds_to`]); true when there were any.
    pub(crate) fn hand_off_builds(&self) -> bool {
        self.handoff
            .as_ref()
            .is_some_and(|exe| !self.ctx.jobs.hand_off(exe).is_empty())
    }

    /// Waits up to `grace` for the builds of this process to end.
    pub(crate) async fn settle_builds(&self, grace: Duration) {
        self.ctx.jobs.settle(grace).await;
    }

    /// Cancels every sync in flight, refuses new ones, and waits up to `grace` for the
    /// running ones to stop at a safe point.
    pub async fn shutdown(&self, grace: Duration) {
        let syncs = Arc::clone(&self.ctx.syncs);
        let _ = tokio::task::spawn_blocking(move || syncs.shutdown(grace)).await;
    }

    /// [`Self::call`], with the diagnostics of the call sent at the level its request asked
    /// for (2026-07-28 requests carry one in `_meta`).
    async fn call_logged(
        &self,
        name: &str,
        args: Option<JsonObject>,
        request_log: Option<RequestLog>,
        caller: Caller,
    ) -> Result<CallToolResult, McpError> {
        crate::guard::stray_write_for_tests();
        if !self.tools.iter().any(|t| t.name == name) {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool '{name}'; available: {}",
                    self.tools
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            ));
        }
        let ctx = Arc::clone(&self.ctx);
        let name = name.to_string();
        // Engine work touches the filesystem and the index: keep it off the async workers.
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let _enter = handle.enter();
            let _log = request_log.map(RequestLog::enter);
            tools::dispatch(&ctx, &name, args.as_ref(), &caller)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))
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

impl ServerHandler for SatoriServer {
    fn get_info(&self) -> ServerConfig {
        // rmcp marks logging deprecated (SEP-2577); every revision we speak still has it.
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(Implementation::new("satori", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Local semantic code search. Index a repository once with manage_index \
                 (action=create), then search_codebase with natural language or identifiers, \
                 and read_file the spans it returns.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    #[allow(deprecated)] // rmcp's logging types (SEP-2577); see `logging`.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.ctx.log.set_level(request.level, &context.peer);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.learn_roots(&context.peer, false);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.learn_roots(&context.peer, true);
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // A call can overtake the `initialized` notification: ask for the roots here too.
        self.learn_roots(&context.peer, false);
        let request_log = RequestLog::asked_by(&context);
        let (caller, forwarder) = caller_of(&context);
        let result = self
            .call_logged(&request.name, request.arguments, request_log, caller)
            .await;
        // Progress goes out before the answer: once answered, a token is spent.
        if let Some((finish, task)) = forwarder {
            let _ = finish.send(());
            let _ = task.await;
        }
        result.map(CallToolResponse::from)
    }
}

/// Sends a request's progress until told to finish.
type Forwarder = (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
);

/// What a request brings to long work: its cancellation (rmcp cancels `ct` on the client's
/// `notifications/cancelled`, and once the answer is sent) and, when the request carried a
/// `progressToken`, a channel whose progress becomes `notifications/progress`.
fn caller_of(context: &RequestContext<RoleServer>) -> (Caller, Option<Forwarder>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let ct = context.ct.clone();
    let flag = Arc::clone(&cancel);
    tokio::spawn(async move {
        ct.cancelled().await;
        flag.store(true, Ordering::Relaxed);
    });
    let Some(token) = context.meta.get_progress_token() else {
        return (
            Caller {
                cancel,
                progress: None,
            },
            None,
        );
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (finish, finished) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(forward_progress(
        token,
        rx,
        context.peer.clone(),
        context.ct.clone().cancelled_owned(),
        finished,
    ));
    (
        Caller {
            cancel,
            progress: Some(tx),
        },
        Some((finish, task)),
    )
}

/// Sends the progress of a sync to the client until the request is cancelled (`ended`) or
/// its handler is done (`finish`: what is queued by then is still sent). Progress only
/// ever grows (the protocol requires it), so a figure at or below the last one is not sent.
async fn forward_progress(
    token: ProgressToken,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Progress>,
    peer: rmcp::Peer<RoleServer>,
    ended: impl Future<Output = ()>,
    finish: tokio::sync::oneshot::Receiver<()>,
) {
    tokio::pin!(ended);
    tokio::pin!(finish);
    let mut finishing = false;
    let mut last = -1.0f64;
    loop {
        let p = if finishing {
            match rx.try_recv() {
                Ok(p) => p,
                Err(_) => return,
            }
        } else {
            tokio::select! {
                biased;
                _ = &mut ended => return,
                _ = &mut finish => {
                    finishing = true;
                    continue;
                }
                p = rx.recv() => match p {
                    Some(p) => p,
                    None => return,
                },
            }
        };
        let pct = f64::from(p.percentage);
        if pct <= last {
            continue;
        }
        last = pct;
        let message = format!(
            "syncing the index: {} {}/{} files",
            p.phase.id(),
            p.files_done,
            p.files_total
        );
        let param = ProgressNotificationParam::new(token.clone(), pct)
            .with_total(100.0)
            .with_message(message);
        if peer.notify_progress(param).await.is_err() {
            return;
        }
    }
}
