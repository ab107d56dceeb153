//! Satori's semantics for its MCP clients (the CLI, the Node addon).
//!
//! Clients reach the engine only through the `satori` server's MCP tools. The
//! transport is `mcp-client`'s stdio client (spawn, handshake, timeouts, the
//! child never outliving the [`Client`]); this crate says how `satori` is
//! found and started and what its answers mean. It also knows how to read Satori's tool results:
//! [`classify`] separates successes from tool errors (including `isError:
//! false` envelopes with a non-ok `status`), and [`wait_for_index`] follows a
//! background index build to its end. [`daemon`] is the per-user server a client attaches to
//! when it is given no endpoint. [`flags`] turns a tool's live
//! `inputSchema` into command-line flags and flags into arguments, for every
//! client with a command line. The guard-recovery policy (one retry
//! with the server's stdout guard off, only where that is safe) lives here
//! too, so every client applies the same rules.

mod classify;
mod client;
mod codes;
pub mod daemon;
mod endpoint_env;
mod error;
pub mod flags;
mod guard_mode;
mod recovery;
mod resolve;
mod wait;

pub use classify::{
    Classification, ToolError, Wire, classify, envelope, first_text, index_state, is_index_success,
    is_terminal, status,
};
pub use client::{Client, PROTOCOL_VERSION, RUN_MODE_ENV, SpawnOptions, take_stderr_mid_line};
pub use codes::{ErrorCode, typescript_union};
pub use daemon::{Daemon, Off as DaemonOff};
pub use endpoint_env::{ENDPOINT_ENV, ENDPOINT_FALLBACK_ENV, ENDPOINT_TOKEN_ENV};
pub use error::ClientError;
pub use guard_mode::{DEFAULT_GUARD_MODE, RECOVERY_GUARD_MODE, STDOUT_GUARD_ENV};
/// Where a shared server is: `http://…`, `https://…` or `unix:///path`.
pub use mcp_client::Endpoint;
pub use recovery::{Attempts, GUARD_RECOVERY_ENV, GuardRecovery, Stage, should_retry};
pub use resolve::{SERVER_BIN_ENV, SERVER_BIN_NAME, resolve_server_bin, resolve_server_bin_from};
pub use wait::{MANAGE_INDEX, starts_index_build, wait_for_index};
