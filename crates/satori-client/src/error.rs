//! The one error type of the client library.
//!
//! Variants are shaped by what a caller has to decide, not by where the failure
//! happened: "could not find the server" (a configuration problem), "the server
//! is not speaking MCP properly" (a transport-class failure that guard
//! recovery may retry, see `recovery`), "it answered, but with a JSON-RPC error" (a parseable
//! response, never retried), the two timeouts, "a shared server refused our token" (fixed in
//! the environment, never retried), and "these flags do not make arguments for this tool"
//! (see `flags`), which is decided before anything is sent.

use std::path::PathBuf;
use std::time::Duration;

use crate::endpoint_env::ENDPOINT_TOKEN_ENV;
use crate::guard_mode::{RECOVERY_GUARD_MODE, STDOUT_GUARD_ENV};

/// Everything that can go wrong between us and the `satori` server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No server executable could be located; the message says where we looked.
    #[error("server executable not found: {0}")]
    ServerNotFound(String),

    /// The executable exists but the operating system refused to start it.
    #[error("failed to start server {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The MCP `initialize` handshake did not complete in time.
    #[error("server did not complete the MCP handshake within {} ms", .0.as_millis())]
    StartupTimeout(Duration),

    /// A request (`tools/list`, `tools/call`), or a wait made of several
    /// requests, did not finish in time. `what` names it for the message.
    #[error("{what} did not finish within {} ms", timeout.as_millis())]
    CallTimeout { what: String, timeout: Duration },

    /// The stream broke: garbage on the server's stdout, the server died, a
    /// malformed message, or the connection was already torn down.
    #[error("{0}")]
    Protocol(String),

    /// A request was made after an earlier failure had already torn the
    /// connection down.
    #[error("the connection to the server is closed after an earlier failure")]
    Closed,

    /// Guard recovery retried with the stdout guard off, and that failed too.
    /// `first_mode` is the guard mode of the first attempt.
    #[error(
        "guard recovery failed: attempt 1 ({STDOUT_GUARD_ENV}={first_mode}): {first}; \
         attempt 2 ({STDOUT_GUARD_ENV}={RECOVERY_GUARD_MODE}): {second}"
    )]
    RecoveryFailed {
        first_mode: String,
        first: Box<ClientError>,
        second: Box<ClientError>,
    },

    /// Flags given for a tool do not make an arguments object: an unknown
    /// flag, a missing value, a value of the wrong type, a missing required
    /// property. The message is the whole explanation.
    #[error("{0}")]
    InvalidFlags(String),

    /// The tool's schema, or a property the flags need, is outside what flags
    /// can express; the message names `<tool>.<property>` and ends with the
    /// fallback (raw JSON arguments).
    #[error("{0}")]
    SchemaUnsupported(String),

    /// A shared server (an endpoint) refused us with HTTP 401, or 403: the bearer token is
    /// missing or is not the server's. A configuration problem the caller fixes in
    /// `SATORI_ENDPOINT_TOKEN`; no retry and no fallback can help, so neither is tried.
    #[error(
        "the satori server at {endpoint} refused the connection (HTTP {status}): {}; set {ENDPOINT_TOKEN_ENV} to the token the server was started with (the value of its --token-env variable, or of its --token-file)",
        if *token_sent {
            format!("the bearer token from {ENDPOINT_TOKEN_ENV} was sent and is not the one it accepts")
        } else {
            format!("no bearer token was sent ({ENDPOINT_TOKEN_ENV} is unset or empty) and it requires one")
        }
    )]
    EndpointAuth {
        endpoint: String,
        status: u16,
        token_sent: bool,
    },

    /// The server answered the request with a JSON-RPC error object.
    #[error("server returned JSON-RPC error {code}: {message}")]
    Rpc {
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
}

impl ClientError {
    /// The error that decides how a failure is reported: for a failed
    /// recovery, the last attempt's; otherwise the error itself.
    pub fn decisive(&self) -> &ClientError {
        match self {
            ClientError::RecoveryFailed { second, .. } => second.decisive(),
            other => other,
        }
    }
}

impl From<mcp_client::Error> for ClientError {
    /// The stdio transport's failures, in the shape Satori's clients decide on.
    fn from(error: mcp_client::Error) -> ClientError {
        use mcp_client::Error as E;
        match error {
            E::Spawn { path, source } => ClientError::Spawn { path, source },
            E::StartupTimeout(timeout) => ClientError::StartupTimeout(timeout),
            E::CallTimeout { what, timeout } => ClientError::CallTimeout { what, timeout },
            E::Closed => ClientError::Closed,
            E::Server {
                code,
                message,
                data,
            } => ClientError::Rpc {
                // rmcp's error codes are i32: a stdio answer always fits.
                code: i32::try_from(code).unwrap_or(i32::MIN),
                message,
                data,
            },
            other => ClientError::Protocol(other.to_string()),
        }
    }
}
