//! `satori-cli daemon status|stop`: the per-user servers of this home, read from their pid
//! files and sockets without starting anything.

use std::time::Duration;

use serde_json::{Value, json};

use crate::args::Globals;
use crate::exit::ErrorCode;
use crate::report::{Failure, Report};
use satori_client::daemon::{self, Daemon};

/// How long `daemon stop` waits for each server to hand off its builds and exit.
const STOP_PATIENCE: Duration = Duration::from_secs(30);

/// The per-user server this caller would attach to, or why none.
fn current(globals: &Globals) -> Result<Result<Daemon, String>, Failure> {
    let server_bin = match satori_client::resolve_server_bin() {
        Ok(bin) => bin,
        Err(e) => return Ok(Err(e.to_string())),
    };
    match Daemon::from_env(&server_bin, globals.no_daemon) {
        Err(message) => Err(Failure::new(ErrorCode::Usage, message)),
        Ok(Ok(d)) => Ok(Ok(d)),
        Ok(Err(off)) => Ok(Err(off.to_string())),
    }
}

fn run_dir() -> std::path::PathBuf {
    daemon::run_dir_of(&satori_protocol::env::home_dir(|name| {
        std::env::var_os(name)
    }))
}

/// `daemon status`: every per-user server of this home, and which one this caller's
/// executable and environment would attach to.
pub fn status(globals: &Globals) -> Report {
    let current = match current(globals) {
        Ok(c) => c,
        Err(failure) => return Report::failure(failure),
    };
    let dir = run_dir();
    let servers = daemon::servers(&dir);
    let current = match &current {
        Ok(d) => {
            let found = servers.iter().find(|s| s.id == d.id());
            json!({
                "id": d.id(),
                "socket": d.socket(),
                "running": found.is_some_and(|s| s.running),
                "pid": found.map(|s| s.file.pid),
                "log": d.log_file(),
            })
        }
        Err(why) => json!({ "off": why }),
    };
    Report::success(json!({
        "runDir": dir,
        "current": current,
        "servers": servers,
    }))
}

/// `daemon stop`: ends every per-user server of this home. A server that is building hands
/// the build to a detached process before it exits, so the build goes on.
pub fn stop() -> Report {
    let dir = run_dir();
    let results = daemon::stop_all(&dir, STOP_PATIENCE);
    let stopped: Vec<Value> = results
        .iter()
        .map(|(s, done)| json!({ "id": s.id, "pid": s.file.pid, "stopped": done }))
        .collect();
    if let Some((s, _)) = results.iter().find(|(_, done)| !done) {
        return Report::failure(Failure::new(
            ErrorCode::ProtocolFailure,
            format!(
                "the per-user server {} (pid {}) did not exit within {} s; its log: {}",
                s.id,
                s.file.pid,
                STOP_PATIENCE.as_secs(),
                s.log.display()
            ),
        ));
    }
    Report::success(json!({ "runDir": dir, "stopped": stopped }))
}
