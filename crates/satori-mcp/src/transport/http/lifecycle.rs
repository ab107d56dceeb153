//! The life of a server that clients start for themselves and leave running (the per-user
//! server `satori-cli` and the Node API attach to): it says who it is in a pid file, and it
//! ends itself when nobody needs it.
//!
//! It exits when, for `--idle-exit` in a row, no session was open and no build or sync ran; at
//! once (with the same conditions) after `SIGUSR1`, which a client of a newer version sends
//! to let an older server drain; and as soon as its socket is no longer the one it bound (the
//! home was removed, another server took the path), since no client can reach it any more.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::sessions::Sessions;
use crate::Service;

/// Resolves when the server should stop for want of clients (see the module docs); never
/// when `idle` is `None`. `socket` is the unix socket the server bound, if any.
pub(super) async fn idle_exit(
    sessions: Arc<Sessions>,
    service: Arc<Service>,
    idle: Option<Duration>,
    socket: Option<PathBuf>,
) {
    let Some(idle) = idle else {
        return std::future::pending().await;
    };
    let draining = Arc::new(AtomicBool::new(false));
    listen_for_drain(Arc::clone(&draining));
    let bound = socket.as_deref().and_then(socket_id);
    let every = (idle / 8).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut idle_since: Option<Instant> = None;
    loop {
        tick.tick().await;
        if let (Some(path), Some(bound)) = (&socket, bound)
            && socket_id(path) != Some(bound)
        {
            let _ = writeln_stderr(&format!(
                "satori: {} is gone or no longer this server's socket; exiting",
                path.display()
            ));
            return;
        }
        if !sessions.is_empty() || service.busy() {
            idle_since = None;
            continue;
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        let limit = if draining.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            idle
        };
        if since.elapsed() >= limit {
            let _ = writeln_stderr(&format!(
                "satori: no client for {} s; exiting",
                since.elapsed().as_secs()
            ));
            return;
        }
    }
}

fn writeln_stderr(line: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stderr(), "{line}")
}

/// Sets `draining` on `SIGUSR1` (unix only; elsewhere a server drains by its idle limit).
fn listen_for_drain(draining: Arc<AtomicBool>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut usr1) = signal(SignalKind::user_defined1()) {
            tokio::spawn(async move {
                while usr1.recv().await.is_some() {
                    draining.store(true, Ordering::Relaxed);
                }
            });
        }
    }
    #[cfg(not(unix))]
    drop(draining);
}

/// The device and inode of the socket at `path`: what tells the socket this server bound from
/// one another server bound at the same path later.
fn socket_id(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path)
            .ok()
            .map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::symlink_metadata(path).ok().map(|_| (0, 0))
    }
}

/// Closes the descriptor through which this server holds the start lock of the client that
/// started it (`--start-lock-fd`): it listens now, so clients waiting on the lock attach.
pub(super) fn release_start_lock(fd: i32) {
    #[cfg(unix)]
    // SAFETY: the descriptor was handed to this process for this purpose alone (the
    // command line names it); nothing else in the process uses it.
    unsafe {
        libc::close(fd);
    }
    #[cfg(not(unix))]
    let _ = fd;
}

/// The pid file of a listening server: written once it listens, removed when it stops (only
/// if it is still this process's).
pub(super) struct PidFile {
    path: PathBuf,
}

impl PidFile {
    /// Writes the server's [`satori_protocol::daemon::PidFile`] to `path` (through a temporary
    /// file and a rename, so a reader never sees half of it; mode 0600).
    pub(super) fn write(path: &Path, address: &str) -> anyhow::Result<PidFile> {
        let executable = std::env::current_exe().ok();
        let body = satori_protocol::daemon::PidFile {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            executable_stamp: executable
                .as_deref()
                .and_then(satori_protocol::daemon::executable_stamp),
            executable,
            address: address.to_owned(),
            started_at: satori_core::iso8601(satori_core::now_ms()),
        };
        let body = serde_json::to_string(&body)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = options.open(&tmp).and_then(|mut f| {
            use std::io::Write;
            f.write_all(body.as_bytes())?;
            f.sync_all()
        });
        written
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                anyhow::anyhow!("--pid-file {}: {e}", path.display())
            })?;
        Ok(PidFile {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let ours = std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice::<satori_protocol::daemon::PidFile>(&b).ok())
            .is_some_and(|f| f.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
