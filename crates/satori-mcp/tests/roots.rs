//! The client's roots, in memory: a client that declares the `roots` capability confines
//! indexing, searching and reading to the directories it lists, follows its
//! `roots/list_changed` notifications, and a client without the capability is not confined.

// rmcp marks roots deprecated (SEP-2577); the revisions the server speaks all have them.
#![allow(deprecated)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ListRootsResult, Root,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use satori_mcp::SatoriServer;
use serde_json::{Value, json};

mod support;

/// A client that declares roots (or not) and answers `roots/list` with `roots`.
#[derive(Clone)]
struct RootsClient {
    declares: bool,
    roots: Arc<Mutex<Vec<PathBuf>>>,
    asked: Arc<Mutex<usize>>,
}

impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declares {
            ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("roots-test", "1.0.0"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        *self.asked.lock().unwrap() += 1;
        let roots = self.roots.lock().unwrap().clone();
        Ok(ListRootsResult::new(
            roots
                .iter()
                .map(|p| Root::new(format!("file://{}", p.display())))
                .collect(),
        ))
    }
}

struct Harness {
    client: RunningService<RoleClient, RootsClient>,
    handler: RootsClient,
    inside: PathBuf,
    outside: PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

fn write(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

impl Harness {
    async fn new(declares: bool) -> Harness {
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let [home, inside, outside] = [0, 1, 2].map(|i| dirs[i].path().canonicalize().unwrap());
        for dir in [&inside, &outside] {
            write(dir, "src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
        }
        let config = support::config(&home);
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            let running = SatoriServer::new(config)
                .unwrap()
                .serve(server_io)
                .await
                .unwrap();
            let _ = running.waiting().await;
        });
        let handler = RootsClient {
            declares,
            roots: Arc::new(Mutex::new(vec![inside.clone()])),
            asked: Arc::new(Mutex::new(0)),
        };
        let client = handler.clone().serve(client_io).await.unwrap();
        Harness {
            client,
            handler,
            inside,
            outside,
            _dirs: dirs,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let Value::Object(map) = args else {
            panic!("args must be an object")
        };
        self.client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
            .await
            .unwrap()
    }

    async fn create(&self, path: &Path) -> Value {
        let r = self
            .call("manage_index", json!({"action": "create", "path": path}))
            .await;
        r.structured_content.unwrap()
    }

    async fn read(&self, path: &Path) -> (bool, String) {
        let r = self.call("read_file", json!({"path": path})).await;
        (
            r.is_error == Some(true),
            r.content[0].as_text().unwrap().text.clone(),
        )
    }

    async fn wait_indexed(&self, path: &Path) {
        for _ in 0..1200 {
            let r = self
                .call("manage_index", json!({"action": "status", "path": path}))
                .await;
            if support::build_over(&serde_json::to_value(&r).unwrap()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("indexing did not finish");
    }
}

#[tokio::test]
async fn declared_roots_confine_indexing_search_and_reads() {
    let h = Harness::new(true).await;
    let v = h.create(&h.outside).await;
    assert_eq!(v["status"], "blocked", "{v}");
    assert_eq!(v["reason"], "outside_client_roots", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains(&*h.inside.to_string_lossy()),
        "the refusal names the roots: {message}"
    );
    assert!(v.get("hints").is_none(), "{v}");

    let v = h.create(&h.inside).await;
    assert_eq!(v["status"], "ok", "{v}");
    h.wait_indexed(&h.inside).await;
    let (is_error, text) = h.read(&h.inside.join("src/lib.rs")).await;
    assert!(!is_error, "{text}");
    let (is_error, text) = h.read(&h.outside.join("src/lib.rs")).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("outside the roots the client allows"),
        "{text}"
    );

    // The client moves its root: the server asks again and follows.
    *h.handler.roots.lock().unwrap() = vec![h.outside.clone()];
    h.client.notify_roots_list_changed().await.unwrap();
    let mut refused = false;
    for _ in 0..400 {
        let (is_error, _) = h.read(&h.inside.join("src/lib.rs")).await;
        if is_error {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(refused, "the new roots were not applied");
    assert!(*h.handler.asked.lock().unwrap() >= 2);
    let r = h
        .call(
            "search_codebase",
            json!({"path": h.inside, "query": "answer"}),
        )
        .await;
    let v = r.structured_content.unwrap();
    assert_eq!(v["status"], "blocked", "{v}");
    assert_eq!(v["reason"], "outside_client_roots", "{v}");
    let v = h.create(&h.outside).await;
    assert_eq!(v["status"], "ok", "{v}");
}

#[tokio::test]
async fn without_the_capability_nothing_is_asked() {
    let h = Harness::new(false).await;
    let v = h.create(&h.outside).await;
    assert_eq!(v["status"], "ok", "{v}");
    h.wait_indexed(&h.outside).await;
    let (is_error, text) = h.read(&h.outside.join("src/lib.rs")).await;
    assert!(!is_error, "{text}");
    assert_eq!(*h.handler.asked.lock().unwrap(), 0);
}

/// The MCP Python SDK as a client with roots, against the binary. Runs when `python3` (or
/// `$SATORI_TEST_PYTHON`) can import `mcp`; skipped with a message otherwise.
#[test]
fn python_sdk_roots() {
    let python = std::env::var("SATORI_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let importable = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !importable {
        eprintln!(
            "skipped: `{python} -c \"import mcp\"` failed; install the MCP Python SDK \
             (pip install mcp) or point SATORI_TEST_PYTHON at a Python that has it"
        );
        return;
    }
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let [home, allowed, other] = [0, 1, 2].map(|i| dirs[i].path().canonicalize().unwrap());
    for dir in [&allowed, &other] {
        write(dir, "src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_roots.py");
    let out = std::process::Command::new(&python)
        .args(["-W", "ignore"])
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_satori"))
        .arg(&allowed)
        .arg(&other)
        .env("SATORI_HOME", &home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["asked"], true, "{seen}");
    assert_eq!(seen["outside"]["status"], "blocked", "{seen}");
    assert_eq!(seen["outside"]["reason"], "outside_client_roots", "{seen}");
    let message = seen["outside"]["message"].as_str().unwrap();
    assert!(
        message.contains("outside the roots the client allows"),
        "the roots were not learnt: {message}"
    );
    assert_eq!(seen["inside"]["status"], "ok", "{seen}");
}
