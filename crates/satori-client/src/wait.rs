//! Waiting for a background index build to finish.
//!
//! `manage_index create|reindex` returns as soon as indexing has started. A
//! one-shot client that exited right away would take the server (and the
//! build) down with it, so it polls `manage_index status` on the same child
//! until the state is terminal.

use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::classify::is_terminal;
use crate::{Client, ClientError};

/// Name of the index management tool (from the contract).
pub use satori_protocol::MANAGE_INDEX;

/// Poll `manage_index {action:"status", path}` every `poll_every` until the
/// envelope's top-level `state` is anything but `indexing`, and return that
/// last result. `on_progress` sees every status result, the last one included.
/// The whole wait, including each status call, is bounded by `timeout`.
pub async fn wait_for_index(
    client: &mut Client,
    path: &str,
    poll_every: Duration,
    timeout: Duration,
    mut on_progress: impl FnMut(&Value),
) -> Result<Value, ClientError> {
    let deadline = Instant::now() + timeout;
    let mut args = Map::new();
    args.insert("action".into(), json!("status"));
    args.insert("path".into(), json!(path));
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(wait_timeout(path, timeout));
        }
        let result = match client
            .call_tool(MANAGE_INDEX, args.clone(), remaining)
            .await
        {
            // Report the whole wait, not the slice the last poll happened to get.
            Err(ClientError::CallTimeout { .. }) => return Err(wait_timeout(path, timeout)),
            other => other?,
        };
        on_progress(&result);
        if is_terminal(&result) {
            return Ok(result);
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(poll_every.min(remaining)).await;
    }
}

fn wait_timeout(path: &str, timeout: Duration) -> ClientError {
    ClientError::CallTimeout {
        what: format!("the index build of {path}"),
        timeout,
    }
}
