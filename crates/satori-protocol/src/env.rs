//! Names of the environment variables that configure Satori, in one place.
//!
//! The server reads most of them, the clients set or read a few, and the README documents
//! them all; a name written out anywhere else is a name that can drift.

/// Where indexes and `state.json` live (default `~/.satori`).
pub const HOME: &str = "SATORI_HOME";
/// `mcp` (default) or `cli`: a server started by a CLI works on demand only.
pub const RUN_MODE: &str = "SATORI_RUN_MODE";
/// In cli mode, what happens to stray writes to stdout: `drop`, `redirect` or `off`.
pub const CLI_STDOUT_GUARD: &str = "SATORI_CLI_STDOUT_GUARD";
/// `auto` or `never`: the default of `satori-cli --guard-recovery`.
pub const CLI_GUARD_RECOVERY: &str = "SATORI_CLI_GUARD_RECOVERY";
/// Path of the `satori` executable a client spawns.
pub const SERVER_BIN: &str = "SATORI_SERVER_BIN";
/// npm package: the `satori` executable the `satori` shim and the Node API run instead of the
/// platform package's (read by the package's JavaScript; named here so the README lists it).
pub const BINARY: &str = "SATORI_BINARY";
/// npm package: the `satori-cli` executable the `satori-cli` shim runs instead of the platform
/// package's.
pub const CLI_BINARY: &str = "SATORI_CLI_BINARY";
/// npm package: the Node addon the Node API loads instead of the platform package's (an addon
/// built from source, for a platform with no package).
pub const NODE_ADDON: &str = "SATORI_NODE_ADDON";
/// `stderr` (default) or `off`: whether the server writes its `[TELEMETRY]` line per search to
/// stderr (a client that set a log level gets the event either way). The Node API sets `off`
/// unless its caller asks for telemetry.
pub const TELEMETRY: &str = "SATORI_TELEMETRY";
/// Lines `read_file` returns without an explicit range.
pub const READ_FILE_MAX_LINES: &str = "READ_FILE_MAX_LINES";
/// Bytes `read_file` returns at most in one call (default 1 MiB); files larger than this are
/// streamed, never loaded whole.
pub const READ_FILE_MAX_BYTES: &str = "READ_FILE_MAX_BYTES";
/// `true` lifts the secrets rules: files named or holding secrets are indexed and read.
pub const ALLOW_SECRETS: &str = "SATORI_ALLOW_SECRETS";
/// `true` lets `read_file` read outside indexed codebases.
pub const READ_ANY_FILE: &str = "SATORI_READ_ANY_FILE";
/// A search re-checks the working tree when the last check is older than this (ms).
pub const SYNC_THRESHOLD_MS: &str = "SATORI_SYNC_THRESHOLD_MS";
/// `true` (default in `mcp` mode) or `false`: watch indexed codebases and sync them soon
/// after files change. Never on in `cli` mode.
pub const ENABLE_WATCHER: &str = "MCP_ENABLE_WATCHER";
/// How long the watcher waits after the last change of a burst before syncing (ms, default
/// 5000).
pub const WATCH_DEBOUNCE_MS: &str = "MCP_WATCH_DEBOUNCE_MS";
/// How often a long-running server re-checks every indexed codebase, catching what the
/// watcher missed (ms, default 180000; `0` turns it off). Never in `cli` mode.
pub const RECONCILE_INTERVAL_MS: &str = "SATORI_RECONCILE_INTERVAL_MS";
/// The embedding model: `bundled`, `none`, a model directory or a pinned hub revision.
pub const EMBEDDING_MODEL: &str = "SATORI_EMBEDDING_MODEL";
/// The hub that `hf:` models are downloaded from.
pub const HF_ENDPOINT: &str = "SATORI_HF_ENDPOINT";
/// `true`: never download; a hub model must already be cached.
pub const OFFLINE: &str = "SATORI_OFFLINE";
/// Set by `satori-cli` on the server it spawns for a search: the path being searched, whose
/// index the server opens in the background while the handshake runs.
pub const PREOPEN: &str = "SATORI_PREOPEN";
/// The most chunks one codebase's index holds (default 450,000), for a monorepo whose
/// vectors live in Milvus.
pub const MAX_CHUNKS: &str = "SATORI_MAX_CHUNKS";
/// Comma-separated ranking switches, for measuring each part of the ranking.
pub const SEARCH_ABLATION: &str = "SATORI_SEARCH_ABLATION";
/// A JSON object of ranking weights to change (`{"rrf_k": 30}`), for trying weights without
/// a rebuild.
pub const SEARCH_WEIGHTS: &str = "SATORI_SEARCH_WEIGHTS";
/// Which reranker searches use: `voyage` (VoyageAI's API; the default when
/// `VOYAGEAI_API_KEY` is set), `local` (late interaction over the bundled model, on this
/// machine) or `off`.
pub const RERANKER: &str = "SATORI_RERANKER";
/// Test hook: text the server writes to its raw stdout before serving (proves the guard).
pub const TEST_STRAY_STDOUT: &str = "SATORI_TEST_STRAY_STDOUT";
