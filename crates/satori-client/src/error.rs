//! The one error type of the client library.
//!
//! Variants are shaped by what a caller has to decide, not by where the failure
//! happened: "could not find the server" (a configuration problem), "the server
//! is not speaking MCP properly" (a transport-class failure that a future guard
//! recovery may retry), "it answered, but with a JSON-RPC error" (a parseable
//! response, never retried), and the two timeouts.

use std::path::PathBuf;
use std::time::Duration;

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

    /// The server answered the request with a JSON-RPC error object.
    #[error("server returned JSON-RPC error {code}: {message}")]
    Rpc {
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
}

impl ClientError {
    /// True for failures that happened before any parseable answer to the
    /// request arrived. This is the class a guard-recovery retry is allowed to
    /// act on; a JSON-RPC error or a tool result is an answer and never is.
    pub fn is_transport_class(&self) -> bool {
        matches!(
            self,
            ClientError::Protocol(_)
                | ClientError::StartupTimeout(_)
                | ClientError::CallTimeout { .. }
                | ClientError::Spawn { .. }
        )
    }
}
