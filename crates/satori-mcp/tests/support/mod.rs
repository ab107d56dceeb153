//! Helpers the in-memory and edge tests of the server share: the configuration of a server
//! over a fresh home, and the reading of a `manage_index status` answer while a build runs.

use std::path::Path;

use satori_core::embed::ModelSource;
use satori_core::search::SearchTuning;
use satori_mcp::config::{Config, RunMode};
use satori_mcp::guard::GuardMode;
use serde_json::Value;

/// A server over `home` with the bundled model, short reads and the default tuning: what
/// the snapshots were taken with.
pub fn config(home: &Path) -> Config {
    Config {
        run_mode: RunMode::Cli,
        guard: GuardMode::Drop,
        home: home.to_path_buf(),
        read_max_lines: 20,
        read_max_bytes: 1024 * 1024,
        allow_secrets: false,
        user_home: None,
        read_any_file: false,
        sync_threshold_ms: 180_000,
        watch: None,
        reconcile_every: None,
        embedding: ModelSource::Bundled,
        hub: Default::default(),
        tuning: SearchTuning::default(),
    }
}

/// Whether the build a `manage_index status` result reports is over; a build that is over
/// must have left the index `indexed`.
#[track_caller]
pub fn build_over(status: &Value) -> bool {
    let state = &status["structuredContent"]["state"];
    if state == "indexing" {
        return false;
    }
    assert_eq!(state, "indexed", "{status}");
    true
}
