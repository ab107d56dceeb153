//! The stdout guard: on stdio, fd 1 is the MCP protocol and nothing else may reach it.
//!
//! Before any other code runs, the real stdout is duplicated for the protocol writer and fd 1
//! itself is pointed elsewhere, so a stray print from anywhere — our code, a dependency, a
//! native library — cannot corrupt the stream. This works at the file-descriptor level, below
//! every language runtime, which a console patch could never do.
//!
//! Modes (`SATORI_CLI_STDOUT_GUARD` in cli mode; mcp mode always redirects):
//! - `drop`: stray bytes go nowhere; each write leaves one stderr line
//!   `[STDOUT_BLOCKED] dropped len=<n>`.
//! - `redirect`: stray bytes go to stderr.
//! - `off`: no guard; `[STDOUT_GUARD_DISABLED] SATORI_CLI_STDOUT_GUARD=off` once on stderr.

// The server's one owner of stdout: it moves fd 1 aside and hands the protocol its copy.
#![allow(clippy::disallowed_methods)]

use std::fs::File;
use std::io::Write;

/// How stray writes to fd 1 are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardMode {
    Drop,
    Redirect,
    Off,
}

impl GuardMode {
    /// Parses the environment value; `None` for an unknown value.
    pub fn parse(value: &str) -> Option<GuardMode> {
        match value.trim().to_ascii_lowercase().as_str() {
            "drop" => Some(GuardMode::Drop),
            "redirect" => Some(GuardMode::Redirect),
            "off" => Some(GuardMode::Off),
            _ => None,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            GuardMode::Drop => "drop",
            GuardMode::Redirect => "redirect",
            GuardMode::Off => "off",
        }
    }
}

/// Where protocol bytes must be written once the guard is installed.
#[derive(Debug)]
pub enum ProtocolOut {
    /// A private duplicate of the original stdout.
    Guarded(File),
    /// The guard is off: the process's own stdout.
    Stdout,
}

/// Installs the guard in `mode`. Must run before any thread is started (tokio, logging).
pub fn install(mode: GuardMode) -> std::io::Result<ProtocolOut> {
    if mode == GuardMode::Off {
        let _ = writeln!(
            std::io::stderr(),
            "[STDOUT_GUARD_DISABLED] SATORI_CLI_STDOUT_GUARD=off"
        );
        return Ok(ProtocolOut::Stdout);
    }
    imp::install(mode)
}

/// Called once the session is over: lets the `drop` guard report stray bytes still in its
/// pipe before the process exits (a write just before exit must still leave its stderr line).
pub fn finish() {
    imp::finish();
}

#[cfg(unix)]
mod imp {
    use std::fs::File;
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::mpsc::{Receiver, channel};
    use std::sync::{Mutex, OnceLock};
    use std::time::Duration;

    use super::{GuardMode, ProtocolOut};

    /// Disconnects when the drain thread ends.
    static DRAINED: OnceLock<Mutex<Option<Receiver<()>>>> = OnceLock::new();

    /// How long `finish` waits for the drain; a child process that inherited fd 1 and
    /// still runs would otherwise keep the pipe open forever.
    const DRAIN_WAIT: Duration = Duration::from_millis(500);

    pub fn finish() {
        let Some(lock) = DRAINED.get() else {
            return;
        };
        let _ = std::io::stdout().flush();
        // Pointing fd 1 at /dev/null closes the pipe's write end, so the drain thread reads
        // what is left and then sees the end of the stream.
        if let Ok(null) = File::options().write(true).open("/dev/null") {
            // SAFETY: dup2 of valid descriptors; on failure the wait below just times out.
            unsafe { libc::dup2(null.as_raw_fd(), 1) };
        }
        if let Some(rx) = lock.lock().ok().and_then(|mut r| r.take()) {
            let _ = rx.recv_timeout(DRAIN_WAIT);
        }
    }

    fn check(rc: libc::c_int) -> std::io::Result<libc::c_int> {
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    }

    pub fn install(mode: GuardMode) -> std::io::Result<ProtocolOut> {
        let _ = std::io::stdout().flush();
        // Close-on-exec, so children we spawn (git) never inherit the protocol stream.
        // SAFETY: fcntl on fd 1 has no memory-safety preconditions; the result is checked.
        let proto = check(unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) })?;
        // SAFETY: `proto` is a fresh descriptor that nothing else owns.
        let proto = unsafe { File::from_raw_fd(proto) };
        match mode {
            GuardMode::Redirect => {
                // SAFETY: dup2 of valid descriptors; the result is checked.
                check(unsafe { libc::dup2(2, 1) })?;
            }
            GuardMode::Drop => {
                // std's pipe is close-on-exec on every Unix (pipe2 is not on macOS).
                let (read_end, write_end) = std::io::pipe()?;
                let (read_end, write_end) = (OwnedFd::from(read_end), OwnedFd::from(write_end));
                // SAFETY: dup2 of valid descriptors; fd 1 now refers to the pipe.
                check(unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&write_end), 1) })?;
                drop(write_end);
                let (done, drained) = channel::<()>();
                let _ = DRAINED.set(Mutex::new(Some(drained)));
                std::thread::Builder::new()
                    .name("stdout-guard".into())
                    .spawn(move || {
                        drain(File::from(read_end));
                        drop(done);
                    })?;
            }
            GuardMode::Off => return Ok(ProtocolOut::Stdout),
        }
        Ok(ProtocolOut::Guarded(proto))
    }

    /// Reads whatever lands on fd 1 and reports its size, never its bytes (they may be binary).
    fn drain(mut pipe: File) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    crate::logging::emit_for_process(
                        crate::logging::Level::Warning,
                        "stdout_guard",
                        format_args!("[STDOUT_BLOCKED] dropped len={n}"),
                        || serde_json::json!({"event": "stdout_blocked", "bytes": n}),
                    );
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use super::{GuardMode, ProtocolOut};

    /// Without Unix descriptors the guard cannot be installed; protocol uses plain stdout.
    pub fn install(_mode: GuardMode) -> std::io::Result<ProtocolOut> {
        Ok(ProtocolOut::Stdout)
    }

    pub fn finish() {}
}

/// Test hook: writes stray bytes to fd 1 the way a careless dependency would — a line through
/// Rust's stdout, and a raw partial write without a newline. Compiled into debug builds only
/// and triggered by `SATORI_TEST_STRAY_STDOUT`, so release binaries never carry it.
#[cfg(debug_assertions)]
pub fn stray_write_for_tests() {
    let Ok(text) = std::env::var(satori_protocol::env::TEST_STRAY_STDOUT) else {
        return;
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    #[cfg(unix)]
    {
        let partial = b"PARTIAL-NO-NEWLINE";
        // SAFETY: writing a valid buffer to fd 1; the result is irrelevant for the hook.
        let _ = unsafe { libc::write(1, partial.as_ptr().cast(), partial.len()) };
    }
}

/// Release builds have no stray-write hook.
#[cfg(not(debug_assertions))]
pub fn stray_write_for_tests() {}
