//! Freshness across processes: what one `satori` process recorded about a tree never hides
//! an edit from another. An edit made while no server watched, or seen only by a server
//! killed before its debounce, is found by the next `satori-cli` search, however recent the
//! last sync; and a search while another process syncs the same codebase neither reports a
//! reindex in progress nor misses the edit.
//!
//! Waits poll with generous deadlines; nothing here asserts how long anything took.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use satori_e2e::{binary, small_repo, write_files};
use satori_protocol::env;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(120);

fn cli_command(home: &Path, tool: &str, args: &Value) -> Command {
    let mut c = Command::new(binary("satori-cli"));
    c.env("SATORI_HOME", home)
        .env("SATORI_SERVER_BIN", binary("satori"))
        // Lexical only: the suite is about processes and files, not about embeddings.
        .env("SATORI_EMBEDDING_MODEL", "none")
        // Each call its own process: the suite is about processes that share a home.
        .env("SATORI_DAEMON", "off")
        .args(["tool", "call", tool, "--args-json", &args.to_string()]);
    c
}

/// Runs one CLI call and returns its envelope.
fn cli(home: &Path, tool: &str, args: &Value) -> Value {
    let out = cli_command(home, tool, args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {stdout:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    doc["structuredContent"].clone()
}

fn create(home: &Path, root: &Path) {
    let r = cli(
        home,
        "manage_index",
        &json!({"action": "create", "path": root}),
    );
    assert_eq!(r["status"], "ok", "{r}");
}

/// Searches `root` for exactly `word` and returns the files found.
fn search(home: &Path, root: &Path, word: &str) -> (Vec<String>, Value) {
    let r = cli(
        home,
        "search_codebase",
        &json!({"path": root, "query": format!("must:{word} {word}"), "scope": "mixed"}),
    );
    assert_eq!(r["status"], "ok", "{r}");
    let files = r["results"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["file"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (files, r)
}

/// The codebase's record in the state file.
fn record(home: &Path, root: &Path) -> Value {
    let text = std::fs::read_to_string(home.join("state.json")).unwrap_or_default();
    let state: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    state["codebases"][root.to_str().unwrap()].clone()
}

/// Edits made after the last sync, while no server watched (the index was just built, so
/// the recorded sync is far younger than the threshold): the next one-shot process finds
/// them, and a search of the unchanged tree after that finds the same.
#[test]
fn an_edit_made_while_no_server_watched_is_found_by_the_next_process() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    small_repo(dir.path());
    let root = dir.path().canonicalize().unwrap();
    create(home.path(), &root);
    let (files, _) = search(home.path(), &root, "retry_with_backoff");
    assert_eq!(files, ["src/retry.py"]);
    for (rel, body) in [
        (
            "src/retry.py",
            "def heron_backoff_marker():\n    return 1\n",
        ),
        ("src/added.py", "def egret_added_marker():\n    return 2\n"),
    ] {
        write_files(&root, &[(rel, body)]);
    }
    for (word, want) in [
        ("heron_backoff_marker", "src/retry.py"),
        ("egret_added_marker", "src/added.py"),
        ("retry_with_backoff", ""),
    ] {
        let (files, r) = search(home.path(), &root, word);
        let want: Vec<&str> = [want].into_iter().filter(|w| !w.is_empty()).collect();
        assert_eq!(files, want, "{word}: {r}");
    }
    // Unchanged since: the next process finds the same.
    let (files, r) = search(home.path(), &root, "heron_backoff_marker");
    assert_eq!(files, ["src/retry.py"], "{r}");
}

/// A long-running server saw the edit but was killed before its debounce let it sync: the
/// next process finds the edit, although that server's own check of the tree is recent.
#[test]
fn an_edit_seen_only_by_a_server_killed_before_its_debounce_is_found() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    small_repo(dir.path());
    let root = dir.path().canonicalize().unwrap();
    create(home.path(), &root);
    let mut server = Command::new(binary("satori"))
        .env(env::HOME, home.path())
        .env(env::RUN_MODE, "mcp")
        .env(env::WATCH_DEBOUNCE_MS, "600000")
        .env("SATORI_EMBEDDING_MODEL", "none")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        if method == "initialize" {
            writeln!(
                stdin,
                "{}",
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
            )
            .unwrap();
        }
        loop {
            let line = lines.next().expect("the server answered").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}),
    );
    // The server checks the tree itself (its first search), and watches it from then on.
    let args = json!({"path": root, "query": "must:retry_with_backoff retry_with_backoff"});
    let first = ask(
        2,
        "tools/call",
        json!({"name": "search_codebase", "arguments": args}),
    );
    assert_eq!(
        first["result"]["structuredContent"]["status"], "ok",
        "{first}"
    );
    write_files(
        &root,
        &[(
            "src/retry.py",
            "def plover_killed_marker():\n    return 1\n",
        )],
    );
    server.kill().unwrap();
    server.wait().unwrap();
    let (files, r) = search(home.path(), &root, "plover_killed_marker");
    assert_eq!(files, ["src/retry.py"], "{r}");
}

/// A change that takes another process's sync a moment to index: `files` new files of
/// `lines` functions each.
fn bulk(root: &Path, batch: usize, files: usize, lines: usize) {
    let bodies: Vec<(String, String)> = (0..files)
        .map(|i| {
            let body: String = (0..lines)
                .map(|k| format!("/// Bulk helper {k}.\npub fn bulk_helper_{batch}_{i}_{k}(x: u32) -> u32 {{\n    x + {k}\n}}\n"))
                .collect();
            (format!("bulk{batch}/d{}/f{i}.rs", i % 40), body)
        })
        .collect();
    let refs: Vec<(&str, &str)> = bodies
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_str()))
        .collect();
    write_files(root, &refs);
}

/// While one process syncs a change of `files` files of `lines` functions, a search from
/// another process is answered with the edit just made, without `REINDEX_IN_PROGRESS` (no
/// reindex runs), having found `added` files added itself (the ones it layered).
#[track_caller]
fn check_search_during_sync(name: &str, files: usize, lines: usize, added: u64) {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    small_repo(dir.path());
    let root = dir.path().canonicalize().unwrap();
    create(home.path(), &root);
    let started = Instant::now();
    let mut batch = 0;
    let (mut syncer, edit) = loop {
        batch += 1;
        bulk(&root, batch, files, lines);
        let edit = format!("ibis_marker_{batch}");
        write_files(
            &root,
            &[("src/retry.py", &format!("def {edit}():\n    return 3\n"))],
        );
        let mut syncer: Child = cli_command(
            home.path(),
            "manage_index",
            &json!({"action": "sync", "path": root}),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        // The other process's sync shows as `indexing` while it writes.
        let mut running = false;
        while syncer.try_wait().unwrap().is_none() {
            if record(home.path(), &root)["state"] == "indexing" {
                running = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if running {
            break (syncer, edit);
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{name}: never saw the other process's sync running"
        );
    };
    let (found, r) = search(home.path(), &root, &edit);
    let warnings = r["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        !warnings.iter().any(|w| w == "REINDEX_IN_PROGRESS"),
        "{name}: no reindex runs: {r}"
    );
    assert_eq!(found, ["src/retry.py"], "{name}: {r}");
    assert_eq!(r["freshnessDecision"]["mode"], "synced", "{name}: {r}");
    assert_eq!(
        r["freshnessDecision"]["stats"]["added"], added,
        "{name}: {r}"
    );
    assert!(syncer.wait().unwrap().success(), "{name}");
}

#[test]
fn a_search_while_another_process_syncs_sees_the_edit() {
    // More changes than a layer holds: the search waits for the other sync to publish, and
    // then finds the tree as it published it.
    check_search_during_sync("many_files_wait", 3000, 1, 0);
    // Few files, each slow to index: the search layers them and the edit at once.
    // Large enough that the other sync is still running when the search looks.
    check_search_during_sync("few_files_layer", 12, 9000, 12);
}
