//! The library's one error type. The variant says what a caller has to decide (a wrong
//! argument, a file, the transport, the server's answer, a timeout), and the message is the
//! whole explanation: it names the file, endpoint or argument at fault and never carries a
//! secret. The messages speak to a person at mcat's command line, the library's first user.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line is wrong: a malformed KEY_REF, endpoint or ARGS, conflicting options.
    #[error("{0}")]
    Usage(String),
    /// A file could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Another mcat holds the lock of a state file.
    #[error("{} is locked by another mcat command; try again when it has finished", path.display())]
    Locked { path: PathBuf },
    /// A state file (session, auth state, control file, token) is not what mcat wrote.
    #[error("{} is not a valid {what}: {why}", path.display())]
    Corrupt {
        path: PathBuf,
        what: &'static str,
        why: String,
    },
    /// A state file the command needs does not exist.
    #[error("{0}")]
    Missing(String),
    /// A KEY_REF cannot be read or written as asked.
    #[error("{0}")]
    KeyRef(String),
    /// The server cannot be reached or broke the transport's rules.
    #[error("{0}")]
    Transport(String),
    /// The server no longer knows the session of the session file.
    #[error("{0}")]
    SessionExpired(String),
    /// The server refused the token (or wants one): HTTP 401.
    #[error("{0}")]
    Unauthorized(String),
    /// The server refused the request with HTTP 403: a token without the scope the request
    /// needs, or a client the server does not serve. Kept apart from [`Error::Transport`]
    /// because a caller can act on it: authorize again, or fix the token it sends.
    #[error("{0}")]
    Forbidden(String),
    /// The server answered with a JSON-RPC error (`data` as it sent it).
    #[error("server error {code}: {message}")]
    Server {
        code: i64,
        message: String,
        data: Option<serde_json::Value>,
    },
    /// The server did not advertise what the command needs.
    #[error("server does not advertise {0} capability")]
    Capability(&'static str),
    /// The stdio proxy is missing, dead or failed to start.
    #[error("{0}")]
    Proxy(String),
    /// The proxy or a `unix://` endpoint, where the platform has no Unix-domain sockets.
    #[error(
        "the mcat proxy and unix:// endpoints need Unix-domain sockets, which mcat does not support on this platform; use an http:// or https:// endpoint"
    )]
    NoUnixSockets,
    /// The server did not answer a request within the command's `--timeout`.
    #[error("{0}")]
    Timeout(String),
    /// A stdio server could not be started.
    #[error("failed to start server {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A stdio server did not complete the `initialize` handshake in time.
    #[error("server did not complete the MCP handshake within {} ms", .0.as_millis())]
    StartupTimeout(Duration),
    /// A request to a stdio server did not finish in time (the server was stopped: a stdio
    /// server's stream is in an unknown state after a request given up on).
    #[error("{what} did not finish within {} ms", timeout.as_millis())]
    CallTimeout { what: String, timeout: Duration },
    /// A request was made after an earlier failure had torn the stdio connection down.
    #[error("the connection to the server is closed after an earlier failure")]
    Closed,
    /// The operating system's random number generator failed.
    #[error("{0}; mcat does not fall back to a predictable value")]
    Random(String),
}

impl Error {
    pub fn io(action: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }

    pub fn corrupt(path: &Path, what: &'static str, why: impl ToString) -> Error {
        Error::Corrupt {
            path: path.to_owned(),
            what,
            why: why.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
