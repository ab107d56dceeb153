//! The command line of a shared server: where it listens (`--http ADDR`, `--socket PATH`),
//! who may call it (`--token-env NAME`, `--token-file PATH`) and how many sessions it keeps
//! (`--max-sessions N`, `--session-idle SECS`, or `SATORI_MAX_SESSIONS` and
//! `SATORI_SESSION_IDLE_SECS`).
//!
//! A listener that other machines can reach must be given a token: the `Host` and `Origin`
//! checks stop pages in a browser (DNS rebinding, foreign origins), not a program on the
//! network, which writes whatever headers it likes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Where the shared server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// How many sessions the server keeps, and for how long an idle one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Live sessions at most. At the cap, a new session takes the place of the longest-idle
    /// session that has made no request since its handshake; when there is none, it is
    /// refused with 503 and `Retry-After`.
    pub max_sessions: usize,
    /// A session with no request in flight and no stream open for this long is closed and
    /// its memory returned. One that never made a request after its handshake goes after a
    /// quarter of it.
    pub session_idle: Duration,
}

impl Limits {
    pub const DEFAULT_MAX_SESSIONS: usize = 256;
    pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(120);
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            session_idle: Self::DEFAULT_SESSION_IDLE,
        }
    }
}

/// How the server is reached and who may call it.
#[derive(Clone)]
pub struct HttpOptions {
    pub listen: Listen,
    /// The bearer token every request must carry, read from a key reference.
    pub token: Option<String>,
    pub limits: Limits,
    /// `--idle-exit SECS`: exit once no session has been open and no build has run for this
    /// long (the per-user server that one-shot clients attach to).
    pub idle_exit: Option<Duration>,
    /// `--pid-file PATH`: where the server writes who it is (pid, version, executable,
    /// address) once it listens, removed when it stops.
    pub pid_file: Option<PathBuf>,
    /// `--start-lock-fd N`: a descriptor holding the lock of the client that started this
    /// server, closed once it listens, so that clients starting at the same time wait for
    /// this server instead of starting another.
    pub start_lock_fd: Option<i32>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("limits", &self.limits)
            .field("idle_exit", &self.idle_exit)
            .field("pid_file", &self.pid_file)
            .field("start_lock_fd", &self.start_lock_fd)
            .finish()
    }
}

const USAGE: &str = "usage: satori [--http ADDR | --socket PATH] [--token-env NAME | --token-file PATH] [--max-sessions N] [--session-idle SECS] [--idle-exit SECS] [--pid-file PATH] [--start-lock-fd N]";

/// The command line of a shared server. `Ok(None)` when neither `--http` nor `--socket` is
/// given (the stdio server). `env` reads a variable (the process's environment in `satori`).
pub fn parse_args(args: &[String]) -> Result<Option<HttpOptions>, String> {
    parse_args_with(args, |name| std::env::var(name).ok())
}

pub(crate) fn parse_args_with(
    args: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<HttpOptions>, String> {
    let mut listen = None;
    let mut token = None;
    let mut max_sessions = None;
    let mut session_idle = None;
    let mut idle_exit = None;
    let mut pid_file = None;
    let mut start_lock_fd = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--http" => {
                let v = value("--http")?;
                let addr: SocketAddr = v.parse().map_err(|_| {
                    format!("--http {v}: expected an address and port, such as 127.0.0.1:7700")
                })?;
                set_once(&mut listen, Listen::Tcp(addr))?;
            }
            "--socket" => set_once(&mut listen, Listen::Unix(PathBuf::from(value("--socket")?)))?,
            "--token-env" => {
                let name = value("--token-env")?;
                let t = env(&name)
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| format!("--token-env {name}: the variable is unset or empty"))?;
                set_once(&mut token, t.trim().to_string())?;
            }
            "--token-file" => {
                let path = value("--token-file")?;
                let t = read_token_file(&path)?;
                if t.is_empty() {
                    return Err(format!("--token-file {path}: the file is empty"));
                }
                set_once(&mut token, t)?;
            }
            "--token" => {
                return Err(
                    "--token is not accepted: a token on the command line is visible to every user of the machine; use --token-env NAME or --token-file PATH".into(),
                );
            }
            "--max-sessions" => {
                let v = value("--max-sessions")?;
                set_once(&mut max_sessions, max_sessions_value("--max-sessions", &v)?)?;
            }
            "--session-idle" => {
                let v = value("--session-idle")?;
                set_once(&mut session_idle, idle_value("--session-idle", &v)?)?;
            }
            "--idle-exit" => {
                let v = value("--idle-exit")?;
                set_once(&mut idle_exit, idle_value("--idle-exit", &v)?)?;
            }
            "--pid-file" => set_once(&mut pid_file, PathBuf::from(value("--pid-file")?))?,
            "--start-lock-fd" => {
                let v = value("--start-lock-fd")?;
                let fd = v
                    .trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|fd| *fd >= 3)
                    .ok_or_else(|| {
                        format!("--start-lock-fd {v}: expected a descriptor number of 3 or more")
                    })?;
                set_once(&mut start_lock_fd, fd)?;
            }
            other => return Err(format!("unknown argument '{other}'; {USAGE}")),
        }
    }
    let Some(listen) = listen else {
        if token.is_some()
            || max_sessions.is_some()
            || session_idle.is_some()
            || idle_exit.is_some()
            || pid_file.is_some()
            || start_lock_fd.is_some()
        {
            return Err(format!(
                "--token-env, --token-file, --max-sessions, --session-idle, --idle-exit and --pid-file need --http or --socket; {USAGE}"
            ));
        }
        return Ok(None);
    };
    if let Listen::Tcp(addr) = &listen
        && !addr.ip().is_loopback()
        && token.is_none()
    {
        return Err(format!(
            "--http {addr} can be reached from other machines: give a token with --token-env NAME or --token-file PATH (the Host and Origin checks stop browser pages, not network clients), or listen on 127.0.0.1"
        ));
    }
    let max_sessions = match max_sessions {
        Some(n) => n,
        None => match env("SATORI_MAX_SESSIONS") {
            Some(v) => max_sessions_value("SATORI_MAX_SESSIONS", &v)?,
            None => Limits::DEFAULT_MAX_SESSIONS,
        },
    };
    let session_idle = match session_idle {
        Some(d) => d,
        None => match env("SATORI_SESSION_IDLE_SECS") {
            Some(v) => idle_value("SATORI_SESSION_IDLE_SECS", &v)?,
            None => Limits::DEFAULT_SESSION_IDLE,
        },
    };
    Ok(Some(HttpOptions {
        listen,
        token,
        limits: Limits {
            max_sessions,
            session_idle,
        },
        idle_exit,
        pid_file,
        start_lock_fd,
    }))
}

fn max_sessions_value(name: &str, v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=100_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "{name} {v}: expected a number of sessions from 1 to 100000"
        )),
    }
}

fn idle_value(name: &str, v: &str) -> Result<Duration, String> {
    match v.trim().parse::<u64>() {
        Ok(n) if (1..=86_400).contains(&n) => Ok(Duration::from_secs(n)),
        _ => Err(format!(
            "{name} {v}: expected a number of seconds from 1 to 86400"
        )),
    }
}

/// The most a token file may hold. A token is a line; the cap keeps a path that never ends
/// (`/dev/zero`, a pipe nobody closes) from filling memory before the server starts.
const TOKEN_FILE_MAX_BYTES: u64 = 64 * 1024;

/// The token in the file at `path`, trimmed.
fn read_token_file(path: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("--token-file {path}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(TOKEN_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("--token-file {path}: {e}"))?;
    if bytes.len() as u64 > TOKEN_FILE_MAX_BYTES {
        return Err(format!(
            "--token-file {path}: the file is larger than {} KiB; a token file holds one token",
            TOKEN_FILE_MAX_BYTES / 1024
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--token-file {path}: the file is not UTF-8 text"))?;
    Ok(text.trim().to_string())
}

fn set_once<T>(slot: &mut Option<T>, v: T) -> Result<(), String> {
    if slot.is_some() {
        return Err(
            "--http/--socket, --token-env/--token-file, --max-sessions, --session-idle, --idle-exit and --pid-file may each be given once"
                .into(),
        );
    }
    *slot = Some(v);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str], expected: &str) {
        check_env(args, &[], expected)
    }

    #[track_caller]
    fn check_env(args: &[&str], env: &[(&str, &str)], expected: &str) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let got = match parse_args_with(&args, |name| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }) {
            Ok(o) => format!("{o:?}"),
            Err(e) => e,
        };
        assert!(got.contains(expected), "{args:?}: {got}");
    }

    #[test]
    fn command_lines() {
        check(&[], "None");
        check(&["--http", "127.0.0.1:0"], "Tcp(127.0.0.1:0)");
        check(&["--http", "[::1]:0"], "Tcp([::1]:0)");
        check(&["--socket", "/tmp/s.sock"], "Unix(\"/tmp/s.sock\")");
        check(&["--http", "localhost"], "expected an address and port");
        check(&["--token", "abc"], "--token is not accepted");
        check(&["--http"], "--http needs a value");
        check(&["--bogus"], "unknown argument '--bogus'");
        check(&["--max-sessions", "4"], "need --http or --socket");
        // A file that never ends is refused at the cap rather than read into memory (found by
        // the http_front fuzz target: fuzz/regressions/http_front/).
        #[cfg(unix)]
        check(
            &["--http", "127.0.0.1:1", "--token-file", "/dev/zero"],
            "the file is larger than 64 KiB",
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  secret-token\n").unwrap();
        let file = file.to_str().unwrap();
        check(
            &["--http", "127.0.0.1:1", "--token-file", file],
            "Tcp(127.0.0.1:1)",
        );
        std::fs::write(dir.path().join("bad"), [0xFF, 0xFE]).unwrap();
        let bad = dir.path().join("bad");
        check(
            &[
                "--http",
                "127.0.0.1:1",
                "--token-file",
                bad.to_str().unwrap(),
            ],
            "not UTF-8 text",
        );
        check(
            &[
                "--token-env",
                "SATORI_SURELY_UNSET_VARIABLE",
                "--http",
                "127.0.0.1:1",
            ],
            "the variable is unset or empty",
        );
        check(
            &["--http", "127.0.0.1:1", "--socket", "/tmp/x"],
            "each be given once",
        );
        check(
            &[
                "--socket",
                "/s",
                "--idle-exit",
                "900",
                "--pid-file",
                "/s.json",
            ],
            "idle_exit: Some(900s), pid_file: Some(\"/s.json\")",
        );
        check(&["--socket", "/s"], "idle_exit: None, pid_file: None");
        check(&["--idle-exit", "5"], "need --http or --socket");
        check(&["--pid-file", "/p"], "need --http or --socket");
        check(
            &["--socket", "/s", "--start-lock-fd", "3"],
            "start_lock_fd: Some(3)",
        );
        check(&["--socket", "/s", "--start-lock-fd", "1"], "3 or more");
        check(&["--socket", "/s", "--idle-exit", "0"], "from 1 to 86400");
        check(
            &["--socket", "/s", "--idle-exit", "1", "--idle-exit", "2"],
            "each be given once",
        );
    }

    /// Any address other machines can reach needs a token; loopback and sockets do not.
    #[test]
    fn a_reachable_listener_needs_a_token() {
        for addr in ["0.0.0.0:7700", "[::]:7700", "192.0.2.1:7700"] {
            check(
                &["--http", addr],
                "give a token with --token-env NAME or --token-file PATH",
            );
            check_env(
                &["--http", addr, "--token-env", "T"],
                &[("T", "secret")],
                "token: Some(\"<set>\")",
            );
        }
        check(&["--http", "127.0.0.2:7700"], "token: None");
        check(&["--socket", "/tmp/s"], "token: None");
    }

    #[test]
    fn session_limits() {
        check(
            &["--http", "127.0.0.1:0"],
            "max_sessions: 256, session_idle: 120s",
        );
        check(
            &[
                "--http",
                "127.0.0.1:0",
                "--max-sessions",
                "8",
                "--session-idle",
                "5",
            ],
            "max_sessions: 8, session_idle: 5s",
        );
        check_env(
            &["--socket", "/tmp/s"],
            &[
                ("SATORI_MAX_SESSIONS", "9"),
                ("SATORI_SESSION_IDLE_SECS", "7"),
            ],
            "max_sessions: 9, session_idle: 7s",
        );
        check_env(
            &["--socket", "/tmp/s", "--max-sessions", "3"],
            &[("SATORI_MAX_SESSIONS", "9")],
            "max_sessions: 3,",
        );
        check(
            &["--http", "127.0.0.1:0", "--max-sessions", "0"],
            "--max-sessions 0: expected a number of sessions from 1 to 100000",
        );
        check_env(
            &["--http", "127.0.0.1:0"],
            &[("SATORI_SESSION_IDLE_SECS", "soon")],
            "SATORI_SESSION_IDLE_SECS soon: expected a number of seconds",
        );
    }

    #[test]
    fn the_token_stays_out_of_debug() {
        let o = HttpOptions {
            listen: Listen::Tcp("127.0.0.1:1".parse().unwrap()),
            token: Some("secret-token".into()),
            limits: Limits::default(),
            idle_exit: None,
            pid_file: None,
            start_lock_fd: None,
        };
        assert!(!format!("{o:?}").contains("secret-token"));
    }
}
