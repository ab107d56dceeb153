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
/// `on` (default where unix sockets exist) or `off`: whether `satori-cli` and the Node API,
/// given no endpoint, attach to the per-user server under the home instead of starting a
/// server for each call.
pub const DAEMON: &str = "SATORI_DAEMON";
/// Seconds the per-user server waits with no session and no build before it exits (default
/// 900).
pub const DAEMON_IDLE_SECS: &str = "SATORI_DAEMON_IDLE_SECS";

/// The variables that may change what a server does, by prefix: a client attaches only to a
/// per-user server started with the same values of all of them (see
/// [`daemon_identity_vars`]).
const BEHAVIOUR_PREFIXES: &[&str] = &[
    "SATORI_",
    "MCP_",
    "READ_FILE_",
    "EMBEDDING_",
    "OPENAI_",
    "VOYAGEAI_",
    "GEMINI_",
    "OLLAMA_",
    "MILVUS_",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
    "no_proxy",
    "MALLOC_ARENA_MAX",
];

/// The variables of [`BEHAVIOUR_PREFIXES`] that only a client reads, or that each call sets
/// for itself: they do not make a server behave differently.
const CLIENT_ONLY: &[&str] = &[
    RUN_MODE,
    CLI_STDOUT_GUARD,
    CLI_GUARD_RECOVERY,
    SERVER_BIN,
    BINARY,
    CLI_BINARY,
    NODE_ADDON,
    PREOPEN,
    DAEMON,
    DAEMON_IDLE_SECS,
    "SATORI_ENDPOINT",
    "SATORI_ENDPOINT_TOKEN",
    "SATORI_ENDPOINT_FALLBACK",
];

/// The `(name, value)` pairs of `vars` that make up a per-user server's identity, sorted by
/// name: every variable that may change what the server does (its home, embedding provider
/// and keys, Milvus address, ranking weights, read limits, proxies), and none that only a
/// client reads. Values are for hashing only: they hold keys.
pub fn daemon_identity_vars(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(name, _)| {
            BEHAVIOUR_PREFIXES.iter().any(|p| name.starts_with(p))
                && !CLIENT_ONLY.contains(&name.as_str())
        })
        .collect();
    out.sort();
    out
}

/// Where Satori's state lives: `SATORI_HOME`, else `~/.satori` (`$HOME`, `%USERPROFILE%`),
/// else `./.satori`.
pub fn home_dir(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> std::path::PathBuf {
    if let Some(home) = var(HOME).filter(|h| !h.is_empty()) {
        return std::path::PathBuf::from(home);
    }
    var("HOME")
        .or_else(|| var("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("."))
        .join(".satori")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(vars: &[(&str, &str)], want: &[&str]) {
        let got =
            daemon_identity_vars(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, want);
    }

    #[test]
    fn identity_holds_what_changes_the_server_and_nothing_a_client_reads() {
        check(
            &[
                ("PATH", "/bin"),
                ("MILVUS_ADDRESS", "localhost:19530"),
                ("SATORI_HOME", "/h"),
                ("SATORI_ENDPOINT", "unix:///s"),
                ("SATORI_DAEMON", "on"),
                ("EMBEDDING_PROVIDER", "OpenAI"),
                ("OPENAI_API_KEY", "k"),
                ("SATORI_PREOPEN", "/r"),
                ("MCP_ENABLE_WATCHER", "false"),
                ("TERM", "xterm"),
            ],
            &[
                "EMBEDDING_PROVIDER",
                "MCP_ENABLE_WATCHER",
                "MILVUS_ADDRESS",
                "OPENAI_API_KEY",
                "SATORI_HOME",
            ],
        );
    }

    #[test]
    fn home_is_the_variable_then_the_user_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let case = |pairs, want: &str| {
            assert_eq!(home_dir(env(pairs)), std::path::PathBuf::from(want));
        };
        case(&[("SATORI_HOME", "/s"), ("HOME", "/u")], "/s");
        case(&[("SATORI_HOME", ""), ("HOME", "/u")], "/u/.satori");
        case(&[("USERPROFILE", "/w")], "/w/.satori");
        case(&[], "./.satori");
    }
}
