//! The JSON the tools answer with: envelopes and the pieces they share.
//!
//! These types are what the server sends: its handlers build them and nothing else reaches
//! `structuredContent`. Field names are camelCase on the wire and fields appear in declaration
//! order, so the declaration order is the byte order of an answer; optional fields are left
//! out when empty so answers stay small (agents pay for every token). Every type also
//! deserializes and refuses unknown keys, because clients (`satori-cli`, the Node addon) read
//! these envelopes back and the tests check that nothing outside the contract is sent. The
//! tools' `outputSchema`s are generated from the same types ([`crate::registry::ToolDef`]).

mod manage_index;
mod navigation;
mod read_file;
mod search;

pub use manage_index::{
    IndexStats, IndexStatus, ManageHints, ManageIndexEnvelope, ManageStats, Preflight,
    PreflightConfidence, PreflightOutcome, Progress, SkippedFiles, SyncRunStats,
};
pub use navigation::{
    CallGraphEnvelope, CallGraphHint, CallGraphUnsupportedReason, CallSite, EdgeKind,
    FileOutlineEnvelope, GraphEdge, GraphNode, NavHints, NavigationContext, NavigationFallback,
    Outline, OutlineSymbol,
};
pub use read_file::{
    AnnotatedRead, IndexingProgress, OpenSymbolFailure, PlainRead, ReadFileAnswer,
    ReadFileNotReady, ReadHints, ReadWindow,
};
pub use search::{
    ChunkResult, FilterCount, FusionDebug, GroupResult, NoiseMitigation, NoiseRatios,
    OperatorsDebug, QueryKind, RerankDebug, RetrievalMode, ScoreDebug, SearchDebug, SearchEnvelope,
    SearchHints, SearchResult, StalenessBucket,
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use crate::handle::{Span, SymbolRef};
use crate::tools::manage_index::ManageAction;
use crate::{FILE_OUTLINE, LIST_CODEBASES, MANAGE_INDEX, READ_FILE, SEARCH_CODEBASE};

string_enum! {
    /// Outcome of a tool call. Only `ok` means the request was carried out; clients branch on
    /// the others (which come with `isError: false` unless the call itself failed).
    pub enum Status {
        Ok = "ok",
        NotReady = "not_ready",
        NotIndexed = "not_indexed",
        RequiresReindex = "requires_reindex",
        Blocked = "blocked",
        Error = "error",
        NotFound = "not_found",
        Ambiguous = "ambiguous",
        Unsupported = "unsupported",
    }
}

string_enum! {
    /// State of a codebase's index. `indexed` and `sync_completed` are searchable; `indexing` is
    /// in progress; the rest need action. `not_indexed` is reported for untracked paths.
    pub enum IndexState {
        Indexing = "indexing",
        Indexed = "indexed",
        IndexFailed = "indexfailed",
        SyncCompleted = "sync_completed",
        RequiresReindex = "requires_reindex",
        NotIndexed = "not_indexed",
    }
}

impl IndexState {
    /// Whether searches may run against an index in this state.
    pub const fn is_searchable(self) -> bool {
        matches!(self, Self::Indexed | Self::SyncCompleted)
    }

    /// Whether the state will not change without a new request (what a poller waits for).
    pub const fn is_terminal(self) -> bool {
        !matches!(self, Self::Indexing)
    }
}

string_enum! {
    /// Why an index is no longer usable with the running configuration.
    pub enum ReindexReason {
        FingerprintMismatch = "fingerprint_mismatch",
        MissingFingerprint = "missing_fingerprint",
        LegacyUnverifiedFingerprint = "legacy_unverified_fingerprint",
        IndexDamaged = "index_damaged",
    }
}

/// Stable `reason` strings of envelopes. Reasons are an open set (new ones may appear without
/// breaking older clients), so envelopes carry them as strings; these are the known ones.
pub mod reasons {
    /// The codebase is being indexed.
    pub const INDEXING: &str = "indexing";
    /// The path is not inside any tracked codebase.
    pub const NOT_INDEXED: &str = "not_indexed";
    /// The index does not match the running embedding configuration.
    pub const REQUIRES_REINDEX: &str = "requires_reindex";
    /// A reindex was refused because only ignore rules changed.
    pub const UNNECESSARY_REINDEX_IGNORE_ONLY: &str = "unnecessary_reindex_ignore_only";
    /// The codebase is already indexed and `force` was not given.
    pub const ALREADY_INDEXED: &str = "already_indexed";
    /// The last indexing run failed.
    pub const INDEX_FAILED: &str = "indexfailed";
    /// The path does not exist (any more).
    pub const PATH_NOT_FOUND: &str = "path_not_found";
    /// The path is a file where a codebase root directory was expected.
    pub const NOT_A_DIRECTORY: &str = "not_a_directory";
    /// The path could not be resolved for another reason.
    pub const IO_ERROR: &str = "io_error";
    /// The engine failed to carry out the action.
    pub const ENGINE_ERROR: &str = "engine_error";
    /// The search itself failed (a damaged index, an I/O error).
    pub const SEARCH_FAILED: &str = "search_failed";
    /// `useReranker: true`, but the server has no reranker.
    pub const RERANKER_UNAVAILABLE: &str = "reranker_unavailable";
    /// The request was cancelled (or the server is shutting down) before it finished.
    pub const CANCELLED: &str = "cancelled";
    /// The directory may not be tracked as a codebase (the filesystem root, a system
    /// directory, the home directory itself, Satori's state directory).
    pub const ROOT_REFUSED: &str = "root_refused";
    /// The path lies outside every root the MCP client declared.
    pub const OUTSIDE_CLIENT_ROOTS: &str = "outside_client_roots";
    /// No such file in the codebase (it was moved, renamed or deleted).
    pub const FILE_NOT_FOUND: &str = "file_not_found";
    /// The file resolves (through a symbolic link) to a place outside its codebase.
    pub const OUTSIDE_CODEBASE: &str = "outside_codebase";
    /// The file is kept out by the path or secrets policy.
    pub const POLICY_REFUSED: &str = "policy_refused";
    /// The file's language has no grammar (or no call graph).
    pub const UNSUPPORTED_LANGUAGE: &str = "unsupported_language";
    /// The file is binary.
    pub const BINARY_FILE: &str = "binary_file";
    /// The file is larger than the server reads whole.
    pub const FILE_TOO_LARGE: &str = "file_too_large";
    /// No symbol of the file matches the handle (renamed, moved to another file, deleted).
    pub const SYMBOL_NOT_FOUND: &str = "symbol_not_found";
    /// Several symbols match the exact request.
    pub const AMBIGUOUS_SYMBOL: &str = "ambiguous_symbol";
    /// The index was built before call graphs were recorded.
    pub const CALL_GRAPH_MISSING: &str = "call_graph_missing";
}

/// Stable warning codes (`CODE` or `CODE:detail`).
pub mod warnings {
    /// The directory may not be tracked (`ROOT_REFUSED:<rule>`, the rule being
    /// `filesystem_root`, `system_directory`, `home_directory`, `credential_directory` or
    /// `satori_home`).
    pub const ROOT_REFUSED: &str = "ROOT_REFUSED";
    /// A reindex was refused: only ignore rules changed.
    pub const REINDEX_UNNECESSARY_IGNORE_ONLY: &str = "REINDEX_UNNECESSARY_IGNORE_ONLY";
    /// The reindex preflight could not decide; the reindex went ahead.
    pub const REINDEX_PREFLIGHT_UNKNOWN: &str = "REINDEX_PREFLIGHT_UNKNOWN";
    /// The ignore-rule probe of the preflight failed.
    pub const IGNORE_POLICY_PROBE_FAILED: &str = "IGNORE_POLICY_PROBE_FAILED";
    /// No result satisfied every `must:` operator.
    pub const FILTER_MUST_UNSATISFIED: &str = "FILTER_MUST_UNSATISFIED";
    /// One retrieval pass failed (`SEARCH_PASS_FAILED:<pass>`); results may be degraded.
    pub const SEARCH_PASS_FAILED: &str = "SEARCH_PASS_FAILED";
    /// The reranker failed; the unreranked order was kept.
    pub const RERANKER_FAILED: &str = "RERANKER_FAILED";
    /// Some chunks of the file have no symbol identity (`OUTLINE_MISSING_SYMBOL_METADATA:<n>`).
    pub const OUTLINE_MISSING_SYMBOL_METADATA: &str = "OUTLINE_MISSING_SYMBOL_METADATA";
    /// The call-graph notes were cut to the limit.
    pub const CALL_GRAPH_NOTES_TRUNCATED: &str = "CALL_GRAPH_NOTES_TRUNCATED";
    /// `create`/`reindex` found a build already running; its status is reported instead.
    pub const INDEXING_ALREADY_RUNNING: &str = "INDEXING_ALREADY_RUNNING";
    /// `create` found a usable index and did nothing.
    pub const ALREADY_INDEXED: &str = "ALREADY_INDEXED";
    /// A rebuild is running and the previous index stays searchable meanwhile.
    pub const PREVIOUS_INDEX_SEARCHABLE: &str = "PREVIOUS_INDEX_SEARCHABLE";
    /// The last rebuild failed; the index from before it is still in use.
    pub const LAST_REBUILD_FAILED: &str = "LAST_REBUILD_FAILED";
    /// Some files of the index could not be read (`UNREADABLE_FILES:<n>`); every sync
    /// retries them.
    pub const UNREADABLE_FILES: &str = "UNREADABLE_FILES";
    /// Some files or directories of the tree are not indexed because their name is not
    /// UTF-8 (`NON_UTF8_NAMES:<n>`); renaming them lets the next sync index them.
    pub const NON_UTF8_NAMES: &str = "NON_UTF8_NAMES";
    /// `clear` of a path that was not indexed.
    pub const NOTHING_TO_CLEAR: &str = "NOTHING_TO_CLEAR";
    /// The search ran on the previous index while a rebuild is in progress.
    pub const REINDEX_IN_PROGRESS: &str = "REINDEX_IN_PROGRESS";
    /// The sync before the search failed; the search ran on the index as it was.
    pub const FRESHNESS_SYNC_FAILED: &str = "FRESHNESS_SYNC_FAILED";

    /// `CODE:detail`.
    pub fn with_detail(code: &str, detail: impl std::fmt::Display) -> String {
        format!("{code}:{detail}")
    }
}

/// Sorts and deduplicates warnings: the contract promises a sorted array, and the same
/// condition found twice is still one warning.
pub fn normalize_warnings(warnings: &mut Vec<String>) {
    warnings.sort();
    warnings.dedup();
}

/// [`normalize_warnings`] over any collection of warnings.
pub fn sorted_warnings<I, S>(warnings: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut out: Vec<String> = warnings.into_iter().map(Into::into).collect();
    normalize_warnings(&mut out);
    out
}

/// An executable next step: call `tool` with `args` (a JSON object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hint {
    /// Tool to call.
    pub tool: String,
    /// Arguments to pass, ready to use.
    pub args: Map<String, Value>,
}

impl Hint {
    /// `tool` with `args` (anything but an object counts as no arguments).
    pub fn new(tool: impl Into<String>, args: Value) -> Self {
        Self {
            tool: tool.into(),
            args: match args {
                Value::Object(map) => map,
                _ => Map::new(),
            },
        }
    }

    /// `manage_index {action: "create", path, force: true}`: rebuild from scratch.
    pub fn manage_index_force_create(path: &str) -> Self {
        Self::new(
            MANAGE_INDEX,
            json!({ "action": ManageAction::Create.as_str(), "path": path, "force": true }),
        )
    }

    /// `manage_index {action, path}`.
    pub fn manage_index(action: ManageAction, path: &str) -> Self {
        Self::new(
            MANAGE_INDEX,
            json!({ "action": action.as_str(), "path": path }),
        )
    }

    /// `read_file {path, start_line, end_line}` (`path` absolute).
    pub fn read_file(path: &str, start_line: u32, end_line: u32) -> Self {
        Self::new(
            READ_FILE,
            json!({ "path": path, "start_line": start_line, "end_line": end_line }),
        )
    }

    /// `file_outline {path, file, start_line, end_line, resolveMode: "outline"}` (`path` is the
    /// codebase root, `file` relative to it).
    pub fn file_outline(path: &str, file: &str, start_line: u32, end_line: u32) -> Self {
        Self::new(
            FILE_OUTLINE,
            json!({
                "path": path,
                "file": file,
                "start_line": start_line,
                "end_line": end_line,
                "resolveMode": "outline",
            }),
        )
    }

    /// `search_codebase {path, query}`.
    pub fn search_codebase(path: &str, query: &str) -> Self {
        Self::new(SEARCH_CODEBASE, json!({ "path": path, "query": query }))
    }

    /// `list_codebases {}`.
    pub fn list_codebases() -> Self {
        Self::new(LIST_CODEBASES, Value::Object(Map::new()))
    }
}

/// Identity of what built an index. Two fingerprints must be equal for an index to be used;
/// anything else means `requires_reindex`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fingerprint {
    /// Embedding provider, e.g. `static`, `OpenAI`.
    pub embedding_provider: String,
    /// Model id (with a content hash for local models).
    pub embedding_model: String,
    /// Vector dimension.
    pub embedding_dimension: u32,
    /// Vector store implementation.
    pub vector_backend: String,
    /// Index schema version; older versions need a reindex.
    pub schema_version: String,
}

/// Fingerprint check reported with `requires_reindex` (and by `status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Compatibility {
    /// What the running server would build.
    pub runtime_fingerprint: Fingerprint,
    /// What the index was built with, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_fingerprint: Option<Fingerprint>,
    /// Why the index cannot be used, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reindex_reason: Option<ReindexReason>,
    /// Index state when the check ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_at_check: Option<IndexState>,
}

/// Counts of an incremental sync.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncStats {
    /// Files new since the last sync.
    pub added: u64,
    /// Files gone since the last sync.
    pub removed: u64,
    /// Files changed since the last sync.
    pub modified: u64,
}

string_enum! {
    /// What the freshness check before a search did.
    pub enum FreshnessMode {
        Synced = "synced",
        SkippedRecent = "skipped_recent",
        Coalesced = "coalesced",
        SkippedIndexing = "skipped_indexing",
        SkippedRequiresReindex = "skipped_requires_reindex",
        SkippedMissingPath = "skipped_missing_path",
        ReconciledIgnoreChange = "reconciled_ignore_change",
        IgnoreReloadFailed = "ignore_reload_failed",
        SyncFailed = "sync_failed",
    }
}

/// How the search made sure the index reflects the working tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FreshnessDecision {
    /// What happened.
    pub mode: FreshnessMode,
    /// When the check ran (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// Age above which a sync runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ms: Option<u64>,
    /// When the last sync finished (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_at: Option<String>,
    /// Age of the last sync at check time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_ms: Option<u64>,
    /// Counts of the sync that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<SyncStats>,
    /// Duration of the sync or reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Ignore-rule generation after a reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_rules_version: Option<u64>,
    /// Files dropped from the index because they are now ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newly_ignored_files: Option<u64>,
    /// Files added because they are no longer ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_files: Option<u64>,
    /// Edits folded into an already running sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesced_edits: Option<u64>,
    /// Why a sync or reconciliation failed (the search still ran on the old index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

impl FreshnessDecision {
    /// A decision with only its mode set.
    pub fn new(mode: FreshnessMode) -> Self {
        Self {
            mode,
            checked_at: None,
            threshold_ms: None,
            last_sync_at: None,
            age_ms: None,
            stats: None,
            duration_ms: None,
            ignore_rules_version: None,
            newly_ignored_files: None,
            added_files: None,
            coalesced_edits: None,
            error_message: None,
        }
    }
}
