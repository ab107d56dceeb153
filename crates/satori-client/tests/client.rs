//! The client library against the scriptable fake server of the CLI tests:
//! what any long-lived caller relies on, independent of guard recovery.

use std::path::Path;
use std::time::{Duration, Instant};

use satori_client::{Client, SpawnOptions, Wire, index_state, is_index_success, wait_for_index};
use satori_protocol::envelope::IndexState;
use serde_json::{Map, Value, json};

mod common;
use common::fake_options;

const TIMEOUT: Duration = Duration::from_secs(30);

fn options(env: &[(&str, &Path)]) -> SpawnOptions {
    fake_options(
        TIMEOUT,
        env.iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_string_lossy().into_owned()))
            .collect(),
    )
}

/// The methods the fake received, in order.
fn methods(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).expect("request log line");
            entry["method"].as_str().unwrap_or("?").to_owned()
        })
        .collect()
}

/// `tools/list` is asked once per client; later calls are served from memory.
#[tokio::test]
async fn tools_are_listed_once_per_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests");
    let mut client = Client::spawn(options(&[("FAKE_REQUEST_LOG", &log)]))
        .await
        .expect("connects");
    let first = client.list_tools(TIMEOUT).await.expect("first list");
    let second = client.list_tools(TIMEOUT).await.expect("second list");
    assert_eq!(first, second);
    let names: Vec<&str> = first["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect();
    let mut want: Vec<&str> = satori_protocol::tools().iter().map(|t| t.name).collect();
    want.extend(["fancy", "strict"]);
    assert_eq!(names, want);
    client.shutdown().await;
    let listed = methods(&log).iter().filter(|m| *m == "tools/list").count();
    assert_eq!(listed, 1, "{:?}", methods(&log));
}

/// A wait that ends in `sync_completed` ends there, and successfully: a
/// synced index is as searchable and finished as a freshly built one.
#[tokio::test]
async fn index_wait_ends_at_sync_completed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("requests");
    let mut options = options(&[("FAKE_REQUEST_LOG", &log)]);
    options.env.extend(
        [
            ("FAKE_SCENARIO", "index"),
            ("FAKE_POLLS", "2"),
            ("FAKE_INDEX_END", "sync_completed"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let mut client = Client::spawn(options).await.expect("connects");
    let kickoff = Map::from_iter([
        ("action".to_owned(), json!("create")),
        ("path".to_owned(), json!("/repo")),
    ]);
    client
        .call_tool("manage_index", kickoff, TIMEOUT)
        .await
        .expect("kick-off answered");
    let mut seen = Vec::new();
    let last = wait_for_index(
        &mut client,
        "/repo",
        Duration::from_millis(10),
        TIMEOUT,
        |status| seen.push(index_state(status)),
    )
    .await
    .expect("the wait ends");
    client.shutdown().await;
    let indexing = Some(Wire::Known(IndexState::Indexing));
    assert_eq!(
        seen,
        [
            indexing.clone(),
            indexing,
            Some(Wire::Known(IndexState::SyncCompleted))
        ]
    );
    assert!(is_index_success(&last), "{last}");
    let calls = methods(&log).iter().filter(|m| *m == "tools/call").count();
    assert_eq!(calls, 4, "one kick-off and three status polls");
}

/// Dropping a client without `shutdown` (a panic, a cancelled future) still
/// takes its server down.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_client_kills_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let client = Client::spawn(options(&[("FAKE_PID_FILE", &pid_file)]))
        .await
        .expect("connects");
    let pid = client.pid().expect("a running child has a pid");
    assert_eq!(
        std::fs::read_to_string(&pid_file).expect("fake wrote its pid"),
        pid.to_string()
    );
    drop(client);
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                state.starts_with('Z') || state.starts_with('X')
            })
            .unwrap_or(true)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(), "server {pid} outlived its client");
}
