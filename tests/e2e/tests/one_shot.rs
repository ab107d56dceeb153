//! Builds started by one-shot clients: a client that opens a session, calls `manage_index
//! create` and closes at once (the Inspector CLI, mcporter without its daemon) must still get
//! an index. The session ends while the build runs; the build goes on in another process,
//! `status` from a later process shows it running and then `indexed`.
//!
//! The client's close is the one the MCP TypeScript SDK performs: close stdin, wait 2 s,
//! SIGTERM, wait 2 s, SIGKILL. The Inspector CLI test runs the real Inspector from npm when
//! `SATORI_TEST_INSPECTOR` names its `mcp-inspector` executable (CI installs it); without it
//! that test says so on stderr and passes.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use satori_e2e::binary;
use satori_protocol::env;
use serde_json::{Value, json};

/// Files in the corpus: enough that a debug build is still running when the client leaves.
const CORPUS_FILES: usize = 1500;
/// Generous bound on the build (a debug build on busy cores).
const BUILD_WAIT: Duration = Duration::from_secs(300);

/// A repository whose build takes seconds.
fn corpus(root: &Path) {
    for i in 0..CORPUS_FILES {
        let mut body = String::new();
        for j in 0..12 {
            body.push_str(&format!(
                "/// Handles request kind {j} of module {i}.\npub fn handle_{i}_{j}(input: &str, retries: u32) -> Result<usize, String> {{\n    let mut total = 0usize;\n    for attempt in 0..retries {{\n        if input.len() > attempt as usize {{\n            total += input.len() * {j} + attempt as usize;\n        }}\n    }}\n    Ok(total)\n}}\n\n"
            ));
        }
        let path = root.join(format!("src/m{}/f{i}.rs", i % 40));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
}

/// `satori` over `home` in `mcp` mode, with piped stdio.
fn server(home: &Path) -> Child {
    Command::new(binary("satori"))
        .env(env::HOME, home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn satori")
}

/// Writes one JSON-RPC message.
fn send(child: &mut Child, v: &Value) {
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "{v}").unwrap();
    stdin.flush().unwrap();
}

/// Opens a session on a new process and calls one tool; returns the process (its stdin
/// still open) and the call's `structuredContent`.
fn call(home: &Path, tool: &str, args: Value) -> (Child, Value) {
    let mut child = server(home);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answer = |child: &mut Child, id: u64, method: &str, params: Value| {
        send(
            child,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let line = lines.next().expect("satori answers").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    let init = answer(
        &mut child,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "one-shot", "version": "1"}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    send(
        &mut child,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let r = answer(
        &mut child,
        2,
        "tools/call",
        json!({"name": tool, "arguments": args}),
    );
    (child, r["result"]["structuredContent"].clone())
}

/// Ends a session the way the MCP TypeScript SDK's stdio client does.
fn close_like_the_sdk(mut child: Child) {
    drop(child.stdin.take());
    let exited = |child: &mut Child, within: Duration| {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    };
    if exited(&mut child, Duration::from_secs(2)) {
        return;
    }
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    if !exited(&mut child, Duration::from_secs(2)) {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The state a fresh process reports for `root`.
fn status(home: &Path, root: &str) -> Value {
    let (mut child, v) = call(
        home,
        "manage_index",
        json!({"action": "status", "path": root}),
    );
    drop(child.stdin.take());
    let _ = child.wait();
    v
}

/// Polls `status` from fresh processes until the build of `root` is over: the build must
/// have been seen running (with its progress) and must end `indexed` with every file.
fn check_completes(home: &Path, root: &str, what: &str) {
    let started = Instant::now();
    let mut seen_running = false;
    loop {
        let v = status(home, root);
        match v["state"].as_str() {
            Some("indexing") => {
                assert!(v["progress"].is_object(), "{what}: {v}");
                seen_running = true;
            }
            Some("indexed") => {
                assert!(
                    seen_running,
                    "{what}: the build was over before the client left; the corpus is too small to show anything"
                );
                assert_eq!(v["stats"]["files"], CORPUS_FILES, "{what}: {v}");
                return;
            }
            _ => panic!("{what}: the build did not survive its client: {v}"),
        }
        assert!(
            started.elapsed() < BUILD_WAIT,
            "{what}: still building: {v}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_build_outlives_a_client_that_closes_at_once() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    corpus(repo.path());
    let root = repo.path().canonicalize().unwrap();
    let root = root.to_str().unwrap();
    let (child, v) = call(
        home.path(),
        "manage_index",
        json!({"action": "create", "path": root}),
    );
    assert_eq!(v["state"], "indexing", "{v}");
    close_like_the_sdk(child);
    check_completes(home.path(), root, "raw client");
}

#[test]
fn inspector_cli_create_builds_the_index() {
    let Some(inspector) = std::env::var_os("SATORI_TEST_INSPECTOR").filter(|v| !v.is_empty())
    else {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: SATORI_TEST_INSPECTOR does not name the Inspector CLI (npm @modelcontextprotocol/inspector; .ci/run installs it)"
        );
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    corpus(repo.path());
    let root = repo.path().canonicalize().unwrap();
    let root = root.to_str().unwrap();
    let out = Command::new(inspector)
        // Whatever the Inspector keeps under the user's home stays in the test's directory.
        .env("HOME", scratch.path())
        .arg("--cli")
        .arg("-e")
        .arg(format!("{}={}", env::HOME, home.path().display()))
        .arg(binary("satori"))
        .args(["--method", "tools/call", "--tool-name", "manage_index"])
        .args(["--tool-arg", "action=create", "--tool-arg"])
        .arg(format!("path={root}"))
        .stdin(Stdio::null())
        .output()
        .expect("run the Inspector CLI");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("indexing"), "{stdout}");
    check_completes(home.path(), root, "Inspector CLI");
}
