//! Waiting for a background index build to finish.
//!
//! `manage_index create|reindex` returns as soon as indexing has started. A
//! one-shot client that exited right away would take the server (and the
//! build) down with it, so it polls `manage_index status` on the same child
//! until the state is terminal. `sync_completed` (the state after any sync,
//! including one a search triggered) is as finished as `indexed`; waiting for
//! `indexed` alone would poll a synced index forever.

use std::time::Duration;

use satori_protocol::ManageAction;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::classify::is_terminal;
use crate::{Client, ClientError};

/// Name of the index management tool (from the contract).
pub use satori_protocol::MANAGE_INDEX;

/// Whether a call starts a background index build that a one-shot client
/// must wait for: `manage_index` with `action` `create` or `reindex`.
pub fn starts_index_build(tool: &str, args: &Map<String, Value>) -> bool {
    let action = args
        .get("action")
        .and_then(Value::as_str)
        .and_then(ManageAction::from_wire);
    tool == MANAGE_INDEX && matches!(action, Some(ManageAction::Create | ManageAction::Reindex))
}

/// Poll `manage_index {action:"status", path}` every `poll_every` until the
/// envelope's top-level `state` is terminal (see [`crate::is_terminal`]), and return that
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_create_and_reindex_start_a_build() {
        let args = |action: &str| Map::from_iter([("action".to_owned(), json!(action))]);
        let cases = [
            (MANAGE_INDEX, args("create"), true),
            (MANAGE_INDEX, args("reindex"), true),
            (MANAGE_INDEX, args("sync"), false),
            (MANAGE_INDEX, args("status"), false),
            (MANAGE_INDEX, args("rebuild"), false),
            (MANAGE_INDEX, Map::new(), false),
            ("search_codebase", args("create"), false),
        ];
        for (tool, args, want) in cases {
            assert_eq!(starts_index_build(tool, &args), want, "{tool} {args:?}");
        }
    }
}
