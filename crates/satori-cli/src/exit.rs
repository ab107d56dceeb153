//! Exit statuses and stable error tokens: the only place they are mapped.
//!
//! Scripts branch on the exit status and grep stderr for the tokens, so both
//! are a contract. Every failure in the CLI is expressed as an [`ErrorCode`]
//! (`satori-client` says which token a client error gets); this module alone
//! decides which exit status each token gets.

use std::process::ExitCode;

/// The process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The command did what was asked (for `manage_index create|reindex`: the
    /// index is complete and searchable, `indexed` or `sync_completed`).
    Success = 0,
    /// The server answered, and the answer is a failure: `isError: true`, an
    /// envelope whose `status` is not `ok`, an index build that did not end
    /// searchable, or a JSON-RPC error.
    ToolError = 1,
    /// The command line was wrong or the environment is misconfigured (bad
    /// JSON, unknown flag, unreadable args file, server executable not found, a
    /// shared server that refuses the token of `SATORI_ENDPOINT_TOKEN`, or wants one
    /// and none is set: fixed by the user, never by calling again).
    Usage = 2,
    /// Talking to the server failed: startup or call timeout, garbage on the
    /// server's stdout, the server died or could not be started.
    Transport = 3,
    /// SIGINT/SIGTERM (128 + signal number for SIGINT, as shells do). The
    /// server child is killed before we exit.
    Interrupted = 130,
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status as u8)
    }
}

/// A stable error token, printed at the start of a stderr line and used as
/// `error.code` in the JSON error object on stdout (the table is
/// `satori-client`'s, shared with the Node addon and the npm package's types).
pub use satori_client::ErrorCode;

/// The exit status of each error token.
pub trait Exit {
    fn exit_status(self) -> ExitStatus;
}

impl Exit for ErrorCode {
    fn exit_status(self) -> ExitStatus {
        match self {
            ErrorCode::Usage | ErrorCode::SchemaUnsupported | ErrorCode::Auth => ExitStatus::Usage,
            ErrorCode::ProtocolFailure | ErrorCode::StartupTimeout | ErrorCode::CallTimeout => {
                ExitStatus::Transport
            }
            ErrorCode::ToolError => ExitStatus::ToolError,
            ErrorCode::Interrupted => ExitStatus::Interrupted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use satori_client::ClientError;
    use std::time::Duration;

    #[test]
    fn client_errors_map_to_the_documented_exit_statuses() {
        let cases = [
            (ClientError::ServerNotFound("x".into()), "E_USAGE", 2),
            (ClientError::InvalidFlags("f".into()), "E_USAGE", 2),
            (
                ClientError::SchemaUnsupported("t.p uses oneOf".into()),
                "E_SCHEMA_UNSUPPORTED",
                2,
            ),
            (
                ClientError::StartupTimeout(Duration::ZERO),
                "E_STARTUP_TIMEOUT",
                3,
            ),
            (
                ClientError::CallTimeout {
                    what: "m".into(),
                    timeout: Duration::ZERO,
                },
                "E_CALL_TIMEOUT",
                3,
            ),
            (ClientError::Protocol("p".into()), "E_PROTOCOL_FAILURE", 3),
            (
                ClientError::Spawn {
                    path: "s".into(),
                    source: std::io::Error::other("e"),
                },
                "E_PROTOCOL_FAILURE",
                3,
            ),
            (
                ClientError::Rpc {
                    code: -32602,
                    message: "m".into(),
                    data: None,
                },
                "E_TOOL_ERROR",
                1,
            ),
            (ClientError::Closed, "E_PROTOCOL_FAILURE", 3),
            (
                ClientError::EndpointAuth {
                    endpoint: "http://127.0.0.1:1/mcp".into(),
                    status: 401,
                    token_sent: false,
                },
                "E_AUTH",
                2,
            ),
            (
                // A failed recovery is reported by its last attempt.
                ClientError::RecoveryFailed {
                    first_mode: "drop".into(),
                    first: Box::new(ClientError::Protocol("p".into())),
                    second: Box::new(ClientError::CallTimeout {
                        what: "m".into(),
                        timeout: Duration::ZERO,
                    }),
                },
                "E_CALL_TIMEOUT",
                3,
            ),
        ];
        for (error, token, status) in cases {
            let code = ErrorCode::of_client_error(&error);
            assert_eq!(
                (code.token(), code.exit_status() as u8),
                (token, status),
                "{error}"
            );
        }
    }
}
