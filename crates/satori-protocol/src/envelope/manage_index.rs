//! The `manage_index` envelope.

use serde::{Deserialize, Serialize};

use super::{Compatibility, Hints, IndexState, Status};
use crate::tools::manage_index::{ManageAction, NAME};

/// Version of the envelope shape; bumped only on incompatible change.
const ENVELOPE_VERSION: u32 = 1;

string_enum! {
    /// How a finished indexing run ended.
    pub enum IndexStatus {
        Completed = "completed",
        LimitReached = "limit_reached",
    }
}

string_enum! {
    /// What the reindex preflight concluded.
    pub enum PreflightOutcome {
        ReindexRequired = "reindex_required",
        ReindexUnnecessaryIgnoreOnly = "reindex_unnecessary_ignore_only",
        Unknown = "unknown",
        ProbeFailed = "probe_failed",
    }
}

string_enum! {
    /// How sure the preflight is.
    pub enum PreflightConfidence {
        High = "high",
        Low = "low",
    }
}

/// Result of the check run before a reindex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preflight {
    /// Conclusion.
    pub outcome: PreflightOutcome,
    /// Confidence in it.
    pub confidence: PreflightConfidence,
    /// Set when a probe failed and the outcome is a guess.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_failed: Option<bool>,
}

/// Progress of a running indexing job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// 0 to 100.
    pub percentage: f64,
    /// Current phase, e.g. `scanning`, `embedding`.
    pub phase: String,
    /// Files processed so far.
    pub files_done: u64,
    /// Files to process in total (0 while still scanning).
    pub files_total: u64,
    /// Chunks produced so far.
    pub chunks: u64,
}

/// Counts of an index or of the last sync. Every field is optional: `status` of a fresh index
/// has no sync counts, and `sync` reports only what changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexStats {
    /// Files in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    /// Chunks in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<u64>,
    /// How the last full indexing ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_status: Option<IndexStatus>,
    /// When the index was last updated (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<String>,
    /// Duration of the operation that produced these counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Files added by a sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<u64>,
    /// Files removed by a sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    /// Files modified by a sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<u64>,
}

/// The answer of every `manage_index` action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManageIndexEnvelope {
    /// Always `manage_index`.
    pub tool: String,
    /// Envelope shape version (1).
    pub version: u32,
    /// Action that was requested.
    pub action: ManageAction,
    /// Codebase root as requested.
    pub path: String,
    /// Outcome of the request.
    pub status: Status,
    /// Index state after the request; what `satori-cli` polls on after create/reindex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<IndexState>,
    /// Machine-readable cause of a non-ok status (see [`super::reasons`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// One or two sentences for the agent.
    pub message: String,
    /// Longer text for a human operator.
    pub human_text: String,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps by name.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
    /// Reindex preflight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Preflight>,
    /// Progress while indexing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// Counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<IndexStats>,
    /// Fingerprint check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
}

impl ManageIndexEnvelope {
    /// An envelope with the required fields; set the optional ones afterwards.
    pub fn new(
        action: ManageAction,
        path: impl Into<String>,
        status: Status,
        message: impl Into<String>,
        human_text: impl Into<String>,
    ) -> Self {
        Self {
            tool: NAME.to_owned(),
            version: ENVELOPE_VERSION,
            action,
            path: path.into(),
            status,
            state: None,
            reason: None,
            message: message.into(),
            human_text: human_text.into(),
            warnings: Vec::new(),
            hints: Hints::new(),
            preflight: None,
            progress: None,
            stats: None,
            compatibility: None,
        }
    }
}
