//! mcat's one error type. Every failure reaches the user as `{"ok":false,"error":...}`; the
//! variant decides the exit code (see `output`), and the message is the whole explanation:
//! it names the file, endpoint or argument at fault and never carries a secret.

use std::path::{Path, PathBuf};

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
    /// The server refused the token (or wants one).
    #[error("{0}")]
    Unauthorized(String),
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server { code: i64, message: String },
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
    /// The operating system's random number generator failed.
    #[error("{0}; mcat does not fall back to a predictable value")]
    Random(String),
}

impl Error {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn corrupt(path: &Path, what: &'static str, why: impl ToString) -> Error {
        Error::Corrupt {
            path: path.to_owned(),
            what,
            why: why.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
