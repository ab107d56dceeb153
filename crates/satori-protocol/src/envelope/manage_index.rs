//! The `manage_index` envelope.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Compatibility, Hint, IndexState, Status};
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Preflight {
    /// Conclusion.
    pub outcome: PreflightOutcome,
    /// Confidence in it.
    pub confidence: PreflightConfidence,
    /// Set when a probe failed and the outcome is a guess.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_failed: Option<bool>,
}

/// Progress of a running indexing job (or how far a failed one got).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

/// Counts of a tracked index (`status`, and `create` of an indexed codebase).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IndexStats {
    /// Files in the index.
    pub files: u64,
    /// Chunks in the index.
    pub chunks: u64,
    /// How the last full indexing ended.
    pub index_status: IndexStatus,
    /// When the index was built (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<String>,
    /// Duration of the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// When the index was last brought up to date with the files (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_at: Option<String>,
    /// Files added by the last sync (state `sync_completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<u64>,
    /// Files removed by the last sync (state `sync_completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    /// Files modified by the last sync (state `sync_completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<u64>,
    /// Files found but left out of the index, by reason (absent when none were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<SkippedFiles>,
    /// Files indexed whose definitions nest deeper than the depth cap (64 levels): the
    /// definitions past it are not in their outline, and their lines are chunked by size
    /// alone (absent when there are none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_deep_files: Option<u64>,
}

/// Files left out of an index, by reason. Every text file is indexed otherwise: by its
/// grammar, or by line windows when its language has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkippedFiles {
    /// Binary content.
    pub binary: u64,
    /// Minified code.
    pub minified: u64,
    /// Text holding a secret (private key, token) that the secrets policy keeps out.
    pub secrets: u64,
    /// Larger than the size cap.
    pub oversized: u64,
}

/// Counts of the sync a `sync` action just ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SyncRunStats {
    /// Files new since the last sync.
    pub added: u64,
    /// Files gone since the last sync.
    pub removed: u64,
    /// Files changed since the last sync.
    pub modified: u64,
    /// Whether the sync wrote a new generation (false when nothing changed).
    pub rebuilt: bool,
    /// Duration of the sync.
    pub duration_ms: u64,
}

/// The `stats` of an envelope: the counts of the index, or of the sync that just ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(transform = crate::schema::exclusive_variants)]
pub enum ManageStats {
    /// `status` (and `create` of an indexed codebase).
    Index(IndexStats),
    /// `sync`.
    Sync(SyncRunStats),
}

/// The next steps of a `manage_index` answer, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManageHints {
    /// Poll the indexing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Hint>,
    /// Apply changes incrementally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<Hint>,
    /// Search the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Hint>,
    /// Create the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<Hint>,
    /// Rebuild the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reindex: Option<Hint>,
    /// Remove the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear: Option<Hint>,
}

impl ManageHints {
    /// Whether there is no next step.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// The answer of every `manage_index` action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
    /// The same for a human operator.
    pub human_text: String,
    /// Sorted warning codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Next steps by name.
    #[serde(default, skip_serializing_if = "ManageHints::is_empty")]
    pub hints: ManageHints,
    /// Progress while indexing (or of the failed run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// Reindex preflight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Preflight>,
    /// Counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<ManageStats>,
    /// Fingerprint check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
}

impl ManageIndexEnvelope {
    /// An envelope with the required fields (`humanText` repeats `message`); set the optional
    /// ones afterwards.
    pub fn new(
        action: ManageAction,
        path: impl Into<String>,
        status: Status,
        message: impl Into<String>,
    ) -> Self {
        let message = message.into();
        Self {
            tool: NAME.to_owned(),
            version: ENVELOPE_VERSION,
            action,
            path: path.into(),
            status,
            state: None,
            reason: None,
            human_text: message.clone(),
            message,
            warnings: Vec::new(),
            hints: ManageHints::default(),
            progress: None,
            preflight: None,
            stats: None,
            compatibility: None,
        }
    }
}
