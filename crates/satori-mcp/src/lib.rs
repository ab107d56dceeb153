//! The Satori MCP server: the engine of `satori-core` behind the tool contract of
//! `satori-protocol`, over stdio.
//!
//! Start-up order matters: [`run_main`] reads the configuration and installs the stdout guard
//! before the async runtime (or anything else that could start a thread or print) exists.

#![deny(clippy::print_stdout)]
// Handlers return a finished `CallToolResult` as their early-exit value; it is built once
// per call, so its size does not matter.
#![allow(clippy::result_large_err)]

mod changed;
pub mod config;
mod freshness;
pub mod guard;
mod handler;
mod handoff;
mod jobs;
mod logging;
mod memory;
mod roots;
mod service;
mod session;
mod syncs;
mod to_proto;
mod tools;
pub mod transport;
mod watch;

use std::io::Write;
use std::process::ExitCode;

pub use config::{Config, RunMode};
pub use service::{Attendance, LastToLeave, Service};
pub use session::Session;
pub use watch::Background;

/// How long a sync may go on after the client closed its input: a client that wrote its
/// requests and closed stdin still gets answers that are ready by then; after it, running
/// syncs are cancelled (the searches waiting for them answer from the published index).
pub const EOF_SYNC_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// How long shutting down waits for cancelled syncs to reach a safe point.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Entry point of the `satori` binary.
pub fn run_main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "satori: {e}");
            return ExitCode::from(2);
        }
    };
    // A detached process finishing a build handed off by a session that ended (`handoff`):
    // it speaks no protocol, so no guard and no runtime.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == handoff::FINISH_BUILD) {
        return match args.next() {
            Some(root) => handoff::finish(config, std::path::Path::new(&root)),
            None => ExitCode::from(2),
        };
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let shared_server = match transport::http::parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "satori: {e}");
            return ExitCode::from(2);
        }
    };
    let protocol_out = match guard::install(config.guard) {
        Ok(out) => out,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "satori: cannot install the stdout guard: {e}"
            );
            return ExitCode::from(3);
        }
    };
    memory::bound_arenas();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("satori-worker")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "satori: cannot start the runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let result = match shared_server {
        Some(opts) => runtime.block_on(serve_shared(config, opts)),
        None => runtime.block_on(serve_stdio(config, protocol_out)),
    };
    // Background index builds must not keep a finished session alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    guard::finish();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "satori: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Serves MCP over Streamable HTTP to any number of clients until a signal asks the server
/// to stop (see [`transport::http`]).
async fn serve_shared(config: Config, opts: transport::http::HttpOptions) -> anyhow::Result<()> {
    let service = Service::new(config).map_err(anyhow::Error::msg)?;
    if let Ok(exe) = std::env::current_exe() {
        service.hand_off_builds_to(exe);
    }
    service.log().install_for_process();
    transport::http::serve(service, opts, shutdown_signal(), |at| {
        let _ = writeln!(std::io::stderr(), "satori: serving MCP at {at}");
    })
    .await
}

/// Serves MCP on stdin and the guarded protocol output until the client disconnects or a
/// signal asks the server to stop.
async fn serve_stdio(config: Config, out: guard::ProtocolOut) -> anyhow::Result<()> {
    let service = Service::new(config).map_err(anyhow::Error::msg)?;
    // Builds still running when the client leaves are finished by a detached process.
    if let Ok(exe) = std::env::current_exe() {
        service.hand_off_builds_to(exe);
    }
    // Stray stdout bytes are reported to this session's client too, once it sets a level.
    service.log().install_for_process();
    // The process ends with the session: freeing the open indexes (a large codebase's chunk
    // table is hundreds of thousands of small allocations) would only delay the exit that a
    // `satori-cli` call waits for, so the engine is kept until the process is gone.
    std::mem::forget(service.engine());
    let session = Session::new(&service);
    let stdin = tokio::io::stdin();
    match out {
        guard::ProtocolOut::Guarded(file) => {
            serve_session(
                session,
                stdin,
                tokio::fs::File::from_std(file),
                shutdown_signal(),
            )
            .await
        }
        #[allow(clippy::disallowed_methods)] // The guard chose plain stdout for the protocol.
        guard::ProtocolOut::Stdout => {
            serve_session(session, stdin, tokio::io::stdout(), shutdown_signal()).await
        }
    }
}

/// One MCP session on the line framing over `read`/`write`, until the client disconnects or
/// `stop` resolves, with the service's background work (watcher, periodic re-check) running
/// while any of its sessions is open. When the client closes its input and no other session
/// is open, syncs in flight get [`EOF_SYNC_GRACE`] to finish. When the last session ends,
/// index builds still running are handed to detached processes that finish them (when the
/// service was told to with [`Service::hand_off_builds_to`]), the background work stops, and
/// every sync still running is cancelled and given [`SHUTDOWN_GRACE`] to stop at a safe
/// point, so the published index stays consistent.
pub async fn serve_session<R, W>(
    session: Session,
    read: R,
    write: W,
    stop: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    use rmcp::ServiceExt;
    let service = std::sync::Arc::clone(session.service());
    let attendance = service.attend();
    let eof = std::sync::Arc::new(tokio::sync::Notify::new());
    let seen_eof = std::sync::Arc::clone(&eof);
    let transport =
        transport::LineTransport::new(read, write).on_eof(move || seen_eof.notify_one());
    tokio::pin!(stop);
    // A stop during the handshake ends the session too.
    let running = tokio::select! {
        r = session.serve(transport) => r?,
        _ = &mut stop => {
            if let Some(last) = attendance.leave() {
                drop(last.background);
            }
            return Ok(());
        }
    };
    let after_eof = {
        let service = std::sync::Arc::clone(&service);
        tokio::spawn(async move {
            eof.notified().await;
            tokio::time::sleep(EOF_SYNC_GRACE).await;
            // Syncs another session waits for are not this client's to end.
            if service.sessions() <= 1 {
                service.cancel_syncs();
            }
        })
    };
    let result = tokio::select! {
        r = running.waiting() => r.map(|_| ()).map_err(anyhow::Error::from),
        _ = &mut stop => Ok(()),
    };
    after_eof.abort();
    let Some(last) = attendance.leave() else {
        return result;
    };
    // First, while the client may still be waiting for the process to exit before it
    // signals or kills it.
    let handed_off = service.hand_off_builds();
    drop(last.background);
    service.shutdown(SHUTDOWN_GRACE).await;
    if handed_off {
        // The stopped builds remove their unfinished generations.
        service.settle_builds(SHUTDOWN_GRACE).await;
    }
    result
}

/// Resolves on SIGINT or SIGTERM, so a long-running server exits cleanly. The handlers are
/// installed when this is called, not when the future is first polled: a signal during the
/// handshake must not kill the process the default way.
fn shutdown_signal() -> impl Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            let (Ok(mut term), Ok(mut int)) = (term, int) else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
