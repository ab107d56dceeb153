//! `satori-cli` driving the real `satori`: the happy path a script relies on (list the tools,
//! create an index and wait for it, search it) and the non-ok exit path, with stdout being
//! exactly one JSON document every time.

use std::path::Path;
use std::process::{Command, Output};

use satori_e2e::{binary, small_repo};
use serde_json::{Value, json};

fn cli(home: &Path, args: &[&str]) -> (Output, Value) {
    let out = Command::new(binary("satori-cli"))
        .env("SATORI_HOME", home)
        .env("SATORI_SERVER_BIN", binary("satori"))
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
