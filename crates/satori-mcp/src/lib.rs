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
mod ctx;
pub mod guard;
mod jobs;
mod logging;
pub mod server;
mod to_proto;
mod tools;
pub mod transport;

use std::io::Write;
use std::process::ExitCode;

pub use config::{Config, RunMode};
pub use server::SatoriServer;

/// Entry point of the `satori` binary.
pub fn run_main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
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
    let result = runtime.block_on(serve_stdio(config, protocol_out));
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

/// Serves MCP on stdin and the guarded protocol output until the client disconnects.
async fn serve_stdio(config: Config, out: guard::ProtocolOut) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    use transport::LineTransport;
    let server = SatoriServer::new(config).map_err(anyhow::Error::msg)?;
    // Stray stdout bytes are reported to this session's client too, once it sets a level.
    server.log().install_for_process();
    let stdin = tokio::io::stdin();
    let running = match out {
        guard::ProtocolOut::Guarded(file) => {
            server
                .serve(LineTransport::new(stdin, tokio::fs::File::from_std(file)))
                .await?
        }
        #[allow(clippy::disallowed_methods)] // The guard chose plain stdout for the protocol.
        guard::ProtocolOut::Stdout => {
            server
                .serve(LineTransport::new(stdin, tokio::io::stdout()))
                .await?
        }
    };
    tokio::select! {
        r = running.waiting() => { r?; }
        _ = shutdown_signal() => {}
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM, so a long-running server exits cleanly.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
