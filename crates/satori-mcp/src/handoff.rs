//! Builds that outlive their session. A client may start `manage_index create` and close at
//! once (the Inspector CLI and other one-shot clients do: they close stdin, then signal the
//! server and kill it a few seconds later). When a session ends with builds running, each is
//! handed to a detached `satori` process started with [`FINISH_BUILD`] and the codebase root:
//! it takes the build over once this process has let go of it, runs it to the end, records it
//! in the state file like any build (so `status` from any process shows its progress), and
//! exits. It is its own process group with no standard streams, so nothing the client does to
//! the server's process, its group or its pipes reaches it; and it is bounded: a build still
//! running after [`BUILD_LIMIT`] is stopped, and the process exits soon after in any case.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::config::Config;

/// The argument that makes `satori` finish a handed-off build instead of serving MCP.
pub const FINISH_BUILD: &str = "--finish-build";

/// The longest a handed-off build may run.
pub const BUILD_LIMIT: Duration = Duration::from_secs(60 * 60);

/// How long a stopped build may take to stop, past [`BUILD_LIMIT`], before its process
/// exits anyway.
const STOP_GRACE: Duration = Duration::from_secs(60);

/// How long the finishing process waits for the session's process to let go of the build
/// (within the engine's handoff marker's lifetime).
const TAKEOVER_WAIT: Duration = Duration::from_secs(25);

/// Starts the detached process that finishes the build of `root`.
pub(crate) fn spawn(exe: &Path, root: &Path) -> std::io::Result<()> {
    let mut cmd = Command::new(exe);
    cmd.arg(FINISH_BUILD)
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        const DETACHED_PROCESS: u32 = 0x0000_0008;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        cmd.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
    }
    // Never waited for: it outlives this process by design.
    cmd.spawn().map(drop)
}

/// The finishing process: takes over the build of `root` and runs it.
pub(crate) fn finish(config: Config, root: &Path) -> ExitCode {
    let engine = match config.engine() {
        Ok(e) => e,
        Err(_) => return ExitCode::from(2),
    };
    let deadline = Instant::now() + TAKEOVER_WAIT;
    let job = loop {
        match engine.resume_index(root) {
            Ok(Some(job)) => break job,
            // Finished, failed or cleared before it could be stopped: nothing to do.
            Ok(None) => return ExitCode::SUCCESS,
            Err(satori_core::Error::Busy(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return ExitCode::from(1),
        }
    };
    let cancel = job.cancel_flag();
    let _ = std::thread::Builder::new()
        .name("satori-build-limit".into())
        .spawn(move || {
            std::thread::sleep(BUILD_LIMIT);
            cancel.store(true, Ordering::Relaxed);
            std::thread::sleep(STOP_GRACE);
            std::process::exit(1);
        });
    match job.run(|_| {}) {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}
