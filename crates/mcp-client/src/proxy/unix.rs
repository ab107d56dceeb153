//! `proxy up|down|status` on Unix: a long-lived bridge that runs a stdio MCP server and
//! serves it as Streamable HTTP on a Unix socket, so many one-shot commands (even concurrent
//! ones) share one warm server.
//!
//! `up` starts the bridge detached (`__serve`, in [`super::bridge`]) and waits until it
//! listens; the bridge writes the control file `<socket stem>.json` (its pid, the command,
//! when it started) once the server has answered `initialize`, and logs to
//! `<socket stem>.log`. `status` trusts neither file alone: a proxy is alive when its pid
//! runs and its socket answers. `down` stops it and removes the socket, the control file and
//! the log.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Served, control_path, log_path, now_ms};
use crate::error::{Error, Result};
use crate::files;

/// Version of the control file's shape.
pub(super) const CONTROL_VERSION: u32 = 1;
/// How long `up` waits for the server to answer `initialize` through the bridge.
const STARTUP_PATIENCE: Duration = Duration::from_secs(60);

/// The control file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Control {
    pub version: u32,
    pub socket: String,
    /// The bridge's pid.
    pub pid: u32,
    /// The stdio server's pid.
    pub child_pid: u32,
    pub command: String,
    pub args: Vec<String>,
    pub started_at: String,
    pub started_at_ms: u64,
    pub nonce: String,
}

impl Control {
    /// The control file of `socket`, `None` when there is none.
    pub fn load(socket: &Path) -> Result<Option<Control>> {
        let path = control_path(socket);
        let Some(bytes) = files::read_optional(&path)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::corrupt(&path, "proxy control file", e))
    }

    pub(super) fn save(&self, socket: &Path) -> Result<()> {
        files::write_json(&control_path(socket), self, false)
    }

    /// Whether the bridge runs and its socket accepts connections.
    pub fn alive(&self, socket: &Path) -> bool {
        pid_alive(self.pid) && std::os::unix::net::UnixStream::connect(socket).is_ok()
    }
}

/// `proxy up SOCKET -- CMD ARGS`.
pub fn up(socket: &Path, command: &[String]) -> Result<Value> {
    let Some((cmd, args)) = command.split_first() else {
        return Err(Error::Usage(
            "proxy up needs the stdio server's command after --: mcat proxy up unix:///path.sock -- CMD [ARG...]".into(),
        ));
    };
    if let Some(old) = Control::load(socket)? {
        if old.alive(socket) {
            return Err(Error::Proxy(format!(
                "a proxy already runs on unix://{} (pid {}, {}); stop it with mcat proxy down first",
                socket.display(),
                old.pid,
                old.command
            )));
        }
        clean(socket);
    } else if socket.exists() {
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return Err(Error::Proxy(format!(
                "something already listens on {} and it is not an mcat proxy",
                socket.display()
            )));
        }
        let _ = std::fs::remove_file(socket);
    }
    if let Some(dir) = socket.parent()
        && !dir.as_os_str().is_empty()
        && !dir.is_dir()
    {
        return Err(Error::Usage(format!(
            "the socket's directory {} does not exist",
            dir.display()
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| Error::Proxy(format!("cannot find mcat itself: {e}")))?;
    let log = log_path(socket);
    let log_file = std::fs::File::create(&log).map_err(|e| Error::io("create", &log, e))?;
    let mut child = Command::new(exe);
    child
        .arg(super::SERVE_ARG)
        .arg(socket)
        .arg("--")
        .arg(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file));
    // A session of its own: the bridge outlives the shell that started it and does not get
    // the terminal's signals.
    // SAFETY: setsid is async-signal-safe and touches no state of this process.
    unsafe {
        child.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = child
        .spawn()
        .map_err(|e| Error::Proxy(format!("cannot start the proxy: {e}")))?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().ok().flatten() {
            let tail = log_tail(&log);
            return Err(Error::Proxy(format!(
                "the proxy for '{cmd}' stopped before it was ready ({status}){}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            )));
        }
        if let Some(c) = Control::load(socket)?
            && c.pid == child.id()
            && c.alive(socket)
        {
            return Ok(json!({
                "socket": socket.display().to_string(),
                "endpoint": format!("unix://{}", socket.display()),
                "pid": c.pid,
                "child_pid": c.child_pid,
                "command": c.command,
                "args": c.args,
                "control_file": control_path(socket).display().to_string(),
                "log_file": log.display().to_string(),
            }));
        }
        if start.elapsed() > STARTUP_PATIENCE {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            return Err(Error::Proxy(format!(
                "the server '{cmd}' did not answer initialize within {} s; see {}",
                STARTUP_PATIENCE.as_secs(),
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Who serves `socket`: a proxy when its control file is there (and then it must be
/// alive: a dead proxy's stale files are reported, never trusted), otherwise whatever
/// Streamable HTTP server listens on it. A file at the control path that is not a control
/// file belongs to someone else and says nothing about the socket.
pub fn served(socket: &Path) -> Result<Served> {
    match Control::load(socket) {
        Ok(Some(c)) if c.alive(socket) => Ok(Served::Proxy),
        Ok(Some(c)) => Err(Error::Proxy(format!(
            "the proxy on unix://{} is not running (pid {} is gone; its control file is stale): start it again with mcat proxy up",
            socket.display(),
            c.pid
        ))),
        Ok(None) | Err(Error::Corrupt { .. }) => Ok(Served::Server),
        Err(e) => Err(e),
    }
}

/// The control file of `socket`, which must exist.
fn existing(socket: &Path) -> Result<Control> {
    Control::load(socket)?.ok_or_else(|| {
        Error::Proxy(format!(
            "no proxy on unix://{}: there is no control file {}",
            socket.display(),
            control_path(socket).display()
        ))
    })
}

/// `proxy status SOCKET`.
pub fn status(socket: &Path) -> Result<Value> {
    let c = existing(socket)?;
    let alive = c.alive(socket);
    let uptime = now_ms().saturating_sub(c.started_at_ms) / 1000;
    Ok(json!({
        "socket": socket.display().to_string(),
        "alive": alive,
        "stale": !alive,
        "pid": c.pid,
        "child_pid": c.child_pid,
        "child_alive": pid_alive(c.child_pid),
        "command": c.command,
        "args": c.args,
        "started_at": c.started_at,
        "uptime_s": uptime,
    }))
}

/// `proxy down SOCKET`.
pub fn down(socket: &Path) -> Result<Value> {
    let c = existing(socket)?;
    let was_alive = pid_alive(c.pid);
    for pid in [c.pid, c.child_pid] {
        if pid_alive(pid) {
            stop(pid);
        }
    }
    clean(socket);
    Ok(json!({"socket": socket.display().to_string(), "stopped": was_alive}))
}

/// SIGTERM, a grace, then SIGKILL.
fn stop(pid: u32) {
    // SAFETY: plain signals to a pid read from our own control file.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let start = Instant::now();
    while pid_alive(pid) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if pid_alive(pid) {
        // SAFETY: as above.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

fn clean(socket: &Path) {
    for p in [socket.to_owned(), control_path(socket), log_path(socket)] {
        let _ = std::fs::remove_file(p);
    }
}

/// Whether a process with this pid exists (and is not a zombie we could reap).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let exists = unsafe { libc::kill(pid as i32, 0) } == 0;
    if !exists {
        return false;
    }
    // A zombie exists but does nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                != Some("Z")
        })
        .unwrap_or(true)
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// RFC 3339 UTC of a unix time in milliseconds.
pub(super) fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_772_316_000_000), "2026-02-28T22:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }
}
