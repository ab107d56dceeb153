//! The stable error tokens: the one table of them.
//!
//! `satori-cli` prints a token at the start of a stderr line and as `error.code` on stdout,
//! and the Node addon puts it in a rejected call's `code`, so scripts and Node programs
//! branch on the same words. Every client reads the token of a failure from here; the npm
//! package's `ErrorCode` type is generated from [`ErrorCode::ALL`] ([`typescript_union`]),
//! and a test fails when `index.d.ts` holds another text.

use crate::error::ClientError;

/// A stable error token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Usage,
    SchemaUnsupported,
    Auth,
    ProtocolFailure,
    StartupTimeout,
    CallTimeout,
    ToolError,
    Interrupted,
}

impl ErrorCode {
    /// Every token, in the order the documentation lists them.
    pub const ALL: [ErrorCode; 8] = [
        ErrorCode::Usage,
        ErrorCode::SchemaUnsupported,
        ErrorCode::Auth,
        ErrorCode::ProtocolFailure,
        ErrorCode::StartupTimeout,
        ErrorCode::CallTimeout,
        ErrorCode::ToolError,
        ErrorCode::Interrupted,
    ];

    pub const fn token(self) -> &'static str {
        match self {
            ErrorCode::Usage => "E_USAGE",
            ErrorCode::SchemaUnsupported => "E_SCHEMA_UNSUPPORTED",
            ErrorCode::Auth => "E_AUTH",
            ErrorCode::ProtocolFailure => "E_PROTOCOL_FAILURE",
            ErrorCode::StartupTimeout => "E_STARTUP_TIMEOUT",
            ErrorCode::CallTimeout => "E_CALL_TIMEOUT",
            ErrorCode::ToolError => "E_TOOL_ERROR",
            ErrorCode::Interrupted => "E_INTERRUPTED",
        }
    }

    /// Whether a library call can fail with it. `E_INTERRUPTED` is the CLI's answer to
    /// SIGINT/SIGTERM, which a library never sees: the process it runs in handles signals.
    pub fn reaches_libraries(self) -> bool {
        self != ErrorCode::Interrupted
    }

    /// Which token a client error is reported under: a missing server is a configuration
    /// problem the user fixes (install it, set `SATORI_SERVER_BIN`) like a bad flag, a
    /// shared server refusing our token has a token of its own (the user fixes
    /// `SATORI_ENDPOINT_TOKEN`, and a program tells it from a server that is down), a
    /// JSON-RPC error is the server answering, and everything that broke the stream is a
    /// protocol failure. A failed recovery is reported by its last attempt.
    pub fn of_client_error(error: &ClientError) -> ErrorCode {
        match error.decisive() {
            ClientError::ServerNotFound(_) | ClientError::InvalidFlags(_) => ErrorCode::Usage,
            ClientError::SchemaUnsupported(_) => ErrorCode::SchemaUnsupported,
            ClientError::EndpointAuth { .. } => ErrorCode::Auth,
            ClientError::StartupTimeout(_) => ErrorCode::StartupTimeout,
            ClientError::CallTimeout { .. } => ErrorCode::CallTimeout,
            ClientError::Spawn { .. }
            | ClientError::Protocol(_)
            | ClientError::Closed
            // `decisive` never returns this variant; listed so the match stays exhaustive.
            | ClientError::RecoveryFailed { .. } => ErrorCode::ProtocolFailure,
            ClientError::Rpc { .. } => ErrorCode::ToolError,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.token())
    }
}

/// The npm package's `ErrorCode` type (`index.d.ts`): the tokens a library call can fail
/// with, as a TypeScript union, one line each.
pub fn typescript_union() -> String {
    let mut text = String::from("export type ErrorCode =\n");
    let tokens: Vec<_> = ErrorCode::ALL
        .into_iter()
        .filter(|c| c.reaches_libraries())
        .map(|c| format!("  | \"{}\"", c.token()))
        .collect();
    text.push_str(&tokens.join("\n"));
    text.push_str(";\n");
    text
}
