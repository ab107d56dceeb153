//! `proxy up|down|status`: a long-lived bridge that runs a stdio MCP server and serves it on
//! a Unix socket, so many one-shot commands share one warm server (see [`unix`]).
//!
//! The proxy is built on Unix-domain sockets, process sessions and signals. Where the
//! platform lacks them (Windows), every proxy command and every `unix://` endpoint fails
//! with one clear error instead of the build failing; HTTP endpoints work everywhere.

#[cfg(unix)]
pub mod bridge;
#[cfg(unix)]
mod unix;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(unix)]
pub use unix::{down, served, status, up};

/// What serves a `unix://` endpoint (see [`served`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// A live proxy of `proxy up`: its server was initialized by the bridge, which declared
    /// no elicitation, and the socket takes no token.
    Proxy,
    /// Anything else: any Streamable HTTP server listening there (`satori --socket`, an SDK's
    /// server), or nothing, which the first request finds out and reports.
    Server,
}

/// `<dir>/<stem>.json` for `<dir>/<stem>.sock`.
pub fn control_path(socket: &Path) -> PathBuf {
    socket.with_extension("json")
}

/// `<dir>/<stem>.log`.
pub fn log_path(socket: &Path) -> PathBuf {
    socket.with_extension("log")
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The argument that starts the bridge: `up` runs the current executable as
/// `EXE __serve SOCKET -- CMD ARGS...`, and that program must then call [`serve`].
pub const SERVE_ARG: &str = "__serve";

/// Runs the bridge process of `proxy up` ([`SERVE_ARG`]) until it stops; its exit code.
#[cfg(unix)]
pub fn serve(socket: &Path, command: &[String]) -> crate::Result<i32> {
    Ok(bridge::serve(socket, command))
}

#[cfg(not(unix))]
pub use elsewhere::{down, serve, served, status, up};

/// The proxy where there are no Unix-domain sockets: each entry point is the one error.
#[cfg(not(unix))]
mod elsewhere {
    use std::path::Path;

    use serde_json::Value;

    use crate::error::{Error, Result};

    pub fn up(_socket: &Path, _command: &[String]) -> Result<Value> {
        Err(Error::NoUnixSockets)
    }

    pub fn down(_socket: &Path) -> Result<Value> {
        Err(Error::NoUnixSockets)
    }

    pub fn status(_socket: &Path) -> Result<Value> {
        Err(Error::NoUnixSockets)
    }

    pub fn served(_socket: &Path) -> Result<super::Served> {
        Err(Error::NoUnixSockets)
    }

    pub fn serve(_socket: &Path, _command: &[String]) -> Result<i32> {
        Err(Error::NoUnixSockets)
    }
}
