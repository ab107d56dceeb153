//! MCP client plumbing for Satori's command-line clients.
//!
//! Clients reach the engine only through the `satori` server's MCP tools. This
//! crate spawns that server as a child over stdio, performs the handshake,
//! lists and calls tools under timeouts, and guarantees the child never
//! outlives the [`Client`]. It also knows how to read Satori's tool results:
//! [`classify`] separates successes from tool errors (including `isError:
//! false` envelopes with a non-ok `status`), and [`wait_for_index`] follows a
//! background index build to its end. [`flags`] turns a tool's live
//! `inputSchema` into command-line flags and flags into arguments, for every
//! client with a command line. The guard-recovery policy (one retry
//! with the server's stdout guard off, only where that is safe) lives here
//! too, so every client applies the same rules.

mod classify;
mod client;
mod error;
pub mod flags;
mod guard_mode;
mod recovery;
mod resolve;
mod stdout_guard;
mod wait;

pub use classify::{
    Classification, ToolError, Wire, classify, envelope, first_text, index_state, is_index_success,
    is_terminal, status,
};
pub use client::{Client, PROTOCOL_VERSION, RUN_MODE_ENV, SpawnOptions, take_stderr_mid_line};
pub use error::ClientError;
pub use guard_mode::{DEFAULT_GUARD_MODE, RECOVERY_GUARD_MODE, STDOUT_GUARD_ENV};
pub use recovery::{Attempts, GUARD_RECOVERY_ENV, GuardRecovery, Stage, should_retry};
pub use resolve::{SERVER_BIN_ENV, SERVER_BIN_NAME, resolve_server_bin, resolve_server_bin_from};
pub use wait::{MANAGE_INDEX, starts_index_build, wait_for_index};
