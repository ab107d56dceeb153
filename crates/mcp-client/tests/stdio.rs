//! The stdio transport against a real child process: a small scripted server
//! (`fixtures/stdio_server.py`) whose lists come one item a page, with a tool that errors, one
//! that never answers and one that prints noise on stdout.
#![cfg(unix)]

use std::path::PathBuf;
use std::time::Duration;

use mcp_client::{ClientInfo, Error, Spawn, StdioClient};
use serde_json::{Map, Value, json};

const PATIENCE: Duration = Duration::from_secs(20);

fn spawn() -> Spawn {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stdio_server.py");
    Spawn {
        program: "python3".into(),
        args: vec![script.display().to_string()],
        env: Vec::new(),
        startup_timeout: PATIENCE,
        client: ClientInfo::new("stdio-test", "0"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// The names (or URIs) of a list result's items under `key`.
fn names(result: &Value, key: &str, field: &str) -> Vec<String> {
    result[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} in {result}"))
        .iter()
        .map(|item| item[field].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn lists_come_whole_and_requests_answer() {
    runtime().block_on(async {
        let mut c = StdioClient::spawn(&spawn()).await.expect("spawn");
        assert_eq!(c.server_info()["serverInfo"]["name"], "stdio-fixture");
        let tools = c.list_tools(PATIENCE).await.unwrap();
        assert_eq!(names(&tools, "tools", "name"), ["echo", "silent", "noise"]);
        let resources = c.list_resources(PATIENCE).await.unwrap();
        assert_eq!(
            names(&resources, "resources", "uri"),
            ["demo://r0", "demo://r1"]
        );
        let prompts = c.list_prompts(PATIENCE).await.unwrap();
        assert_eq!(names(&prompts, "prompts", "name"), ["p0", "p1"]);

        let read = c.read_resource("demo://r1", PATIENCE).await.unwrap();
        assert_eq!(read["contents"][0]["text"], "body of demo://r1");
        let prompt = c
            .get_prompt("p0", args(json!({"who": "Ada"})), PATIENCE)
            .await
            .unwrap();
        assert_eq!(
            prompt["messages"][0]["content"]["text"],
            json!({"who": "Ada"}).to_string()
        );
        let echoed = c
            .call_tool("echo", args(json!({"n": 1})), PATIENCE)
            .await
            .unwrap();
        assert_eq!(echoed["content"][0]["text"], json!({"n": 1}).to_string());

        // A JSON-RPC error is an answer: the connection stays usable.
        match c.call_tool("missing", Map::new(), PATIENCE).await {
            Err(Error::Server { code, message, .. }) => {
                assert_eq!(code, -32602);
                assert!(message.contains("missing"), "{message}");
            }
            other => panic!("a JSON-RPC error, not {other:?}"),
        }
        assert!(c.is_open());
        assert!(c.call_tool("echo", Map::new(), PATIENCE).await.is_ok());
        c.shutdown().await;
    });
}

#[test]
fn a_request_that_breaks_the_stream_stops_the_server() {
    // (tool, what the failure must be, a word its message must hold)
    let check = |tool: &str, timeout: Duration, want: fn(&Error) -> bool, word: &str| {
        runtime().block_on(async {
            let mut c = StdioClient::spawn(&spawn()).await.expect("spawn");
            let pid = c.pid().expect("a running child");
            let error = c.call_tool(tool, Map::new(), timeout).await.unwrap_err();
            assert!(want(&error), "{tool}: {error:?}");
            assert!(error.to_string().contains(word), "{tool}: {error}");
            assert!(!c.is_open(), "{tool}: the connection is torn down");
            assert_eq!(c.pid(), None, "{tool}");
            // SAFETY: kill with signal 0 only asks whether the process exists.
            let alive = unsafe { libc::kill(pid as i32, 0) } == 0;
            assert!(!alive, "{tool}: the child was reaped");
            let later = c.call_tool("echo", Map::new(), PATIENCE).await;
            assert!(matches!(later, Err(Error::Closed)), "{tool}: {later:?}");
        });
    };
    check(
        "silent",
        Duration::from_millis(300),
        |e| matches!(e, Error::CallTimeout { .. }),
        "tools/call silent",
    );
    check(
        "noise",
        PATIENCE,
        |e| matches!(e, Error::Transport(_)),
        "Starting...",
    );
}

#[test]
fn a_server_that_cannot_start_is_a_spawn_error() {
    let mut s = spawn();
    s.program = "/nonexistent/mcp-server".into();
    let error = runtime().block_on(StdioClient::spawn(&s)).unwrap_err();
    assert!(matches!(error, Error::Spawn { .. }), "{error:?}");
}
