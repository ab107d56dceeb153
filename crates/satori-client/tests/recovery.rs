//! Guard recovery through the library API, against the scriptable fake
//! server of the CLI tests: what a long-lived client object (the Node addon,
//! a bridge) sees over several requests.

use std::path::Path;
use std::time::Duration;

use satori_client::{Attempts, Client, ClientError, GuardRecovery, SpawnOptions};
use serde_json::{Map, json};

mod common;
use common::fake_options;

const TIMEOUT: Duration = Duration::from_secs(30);

/// A client of the fake with `scenario` and `breaks`, logging its spawns to `log`.
fn options(scenario: &str, breaks: &str, log: &Path, policy: GuardRecovery) -> SpawnOptions {
    let mut options = fake_options(
        TIMEOUT,
        vec![
            ("FAKE_SCENARIO".into(), scenario.into()),
            ("FAKE_GUARD_BREAKS".into(), breaks.into()),
            ("FAKE_SPAWN_LOG".into(), log.to_string_lossy().into_owned()),
            // The first attempt runs with the guard the server would pick itself.
            ("SATORI_CLI_STDOUT_GUARD".into(), "drop".into()),
        ],
    );
    options.guard_recovery = policy;
    options
}

fn spawns(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn attempts(count: u32, attempted: bool, succeeded: bool, mode: &str) -> Attempts {
    Attempts {
        attempt_count: count,
        guard_recovery_attempted: attempted,
        guard_recovery_succeeded: succeeded,
        effective_guard_mode: mode.into(),
        daemon_recovery: None,
    }
}

#[tokio::test]
async fn recovery_is_sticky_for_the_rest_of_the_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("spawns");
    let mut client = Client::spawn(options("ok", "call", &log, GuardRecovery::Auto))
        .await
        .expect("connects: the fake only breaks calls");
    assert_eq!(client.attempts(), &attempts(1, false, false, "drop"));

    for query in ["first", "second", "third"] {
        let result = client
            .call_tool(
                "search_codebase",
                Map::from_iter([("query".to_owned(), json!(query))]),
                TIMEOUT,
            )
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(result["isError"], json!(false), "{query}");
    }
    // One recovery for the first call; the others reuse the guard-off server.
    assert_eq!(spawns(&log), ["drop", "off"]);
    assert_eq!(client.attempts(), &attempts(2, true, true, "off"));
    client.shutdown().await;
}

#[tokio::test]
async fn a_failure_with_the_guard_already_off_is_final() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("spawns");
    let mut client = Client::spawn(options("garbage_call", "", &log, GuardRecovery::Auto))
        .await
        .expect("connects");
    let err = client
        .call_tool("list_codebases", Map::new(), TIMEOUT)
        .await
        .expect_err("both attempts see garbage");
    let ClientError::RecoveryFailed {
        first_mode,
        first,
        second,
    } = &err
    else {
        panic!("a failed recovery, not {err:?}");
    };
    assert_eq!(first_mode, "drop");
    for attempt in [first, second] {
        assert!(
            matches!(attempt.as_ref(), ClientError::Protocol(m)
                if m.contains("server wrote non-protocol output on stdout")),
            "{attempt}"
        );
    }
    assert_eq!(client.attempts(), &attempts(2, true, false, "off"));
    // The client is still usable for a new attempt only through connect();
    // a plain request reports the closed connection instead of retrying.
    let again = client
        .call_tool("list_codebases", Map::new(), TIMEOUT)
        .await
        .expect_err("connection is gone");
    assert!(matches!(again, ClientError::Closed), "{again}");
    assert_eq!(spawns(&log), ["drop", "off"]);
}

#[tokio::test]
async fn never_means_one_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("spawns");
    let err = Client::spawn(options("ok", "init", &log, GuardRecovery::Never))
        .await
        .expect_err("the handshake is corrupted");
    assert!(
        matches!(&err, ClientError::Protocol(m)
            if m.contains("server wrote non-protocol output on stdout")),
        "{err}"
    );
    assert_eq!(spawns(&log), ["drop"]);
}
