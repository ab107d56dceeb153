//! rmcp's `ServerHandler` for a [`Session`]: advertises the tools of `satori-protocol`,
//! validates each call against its published schema and routes it to a handler in `tools`
//! with the session, learns the client's roots, and forwards a call's progress.
//!
//! Error channels follow MCP's rule: a call the server understood but could not satisfy (bad
//! arguments, missing index, unreadable file) is a tool result the caller reads; only an
//! unknown tool is a protocol error.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use satori_core::Progress;

use crate::logging::RequestLog;
use crate::roots;
use crate::session::Session;
use crate::syncs::Caller;
use crate::tools;

impl Session {
    /// Asks the client for its roots when it declared the capability: once (`again` false),
    /// or again because the client said they changed. The answer arrives on its own task,
    /// so the notification that triggered it is not held up.
    fn learn_roots(&self, peer: &Peer<RoleServer>, again: bool) {
        if !roots::declared(peer) {
            return;
        }
        if again {
            self.roots().expect_again();
        } else if !self.roots().expect() {
            return;
        }
        let client_roots = Arc::clone(self.roots());
        let peer = peer.clone();
        tokio::spawn(async move { roots::refresh(&client_roots, &peer).await });
    }

    /// Runs one tool call (the body of `tools/call`), for in-process callers and tests.
    pub async fn call(
        &self,
        name: &str,
        args: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.call_logged(name, args, None, Caller::default()).await
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
        let tools = &self.service().tools;
        if !tools.iter().any(|t| t.name == name) {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool '{name}'; available: {}",
                    tools
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            ));
        }
        let session = self.clone();
        let name = name.to_string();
        // Engine work touches the filesystem and the index: keep it off the async workers.
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let _enter = handle.enter();
            let _log = request_log.map(RequestLog::enter);
            tools::dispatch(&session, &name, args.as_ref(), &caller)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))
    }
}

impl ServerHandler for Session {
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
        Ok(ListToolsResult::with_all_items(
            self.service().tools.as_ref().clone(),
        ))
    }

    #[allow(deprecated)] // rmcp's logging types (SEP-2577); see `logging`.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log().set_level(request.level, &context.peer);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.service()
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
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
