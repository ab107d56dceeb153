//! `satori-cli` driving the real `satori`: the happy path a script relies on (list the tools,
//! create an index and wait for it, search it) and the non-ok exit path, with stdout being
//! exactly one JSON document every time.

use std::path::Path;
use std::process::{Command, Output};

use satori_e2e::{binary, small_repo};
use serde_json::{Value, json};

/// A call in a server started for it: what these cases check (its stderr forwarded, its
/// stdout guard) belongs to that server; the per-user server is `tests/daemon.rs`'s.
fn cli(home: &Path, args: &[&str]) -> (Output, Value) {
    let out = Command::new(binary("satori-cli"))
        .env("SATORI_HOME", home)
        .env("SATORI_SERVER_BIN", binary("satori"))
        .env("SATORI_DAEMON", "off")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout:?}"));
    (out, doc)
}

fn envelope(result: &Value) -> Value {
    result["structuredContent"].clone()
}

#[test]
fn index_then_search_from_a_script() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = tempfile::tempdir().unwrap();
    small_repo(repo_dir.path());
    let repo = repo_dir.path().canonicalize().unwrap();
    let repo = repo.to_str().unwrap();

    let (out, tools) = cli(home.path(), &["tools", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "list_codebases",
            "manage_index",
            "search_codebase",
            "file_outline",
            "call_graph",
            "read_file"
        ]
    );
    assert!(tools["tools"][2]["inputSchema"]["properties"]["query"].is_object());

    let create = json!({"action": "create", "path": repo}).to_string();
    let (out, result) = cli(
        home.path(),
        &["tool", "call", "manage_index", "--args-json", &create],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(envelope(&result)["state"], "indexed", "{result}");
    assert!(
        envelope(&result)["stats"]["chunks"].as_u64().unwrap() >= 2,
        "{result}"
    );

    let search = json!({"path": repo, "query": "retry_with_backoff", "limit": 3}).to_string();
    let (out, result) = cli(
        home.path(),
        &["tool", "call", "search_codebase", "--args-json", &search],
    );
    assert_eq!(out.status.code(), Some(0));
    let env = envelope(&result);
    assert_eq!(env["status"], "ok");
    assert_eq!(env["results"][0]["file"], "src/retry.py", "{env}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[TELEMETRY] "),
        "telemetry goes to stderr: {stderr}"
    );
}

#[test]
fn non_ok_envelope_exits_1_with_the_token() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = tempfile::tempdir().unwrap();
    let args = json!({"path": repo_dir.path(), "query": "anything"}).to_string();
    let (out, result) = cli(
        home.path(),
        &["tool", "call", "search_codebase", "--args-json", &args],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(envelope(&result)["status"], "not_indexed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("E_TOOL_ERROR status=not_indexed")),
        "{stderr}"
    );
}

#[test]
fn invalid_arguments_exit_1_as_a_tool_error() {
    let home = tempfile::tempdir().unwrap();
    let (out, result) = cli(
        home.path(),
        &[
            "tool",
            "call",
            "search_codebase",
            "--args-json",
            r#"{"path":"/x","query":"q","limit":99}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Error: Invalid arguments for 'search_codebase'. limit:"),
        "{text}"
    );
}

/// One `satori-cli list_codebases` against the real server (debug build) whose
/// test hook writes stray bytes to fd 1 during every tool call.
fn stray_call(home: &Path, guard: &str, cli_args: &[&str]) -> (Output, Value) {
    let out = Command::new(binary("satori-cli"))
        .env("SATORI_HOME", home)
        .env("SATORI_SERVER_BIN", binary("satori"))
        .env("SATORI_TEST_STRAY_STDOUT", "STRAY-LINE-FROM-A-DEPENDENCY")
        .env("SATORI_CLI_STDOUT_GUARD", guard)
        .env("SATORI_DAEMON", "off")
        .env_remove("SATORI_CLI_GUARD_RECOVERY")
        .args(cli_args)
        .arg("list_codebases")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout:?}"));
    (out, doc)
}

/// (C) The real server's fd-level guard, seen through the CLI in every mode:
/// with the guard on, stray writes never reach the protocol and no recovery
/// is needed; with it off they corrupt the stream, the CLI says so with
/// `E_PROTOCOL_FAILURE`, and recovery has nothing left to try.
#[test]
fn real_server_guard_modes_through_the_cli() {
    let home = tempfile::tempdir().unwrap();
    struct Want {
        guard: &'static str,
        args: &'static [&'static str],
        exit: i32,
        stderr_has: &'static str,
        attempts: Option<Value>,
    }
    let cases = [
        Want {
            guard: "drop",
            args: &[],
            exit: 0,
            stderr_has: "[STDOUT_BLOCKED] dropped len=",
            attempts: None,
        },
        Want {
            guard: "redirect",
            args: &[],
            exit: 0,
            stderr_has: "STRAY-LINE-FROM-A-DEPENDENCY",
            attempts: None,
        },
        Want {
            guard: "drop",
            args: &["--guard-recovery", "auto"],
            exit: 0,
            stderr_has: "[STDOUT_BLOCKED] dropped len=",
            attempts: Some(json!({"attemptCount": 1, "guardRecoveryAttempted": false,
                "guardRecoverySucceeded": false, "effectiveGuardMode": "drop"})),
        },
        Want {
            guard: "off",
            args: &[],
            exit: 3,
            stderr_has: "E_PROTOCOL_FAILURE: tools/call list_codebases: server wrote non-protocol output on stdout: \"STRAY-LINE-FROM-A-DEPENDENCY\"",
            attempts: None,
        },
        Want {
            guard: "off",
            args: &["--guard-recovery", "auto"],
            exit: 3,
            stderr_has: "[STDOUT_GUARD_DISABLED]",
            attempts: Some(json!({"attemptCount": 1, "guardRecoveryAttempted": false,
                "guardRecoverySucceeded": false, "effectiveGuardMode": "off"})),
        },
    ];
    for want in cases {
        let (out, doc) = stray_call(home.path(), want.guard, want.args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let label = format!("guard={} {:?}", want.guard, want.args);
        assert_eq!(out.status.code(), Some(want.exit), "{label}: {stderr}");
        assert!(stderr.contains(want.stderr_has), "{label}: {stderr}");
        if want.exit == 0 {
            assert_eq!(doc["isError"], false, "{label}: {doc}");
        }
        if let Some(attempts) = want.attempts {
            let recorded = if want.exit == 0 {
                &doc["_meta"]["satori/guardRecovery"]
            } else {
                &doc["error"]["guardRecovery"]
            };
            assert_eq!(recorded, &attempts, "{label}: {doc}");
        }
    }
}

/// Wrapper mode against the real schemas: flags become typed arguments.
#[test]
fn wrapper_mode_against_the_real_schemas() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = tempfile::tempdir().unwrap();
    small_repo(repo_dir.path());
    let repo = repo_dir.path().canonicalize().unwrap();
    let repo = repo.to_str().unwrap();

    let (out, result) = cli(
        home.path(),
        &["manage_index", "--action", "create", "--path", repo],
    );
    assert_eq!(out.status.code(), Some(0), "{result}");
    let (out, result) = cli(
        home.path(),
        &[
            "search_codebase",
            "--path",
            repo,
            "--query",
            "retry_with_backoff",
            "--limit",
            "2",
            "--result-mode",
            "raw",
            "--scope",
            "mixed",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{result}");
    let env = envelope(&result);
    assert_eq!(env["resultMode"], "raw", "{env}");
    // Three files, more chunks than the limit: exactly two come back, the
    // function that was asked for first.
    let results = env["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{env}");
    assert_eq!(results[0]["file"], "src/retry.py", "{env}");
    let file = repo_dir.path().join("src/retry.py");
    let (out, result) = cli(
        home.path(),
        &[
            "read_file",
            "--path",
            file.to_str().unwrap(),
            "--start-line",
            "1",
            "--end_line",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{result}");
    // Range checks are the server's: its own message comes back as a tool error.
    let (out, result) = cli(
        home.path(),
        &[
            "search_codebase",
            "--path",
            repo,
            "--query",
            "x",
            "--limit",
            "99",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{result}");
    let (out, result) = cli(home.path(), &["search_codebase", "--limit", "ten"]);
    assert_eq!(out.status.code(), Some(2), "{result}");
    assert_eq!(result["error"]["code"], "E_USAGE");
}
