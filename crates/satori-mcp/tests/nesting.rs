//! Deeply nested code under a memory limit: thousands of nested modules, functions,
//! namespaces and classes (on one line, one level a line, and a 180 KB file of them) in
//! Rust, JavaScript, C++, TypeScript and Kotlin are indexed, read (plain and annotated) and
//! outlined by the built `satori` binary confined to a 512 MB address space, and the index
//! status counts the files nested past the depth cap. A plain window of a large file is its
//! lines, without an outline.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use serde_json::{Value, json};

/// The address space the server may use, in KiB.
const MEMORY_LIMIT_KIB: u64 = 512 * 1024;

/// The opening and closing line of one nesting level, by file extension.
const LEVELS: &[(&str, &str, &str)] = &[
    ("rs", "mod m {", "}"),
    ("js", "function f() {", "}"),
    ("cpp", "namespace n {", "}"),
    ("ts", "namespace n {", "}"),
    ("kt", "class C {", "}"),
];

/// The nested files of one language, and whether their definitions nest past the depth
/// cap: 4,000 levels on one line (blank lines after it, so that it is not taken for minified
/// code and is indexed too), 4,000 levels one a line, and a file of about 180 KB nested one
/// level a line.
fn nested_files(ext: &str, open: &str, close: &str) -> Vec<(String, String, bool)> {
    let big = 180_000 / (open.len() + close.len() + 2);
    vec![
        (
            format!("one_line.{ext}"),
            format!(
                "{}{}\n{}",
                format!("{open} ").repeat(4000),
                close.repeat(4000),
                "\n".repeat(300)
            ),
            // The Kotlin grammar reads classes nested on one line as a syntax error, with
            // only the outermost class a definition.
            ext != "kt",
        ),
        (
            format!("levels.{ext}"),
            format!("{open}\n").repeat(4000) + &format!("{close}\n").repeat(4000),
            true,
        ),
        (
            format!("big.{ext}"),
            format!("{open}\n").repeat(big) + &format!("{close}\n").repeat(big),
            true,
        ),
    ]
}

type Client = RunningService<rmcp::RoleClient, ()>;

/// The built server over `home`, confined to [`MEMORY_LIMIT_KIB`] of address space (few
/// threads and malloc arenas, so that the limit measures the work and not the machine's
/// core count), reading any file.
async fn limited_server(home: &Path) -> (tokio::process::Child, Client) {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {MEMORY_LIMIT_KIB} && exec \"$0\""))
        .arg(env!("CARGO_BIN_EXE_satori"))
        .env("SATORI_HOME", home)
        .env("SATORI_READ_ANY_FILE", "true")
        .env("MALLOC_ARENA_MAX", "2")
        .env("RAYON_NUM_THREADS", "2")
        .env("TOKIO_WORKER_THREADS", "2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let inp = child.stdin.take().unwrap();
    let client = ().serve((out, inp)).await.unwrap();
    (child, client)
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("args must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("{tool} got no answer (the server died?): {e}"))
}

fn structured(r: &CallToolResult) -> Value {
    r.structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structured content: {r:?}"))
}

/// The status of `root` once its build is over.
async fn built(client: &Client, root: &Path) -> Value {
    for _ in 0..2400 {
        let r = call(
            client,
            "manage_index",
            json!({"action": "status", "path": root}),
        )
        .await;
        let v = structured(&r);
        if v["state"] != "indexing" {
            assert_eq!(v["state"], "indexed", "{v}");
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("indexing did not finish");
}

#[tokio::test]
async fn deeply_nested_code_is_indexed_read_and_outlined_in_bounded_memory() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    let files: Vec<(String, String, bool)> = LEVELS
        .iter()
        .flat_map(|(ext, open, close)| nested_files(ext, open, close))
        .collect();
    for (name, text, _) in &files {
        std::fs::write(root.join(name), text).unwrap();
    }
    let (mut child, client) = limited_server(home.path()).await;

    let r = call(
        &client,
        "manage_index",
        json!({"action": "create", "path": root}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let status = built(&client, &root).await;
    let stats = &status["stats"];
    assert_eq!(stats["files"], files.len(), "{status}");
    let too_deep = files.iter().filter(|(_, _, deep)| *deep).count();
    assert_eq!(stats["tooDeepFiles"], too_deep, "{status}");

    #[track_caller]
    fn check(name: &str, what: &str, r: &CallToolResult, expect: impl Fn(&Value) -> bool) {
        assert_ne!(r.is_error, Some(true), "{name}: {what}: {r:?}");
        let v = structured(r);
        assert!(expect(&v), "{name}: {what}: {v}");
    }
    for (name, text, _) in &files {
        let path = root.join(name);
        let first_two: Vec<&str> = text.lines().take(2).collect();
        let window = json!({"path": path, "start_line": 1, "end_line": 2});
        let plain = call(&client, "read_file", window.clone()).await;
        check(name, "plain read", &plain, |v| {
            v["content"] == first_two.join("\n")
        });
        let mut annotated = window;
        annotated["mode"] = json!("annotated");
        let annotated = call(&client, "read_file", annotated).await;
        check(name, "annotated read", &annotated, |v| {
            v["outlineStatus"] == "ok"
                && v["outline"]["symbols"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty())
        });
        let outline = call(&client, "file_outline", json!({"path": root, "file": name})).await;
        check(name, "file_outline", &outline, |v| {
            v["status"] == "ok"
                && v["outline"]["symbols"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty())
        });
    }
    let search = call(
        &client,
        "search_codebase",
        json!({"path": root, "query": "namespace n"}),
    )
    .await;
    assert_ne!(search.is_error, Some(true), "{search:?}");

    client.cancel().await.unwrap();
    let _ = child.wait().await;
}

/// A plain window of a large file is its lines and nothing more: no outline, which only an
/// annotated read of the same lines computes. What skipping the parse saves is measured by
/// `bench/read_window.py`, not here: a timing would be decided by the machine's load.
#[tokio::test]
async fn a_plain_window_of_a_large_file_is_its_lines() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap().join("large.rs");
    let mut text = String::new();
    for i in 0..8_000 {
        text.push_str(&format!(
            "pub fn step_{i}(x: u64) -> u64 {{\n    x.wrapping_mul({i}) ^ 0x5a5a\n}}\n"
        ));
    }
    assert!((500_000..1_000_000).contains(&text.len()));
    std::fs::write(&path, &text).unwrap();
    let (mut child, client) = limited_server(home.path()).await;

    for (mode, outline) in [("plain", false), ("annotated", true)] {
        let r = call(
            &client,
            "read_file",
            json!({"path": path, "start_line": 1, "end_line": 2, "mode": mode}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
        let v = structured(&r);
        assert_eq!(
            v["content"].as_str(),
            Some("pub fn step_0(x: u64) -> u64 {\n    x.wrapping_mul(0) ^ 0x5a5a"),
            "{mode}: {v}"
        );
        assert_eq!(v["outlineStatus"] == "ok", outline, "{mode}: {v}");
    }

    client.cancel().await.unwrap();
    let _ = child.wait().await;
}
