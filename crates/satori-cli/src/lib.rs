//! `satori-cli`: call the Satori MCP tools from a shell.
//!
//! The CLI is an MCP client of the `satori` server (spawned as a child with
//! `SATORI_RUN_MODE=cli`); it never implements tool logic itself. Its contract
//! for scripts: stdout is exactly one JSON document, stderr is for people and
//! carries stable error tokens, and the exit status says what kind of outcome
//! it was (see [`exit`]).

mod args;
mod commands;
mod daemon_cmd;
pub mod exit;
pub mod help;
mod output;
mod progress;
mod report;
mod wrapper;

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use commands::Prepared;
use exit::ErrorCode;
use report::{Failure, Report};

/// Run the CLI with the process arguments (program name first); returns the
/// exit code after writing the one stdout document.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let report = run_to_report(args.into_iter().skip(1).collect());
    output::emit(&report)
}

fn run_to_report(args: Vec<OsString>) -> Report {
    let args = match args
        .into_iter()
        .map(|a| a.into_string())
        .collect::<Result<Vec<String>, OsString>>()
    {
        Ok(args) => args,
        Err(bad) => {
            return Report::failure(Failure::new(
                ErrorCode::Usage,
                format!("argument is not valid UTF-8: {}", bad.to_string_lossy()),
            ));
        }
    };
    let invocation = match args::parse(&args) {
        Ok(invocation) => invocation,
        Err(failure) => return Report::failure(failure),
    };
    let remote = match commands::prepare(&invocation) {
        Prepared::Done(report) => return report,
        Prepared::Remote(remote) => remote,
    };

    // One thread is plenty for one child and one request at a time, and it
    // keeps the spawning thread alive for the child's whole life (see the
    // parent-death signal in satori-client).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return Report::failure(Failure::new(
                ErrorCode::ProtocolFailure,
                format!("cannot start the async runtime: {e}"),
            ));
        }
    };
    let globals = invocation.globals;
    let report = runtime.block_on(async {
        tokio::select! {
            report = commands::execute(&globals, remote) => report,
            // Dropping the command future drops the client, which kills and reaps the child.
            signal = interrupted() => Report::failure(Failure::new(
                ErrorCode::Interrupted,
                format!("interrupted by {signal}"),
            )),
        }
    });
    // Nothing we still care about runs on the runtime; do not let a stuck
    // blocking write (e.g. to a stalled stderr) hold the process open.
    runtime.shutdown_timeout(Duration::from_millis(100));
    report
}

/// Resolves when SIGINT or SIGTERM arrives; never resolves if the handlers
/// cannot be installed (the default behaviour then applies).
async fn interrupted() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        }
    }
}
