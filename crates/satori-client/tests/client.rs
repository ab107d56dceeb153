//! The client library against the scriptable fake server of the CLI tests:
//! what any long-lived caller relies on, independent of guard recovery.

use std::path::Path;
use std::time::{Duration, Instant};

use satori_client::{Client, SpawnOptions};
use serde_json::Value;

mod common;
use common::fake_server;

const TIMEOUT: Duration = Duration::from_secs(30);

fn options(env: &[(&str, &Path)]) -> SpawnOptions {
    let mut options = SpawnOptions::new(fake_server());
    options.startup_timeout = TIMEOUT;
    options.env = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_string_lossy().into_owned()))
        .collect();
    options
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
    assert!(first["tools"].as_array().is_some_and(|t| !t.is_empty()));
    client.shutdown().await;
    let listed = methods(&log).iter().filter(|m| *m == "tools/list").count();
    assert_eq!(listed, 1, "{:?}", methods(&log));
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
