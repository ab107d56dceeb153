//! Helpers the in-memory and edge tests of the server share: the configuration of a server
//! over a fresh home, a session with it over an in-memory pipe, tool calls, the wait for a
//! build to end, files written into a tree, the runs of the official Python SDK client, and
//! (`http`) a raw Streamable HTTP client with a shared server run in the test's process.

// Each test binary uses the part it needs.
#![allow(dead_code)]

pub mod http;

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use satori_core::embed::ModelSource;
use satori_core::search::SearchTuning;
use satori_mcp::config::{Config, RunMode};
use satori_mcp::guard::GuardMode;
use satori_mcp::{Service, Session};
use serde_json::{Value, json};

/// A server over `home` with the bundled model, short reads and the default tuning: what
/// the snapshots were taken with.
pub fn config(home: &Path) -> Config {
    Config {
        run_mode: RunMode::Cli,
        guard: GuardMode::Drop,
        home: home.to_path_buf(),
        read_max_lines: 20,
        read_max_bytes: 1024 * 1024,
        allow_secrets: false,
        user_home: None,
        read_any_file: false,
        sync_threshold_ms: 180_000,
        watch: None,
        reconcile_every: None,
        embedding: ModelSource::Bundled,
        provider: None,
        reranker: None,
        milvus: None,
        max_chunks: None,
        hub: Default::default(),
        tuning: SearchTuning::default(),
        preopen: None,
        telemetry_stderr: true,
    }
}

/// A server with `config` running in this process, and `client` connected to it through an
/// in-memory pipe (the server on rmcp's own framing).
pub async fn connect<C: ClientHandler>(config: Config, client: C) -> RunningService<RoleClient, C> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = Session::new(&Service::new(config).unwrap())
            .serve(server_io)
            .await
            .unwrap();
        let _ = running.waiting().await;
    });
    client.serve(client_io).await.unwrap()
}

/// Calls `tool` with `args`, a JSON object.
pub async fn call<C: ClientHandler>(
    client: &RunningService<RoleClient, C>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("args must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .unwrap()
}

/// Waits until the build of `path` is over (polling `manage_index status`, for 30 s at
/// most); it must have left the index searchable.
pub async fn wait_built<C: ClientHandler>(client: &RunningService<RoleClient, C>, path: &Path) {
    for _ in 0..1200 {
        let r = call(
            client,
            "manage_index",
            json!({"action": "status", "path": path}),
        )
        .await;
        if build_over(&serde_json::to_value(&r).unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("indexing did not finish");
}

/// Whether the build a `manage_index status` result reports is over; a build that is over
/// must have left the index searchable: `indexed`, or `sync_completed` when the server's
/// background work synced it right after the build.
#[track_caller]
pub fn build_over(status: &Value) -> bool {
    let state = &status["structuredContent"]["state"];
    if state == "indexing" {
        return false;
    }
    assert!(state == "indexed" || state == "sync_completed", "{status}");
    true
}

/// Writes `body` to `rel` under `root`, creating its directories.
pub fn write(root: &Path, rel: &str, body: impl AsRef<[u8]>) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// The Python that runs the SDK tests (`$SATORI_TEST_PYTHON`, else `python3`) when it can
/// import the MCP SDK; otherwise the message a skipped test prints.
pub fn python_with_sdk() -> Result<String, String> {
    let python = std::env::var("SATORI_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let importable = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if importable {
        Ok(python)
    } else {
        Err(format!(
            "skipped: `{python} -c \"import mcp\"` failed; install the MCP Python SDK \
             (pip install mcp) or point SATORI_TEST_PYTHON at a Python that has it"
        ))
    }
}

/// Runs `tests/python/<script>` with `python` against the built `satori` over `home`,
/// passing `args` after the binary; it must succeed, and its last line of output is what it
/// saw, as JSON.
pub fn run_sdk_script(python: &str, script: &str, args: &[&OsStr], home: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let out = std::process::Command::new(python)
        .args(["-W", "ignore"])
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_satori"))
        .args(args)
        .env("SATORI_HOME", home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}
