//! The per-user server that one-shot clients attach to (`satori-cli`, the Node API), so that
//! a call finds the index open, the tree watched and the model loaded instead of paying for a
//! process start, an index open and a walk of the tree each time.
//!
//! Where it lives: `$SATORI_HOME/run/<identity>.sock` (mode 0600, in a directory of mode
//! 0700), with `<identity>.json` (who it is: pid, version, executable) and `<identity>.log`
//! (its stderr). The identity is a hash of what makes a server behave as the caller expects:
//! the version, the executable (path, size, modification time) and every environment variable
//! that may change what the server does ([`satori_protocol::env::daemon_identity_vars`]:
//! home, embedding provider and keys, Milvus address, ranking weights, ...). A caller whose
//! environment differs gets a server of its own, never one configured differently; a new
//! build gets a new server, and the old one is asked to drain (`SIGUSR1`: exit once no client
//! and no build is left).
//!
//! Starting is guarded by a lock on `<identity>.lock`, which passes to the new server and is
//! let go once it listens: two clients starting at once end with one server. The client that
//! starts it does not wait for it: its own call runs in a server of its own, and the server is
//! started once that call is done (see [`Pending`]). A socket nobody listens on (a server
//! that was killed) is replaced by the new server; a socket that answers but is not ours
//! (another owner, another version) is never touched, and the call runs in a private child
//! instead. The server is started detached: its own process group, no standard input or
//! output, stderr to the log; it exits after `SATORI_DAEMON_IDLE_SECS` (default 900) with no
//! session and no build.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use satori_protocol::daemon::{PidFile, executable_stamp};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ClientError;
use satori_protocol::env;

/// How long the per-user server waits with nothing to do before it exits.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(15 * 60);

/// The longest socket path the platforms take (`sun_path` is 104 bytes on macOS, 108 on
/// Linux, with its terminating zero).
const MAX_SOCKET_PATH: usize = 100;

/// The most of its log the server keeps from its previous runs: past this, a start begins
/// the log afresh.
const MAX_LOG_BYTES: u64 = 1 << 20;

/// Why calls do not attach to a per-user server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Off {
    /// `SATORI_DAEMON=off` or the CLI's `--no-daemon`.
    Disabled,
    /// The platform has no unix sockets.
    Unsupported,
    /// The socket's path would be longer than the platform allows.
    PathTooLong(PathBuf),
    /// `SATORI_TELEMETRY=stderr`: the caller wants the server's telemetry lines on its own
    /// stderr, which only a server of its own writes to.
    Telemetry,
}

impl std::fmt::Display for Off {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Off::Disabled => write!(f, "{}=off", env::DAEMON),
            Off::Unsupported => f.write_str("this platform has no unix sockets"),
            Off::Telemetry => write!(
                f,
                "{}=stderr: the telemetry lines reach the caller only from a server of its own",
                env::TELEMETRY
            ),
            Off::PathTooLong(p) => write!(
                f,
                "the socket path {} is longer than {MAX_SOCKET_PATH} bytes (choose a shorter {})",
                p.display(),
                env::HOME
            ),
        }
    }
}

/// The per-user server for this caller's executable and environment.
#[derive(Debug, Clone)]
pub struct Daemon {
    run_dir: PathBuf,
    id: String,
    server_bin: PathBuf,
    idle: Duration,
    /// Environment the caller adds for its server (the Node API's `env`): part of the
    /// identity, and given to the server it starts.
    extra: Vec<(String, String)>,
}

impl Daemon {
    /// The per-user server for `server_bin` and this process's environment, unless `no_daemon`
    /// (the CLI's flag), `SATORI_DAEMON=off`, or the platform says otherwise. `Err` is a
    /// malformed setting.
    pub fn from_env(server_bin: &Path, no_daemon: bool) -> Result<Result<Daemon, Off>, String> {
        Daemon::with_env(server_bin, no_daemon, &[])
    }

    /// [`Daemon::from_env`] with `extra` variables over this process's (the environment a
    /// caller gives its server).
    pub fn with_env(
        server_bin: &Path,
        no_daemon: bool,
        extra: &[(String, String)],
    ) -> Result<Result<Daemon, Off>, String> {
        let mut vars: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
            .collect();
        vars.extend(extra.iter().cloned());
        let get = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| std::ffi::OsString::from(v))
        };
        let text = |name: &str| get(name).and_then(|v| v.into_string().ok());
        let enabled = match text(env::DAEMON).as_deref().map(str::trim) {
            None | Some("") | Some("on") | Some("1") => !no_daemon,
            Some("off") | Some("0") => false,
            Some(other) => {
                return Err(format!(
                    "{} must be 'on' or 'off', not {other:?}",
                    env::DAEMON
                ));
            }
        };
        let idle = match text(env::DAEMON_IDLE_SECS).as_deref().map(str::trim) {
            None | Some("") => DEFAULT_IDLE,
            Some(v) => match v.parse::<u64>() {
                Ok(n) if (1..=86_400).contains(&n) => Duration::from_secs(n),
                _ => {
                    return Err(format!(
                        "{} must be a number of seconds from 1 to 86400, not {v:?}",
                        env::DAEMON_IDLE_SECS
                    ));
                }
            },
        };
        if !enabled {
            return Ok(Err(Off::Disabled));
        }
        if text(env::TELEMETRY).as_deref().map(str::trim) == Some("stderr") {
            return Ok(Err(Off::Telemetry));
        }
        if !cfg!(unix) {
            return Ok(Err(Off::Unsupported));
        }
        let home = env::home_dir(get);
        let daemon = Daemon {
            run_dir: run_dir_of(&home),
            id: identity(server_bin, &vars),
            server_bin: server_bin.to_path_buf(),
            idle,
            extra: extra.to_vec(),
        };
        let socket = daemon.socket();
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Ok(Err(Off::PathTooLong(socket)));
        }
        Ok(Ok(daemon))
    }

    /// The directory of the per-user servers of this home.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The identity: a hash of version, executable and behaviour-changing environment.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn socket(&self) -> PathBuf {
        named(&self.run_dir, &self.id, "sock")
    }

    pub fn pid_file(&self) -> PathBuf {
        named(&self.run_dir, &self.id, "json")
    }

    pub fn log_file(&self) -> PathBuf {
        named(&self.run_dir, &self.id, "log")
    }

    fn lock_file(&self) -> PathBuf {
        named(&self.run_dir, &self.id, "lock")
    }

    /// The endpoint a client connects to.
    pub fn endpoint(&self) -> mcp_client::Endpoint {
        mcp_client::Endpoint::Unix(self.socket())
    }

    /// [`Attach::Warm`] when a server answers on the socket; otherwise [`Attach::Start`]: the
    /// start lock, held, and what starting the server takes ([`Pending::spawn`]). A client
    /// that finds the lock held waits (within `timeout`) for the server its holder starts.
    /// `preopen`: the codebase the call is about to search, whose index the new server opens
    /// while it starts (`SATORI_PREOPEN`). Blocking: run it off the async threads.
    pub fn attach_or_start(
        &self,
        timeout: Duration,
        preopen: Option<&str>,
    ) -> Result<Attach, ClientError> {
        let socket = self.socket();
        if answers(&socket)? {
            return Ok(Attach::Warm);
        }
        make_private_dir(&self.run_dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.lock_file())
            .map_err(|e| io_error(&self.lock_file(), e))?;
        // Held until the new server listens: a second client waits here, then finds the
        // server the first one started. Within the start budget: a server that hangs before
        // it listens must not hold every later call.
        let deadline = Instant::now() + timeout;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(ClientError::StartupTimeout(timeout));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(io_error(&self.lock_file(), e));
                }
            }
        }
        if answers(&socket)? {
            return Ok(Attach::Warm);
        }
        Ok(Attach::Start(Pending {
            daemon: self.clone(),
            lock,
            preopen: preopen.map(str::to_owned),
        }))
    }
}

/// What [`Daemon::attach_or_start`] found.
#[derive(Debug)]
pub enum Attach {
    /// A server answers: attach to it.
    Warm,
    /// None does, and this client holds the start lock: it starts one (see [`Pending`]).
    Start(Pending),
}

/// A per-user server to start, with the start lock held. The caller runs its own call in a
/// server of its own and starts this one when the call is done, or once the call has taken
/// long enough, so that the two do not compete for the machine while the caller waits (the
/// call is then no slower than without the per-user server). Dropped without
/// [`Pending::spawn`], it lets go of the lock, and the next call starts the server.
#[derive(Debug)]
pub struct Pending {
    daemon: Daemon,
    lock: std::fs::File,
    preopen: Option<String>,
}

/// The descriptor number at which a starting server finds the start lock.
const LOCK_FD: i32 = 3;

impl Pending {
    /// Starts the server, detached, and returns its pid without waiting for it. The start lock
    /// passes to it (an inherited descriptor, `--start-lock-fd`), and it lets go of the lock
    /// once it listens. Blocking only for the spawn.
    pub fn spawn(self) -> Result<u32, ClientError> {
        let Pending {
            daemon,
            lock,
            preopen,
        } = self;
        drain_superseded(&daemon.run_dir, &daemon.server_bin, &daemon.id);
        let log = open_log(&daemon.log_file())?;
        let mut cmd = std::process::Command::new(&daemon.server_bin);
        cmd.arg("--socket")
            .arg(daemon.socket())
            .arg("--idle-exit")
            .arg(daemon.idle.as_secs().to_string())
            .arg("--pid-file")
            .arg(daemon.pid_file())
            .envs(daemon.extra.iter().map(|(k, v)| (k, v)))
            .env(env::RUN_MODE, "mcp")
            .env_remove(env::PREOPEN)
            .current_dir(&daemon.run_dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log);
        if let Some(path) = &preopen {
            cmd.env(env::PREOPEN, path);
        }
        #[cfg(unix)]
        {
            use std::os::unix::io::AsRawFd;
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
            let fd = lock.as_raw_fd();
            cmd.arg("--start-lock-fd").arg(LOCK_FD.to_string());
            // SAFETY: between fork and exec the closure calls only dup2 and fcntl, which are
            // async-signal-safe, and touches no memory but its two integers.
            unsafe {
                cmd.pre_exec(move || {
                    // The lock's descriptor, at a known number and kept across exec.
                    let r = if fd == LOCK_FD {
                        libc::fcntl(fd, libc::F_SETFD, 0)
                    } else {
                        libc::dup2(fd, LOCK_FD)
                    };
                    if r < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().map_err(|source| ClientError::Spawn {
            path: daemon.server_bin.clone(),
            source,
        })?;
        // The server holds the lock now, through its copy of the descriptor.
        drop(lock);
        let pid = child.id();
        reap(child);
        Ok(pid)
    }
}

/// Reaps the server when it exits, so that a long-lived caller (the Node API) keeps no
/// zombie; the thread ends with the caller otherwise.
fn reap(mut child: std::process::Child) {
    std::thread::spawn(move || child.wait());
}

/// Whether a server listens at `socket`. A socket file nobody listens on is stale (its server
/// was killed): the next server replaces it. A socket of another user is never used.
fn answers(socket: &Path) -> Result<bool, ClientError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::symlink_metadata(socket) else {
            return Ok(false);
        };
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(ClientError::Protocol(format!(
                "{} belongs to another user; it was left as it is",
                socket.display()
            )));
        }
        Ok(std::os::unix::net::UnixStream::connect(socket).is_ok())
    }
    #[cfg(not(unix))]
    {
        let _ = socket;
        Ok(false)
    }
}

/// The identity of the server a caller needs (see the module docs), 16 hex digits.
fn identity(server_bin: &Path, vars: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(env!("CARGO_PKG_VERSION").as_bytes());
    let exe = server_bin
        .canonicalize()
        .unwrap_or_else(|_| server_bin.to_path_buf());
    part(exe.as_os_str().as_encoded_bytes());
    part(executable_stamp(&exe).unwrap_or_default().as_bytes());
    for (name, value) in env::daemon_identity_vars(vars.iter().cloned()) {
        part(name.as_bytes());
        part(value.as_bytes());
    }
    let digest = h.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn make_private_dir(dir: &Path) -> Result<(), ClientError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| io_error(dir, e))?;
    // A directory made earlier by hand or another tool may be open to others: the sockets
    // in it are mode 0600 either way, but their names and logs are this user's business.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(dir).map_err(|e| io_error(dir, e))?;
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| io_error(dir, e))?;
        }
    }
    Ok(())
}

fn open_log(path: &Path) -> Result<std::fs::File, ClientError> {
    let fresh = std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_BYTES);
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    if fresh {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(|e| io_error(path, e))
}

fn io_error(path: &Path, e: std::io::Error) -> ClientError {
    ClientError::Protocol(format!("{}: {e}", path.display()))
}

/// A per-user server as its pid file describes it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    pub id: String,
    #[serde(flatten)]
    pub file: PidFile,
    /// Whether its socket answers now.
    pub running: bool,
    pub log: PathBuf,
}

/// The per-user servers of the home whose run directory is `run_dir`, by identity. A pid file
/// that cannot be read is left out.
pub fn servers(run_dir: &Path) -> Vec<ServerInfo> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let mut out: Vec<ServerInfo> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name.strip_suffix(".json")?.to_owned();
            let file: PidFile = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            Some(ServerInfo {
                file,
                running: answers(&named(run_dir, &id, "sock")).unwrap_or(false),
                log: named(run_dir, &id, "log"),
                id,
            })
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// The file `<id>.<ext>` of the per-user server `id` in `run_dir`.
fn named(run_dir: &Path, id: &str, ext: &str) -> PathBuf {
    run_dir.join(format!("{id}.{ext}"))
}

/// The run directory of a home: where its per-user servers' sockets and files are.
pub fn run_dir_of(home: &Path) -> PathBuf {
    home.join("run")
}

/// Whether the process `pid` is the server that wrote the pid file of `id` in `run_dir`: on
/// Linux its command line names that pid file, so a pid reused by another process is never
/// signalled; elsewhere, its socket answers.
fn is_that_server(run_dir: &Path, id: &str, pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        let pid_file = named(run_dir, id, "json");
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
            cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == pid_file.as_os_str().as_encoded_bytes())
        })
    } else {
        answers(&named(run_dir, id, "sock")).unwrap_or(false)
    }
}

#[cfg(unix)]
fn signal(pid: u32, sig: libc::c_int) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with a positive pid signals that one process; no memory is involved.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Asks the servers of this home that an older build runs (another version, or the same
/// executable path since replaced) to exit once their clients and builds are done. A server
/// of this build started with another environment is someone else's, and stays.
fn drain_superseded(run_dir: &Path, server_bin: &Path, id: &str) {
    #[cfg(unix)]
    {
        let exe = server_bin
            .canonicalize()
            .unwrap_or_else(|_| server_bin.to_path_buf());
        let stamp = executable_stamp(&exe);
        for s in servers(run_dir) {
            let f = &s.file;
            let superseded = f.version != env!("CARGO_PKG_VERSION")
                || (f.executable.as_deref() == Some(exe.as_path()) && f.executable_stamp != stamp);
            if s.id != id && superseded && is_that_server(run_dir, &s.id, f.pid) {
                signal(f.pid, libc::SIGUSR1);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (run_dir, server_bin, id);
}

/// Stops the per-user servers of this home (`SIGTERM`: each closes its sessions, hands the
/// builds it runs to detached processes, and exits), waiting up to `patience` for each.
/// Returns the servers that were running and whether each has stopped.
pub fn stop_all(run_dir: &Path, patience: Duration) -> Vec<(ServerInfo, bool)> {
    let mut out = Vec::new();
    for s in servers(run_dir) {
        let pid = s.file.pid;
        if !is_that_server(run_dir, &s.id, pid) {
            continue;
        }
        #[cfg(unix)]
        let sent = signal(pid, libc::SIGTERM);
        #[cfg(not(unix))]
        let sent = false;
        let deadline = Instant::now() + patience;
        let mut stopped = false;
        while sent && Instant::now() < deadline {
            if !is_that_server(run_dir, &s.id, pid) {
                stopped = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        out.push((s, stopped));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_changes_with_what_changes_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("satori");
        std::fs::write(&bin, b"one").unwrap();
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let base = identity(&bin, &vars(&[("SATORI_HOME", "/h"), ("TERM", "x")]));
        assert_eq!(base.len(), 16);
        let check = |other: String, same: bool| assert_eq!(base == other, same, "{other}");
        check(
            identity(&bin, &vars(&[("SATORI_HOME", "/h"), ("TERM", "y")])),
            true,
        );
        check(
            identity(
                &bin,
                &vars(&[("SATORI_HOME", "/h"), ("SATORI_DAEMON", "on")]),
            ),
            true,
        );
        check(identity(&bin, &vars(&[("SATORI_HOME", "/other")])), false);
        check(
            identity(
                &bin,
                &vars(&[("SATORI_HOME", "/h"), ("MILVUS_ADDRESS", "m:19530")]),
            ),
            false,
        );
        let copy = dir.path().join("satori-copy");
        std::fs::copy(&bin, &copy).unwrap();
        check(identity(&copy, &vars(&[("SATORI_HOME", "/h")])), false);
        std::fs::write(&bin, b"two, longer").unwrap();
        check(identity(&bin, &vars(&[("SATORI_HOME", "/h")])), false);
    }

    #[test]
    fn stale_and_missing_sockets_do_not_answer() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        assert!(!answers(&sock).unwrap());
        #[cfg(unix)]
        {
            drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
            assert!(sock.exists());
            assert!(!answers(&sock).unwrap());
            std::fs::remove_file(&sock).unwrap();
            let _live = std::os::unix::net::UnixListener::bind(&sock).unwrap();
            assert!(answers(&sock).unwrap());
        }
    }

    #[test]
    fn pid_files_list_the_servers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("abc.json"),
            r#"{"pid": 4242, "version": "9.9.9", "address": "unix:///x", "startedAt": "t"}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("bad.json"), "{").unwrap();
        std::fs::write(dir.path().join("abc.log"), "").unwrap();
        let listed = servers(dir.path());
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id, "abc");
        assert_eq!(listed[0].file.pid, 4242);
        assert!(!listed[0].running);
        // Not the server the file names: never signalled.
        assert!(!is_that_server(dir.path(), "abc", std::process::id()));
    }
}
