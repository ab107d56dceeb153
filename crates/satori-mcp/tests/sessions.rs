//! Two sessions of one service, in memory, as a transport that serves many clients makes
//! them: each client's roots confine that client only, each client's log level and
//! diagnostics are its own, and the background work (the watcher) runs while any session
//! is open — closing one leaves it running for the other.

// rmcp marks roots and logging deprecated (SEP-2577); the revisions the server speaks all
// have them.
#![allow(deprecated)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ListRootsResult,
    LoggingLevel, LoggingMessageNotificationParam, Root, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use satori_core::{Home, StateStore};
use satori_mcp::{Service, Session};
use serde_json::{Value, json};

mod support;
use support::write;

const DEADLINE: Duration = Duration::from_secs(60);

/// A client that declares one root and keeps every log message it receives.
#[derive(Clone)]
struct Client {
    root: PathBuf,
    messages: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_roots().build();
        ClientConfig::new(capabilities, Implementation::new("sessions-test", "1.0.0"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        let uri = format!("file://{}", self.root.display());
        Ok(ListRootsResult::new(vec![Root::new(uri)]))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.messages.lock().unwrap().push(params);
    }
}

/// One client connected to `service` through its own session, served as `serve_session`
/// serves one (so the session holds the service's background work).
struct Connected {
    client: RunningService<RoleClient, Client>,
    handler: Client,
    served: tokio::task::JoinHandle<anyhow::Result<()>>,
}

async fn connect(service: &Arc<Service>, root: &Path) -> Connected {
    let session = Session::new(service);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let served = tokio::spawn(async move {
        let (r, w) = tokio::io::split(server_io);
        satori_mcp::serve_session(session, r, w, std::future::pending()).await
    });
    let handler = Client {
        root: root.to_path_buf(),
        messages: Arc::default(),
    };
    let client = handler.clone().serve(client_io).await.unwrap();
    Connected {
        client,
        handler,
        served,
    }
}

impl Connected {
    async fn call(&self, tool: &str, args: Value) -> Value {
        let Value::Object(map) = args else {
            panic!("args must be an object")
        };
        let r = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
            .await
            .unwrap();
        r.structured_content.unwrap_or(Value::Null)
    }

    async fn index(&self, root: &Path) {
        let v = self
            .call("manage_index", json!({"action": "create", "path": root}))
            .await;
        assert_eq!(v["status"], "ok", "{v}");
        support::wait_built(&self.client, root).await;
    }

    async fn search(&self, root: &Path, query: &str) -> Value {
        self.call(
            "search_codebase",
            json!({"path": root, "query": query, "resultMode": "raw", "scope": "mixed"}),
        )
        .await
    }

    /// The codebases this client is shown (the `- <path> (...)` lines of the listing).
    async fn listed(&self) -> Vec<String> {
        let r = self
            .client
            .call_tool(CallToolRequestParams::new("list_codebases"))
            .await
            .unwrap();
        let text = &r.content[0].as_text().unwrap().text;
        let mut roots: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .filter_map(|l| l.rsplit_once(" (").map(|(path, _)| path.to_owned()))
            .collect();
        roots.sort();
        roots
    }

    /// The `codebase` of every telemetry event this client received.
    fn telemetry(&self) -> Vec<String> {
        self.handler
            .messages
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.logger.as_deref() == Some("telemetry"))
            .filter_map(|m| m.data["codebase"].as_str().map(str::to_owned))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_share_a_service_and_nothing_else() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let [home, a_root, b_root] = [0, 1, 2].map(|i| dirs[i].path().canonicalize().unwrap());
    write(
        &a_root,
        "src/alpha.rs",
        "pub fn alpha_routine() -> u32 {\n    1\n}\n",
    );
    write(
        &b_root,
        "src/beta.rs",
        "pub fn beta_routine() -> u32 {\n    2\n}\n",
    );
    let mut config = support::config(&home);
    config.run_mode = satori_mcp::RunMode::Mcp;
    config.watch = Some(Duration::from_millis(200));
    config.telemetry_stderr = false;
    let service = Service::new(config).unwrap();

    let a = connect(&service, &a_root).await;
    let b = connect(&service, &b_root).await;
    assert_eq!(service.sessions(), 2);
    a.client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    b.client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();

    // Each client's roots confine that client, not the other.
    a.index(&a_root).await;
    b.index(&b_root).await;
    let refused = a
        .call("manage_index", json!({"action": "create", "path": b_root}))
        .await;
    assert_eq!(refused["reason"], "outside_client_roots", "{refused}");
    let shown = |p: &Path| p.to_string_lossy().into_owned();
    assert_eq!(a.listed().await, [shown(&a_root)]);
    assert_eq!(b.listed().await, [shown(&b_root)]);
    let v = a.search(&b_root, "beta_routine").await;
    assert_eq!(v["reason"], "outside_client_roots", "{v}");
    let v = b.search(&b_root, "beta_routine").await;
    assert_eq!(v["status"], "ok", "{v}");

    // Each client's log level is its own: B's searches raise debug telemetry that goes to
    // B's client (below its level: nowhere), never to A's, which asked for debug.
    let v = a.search(&a_root, "alpha_routine").await;
    assert_eq!(v["status"], "ok", "{v}");
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while a.telemetry().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "A got no telemetry");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for _ in 0..3 {
        b.search(&b_root, "beta_routine").await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        a.telemetry().iter().all(|c| *c == shown(&a_root)),
        "{:?}",
        a.telemetry()
    );
    assert!(b.telemetry().is_empty(), "{:?}", b.telemetry());

    // A leaves; the watcher keeps B's codebase fresh: an edit is synced without any call,
    // and a search then finds it without syncing by itself.
    let Connected { client, served, .. } = a;
    client.cancel().await.unwrap();
    served.await.unwrap().unwrap();
    assert_eq!(service.sessions(), 1);
    let store = StateStore::new(Home::new(home.clone()));
    let last_sync = || store.load().unwrap().codebases[&b_root].last_sync_ms;
    let before = last_sync();
    write(
        &b_root,
        "src/beta.rs",
        "pub fn gamma_marker_routine() -> u32 {\n    3\n}\n",
    );
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while last_sync() == before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watcher never synced the edit"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The sync seen may be of events from before the edit: wait for the watcher to go quiet
    // (its debounce is 200 ms), so the edit's own sync is over too.
    let mut seen = last_sync();
    loop {
        tokio::time::sleep(Duration::from_millis(600)).await;
        let now = last_sync();
        if now == seen {
            break;
        }
        seen = now;
    }
    let v = b.search(&b_root, "gamma_marker_routine").await;
    let mode = v["freshnessDecision"]["mode"].as_str().unwrap_or_default();
    assert!(mode == "skipped_recent" || mode == "coalesced", "{v}");
    assert!(
        v["results"].to_string().contains("gamma_marker_routine"),
        "{v}"
    );
}
